package system

import (
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/chorus-robotics/chorus/runtime/bus/bustest"
	"github.com/chorus-robotics/chorus/runtime/protocol"
)

// A broker away for longer than a few resends mid-vote does not end the
// conversation. On a NATS cluster a node loss took the floors' node and the
// MQTT session stream's leader; the other nodes refused connects for 7 s.
// The companions, connected elsewhere, sent their States again five times,
// 1 s apart, to a floor that could not hear; the floor, back, rested the
// room by deadline 1.5 s later with every vote owed, and the person's
// question was never answered. Here the floor's own way to Mosquitto goes
// down for 8 s while the companions think (its connection closed,
// connects refused, the companions still connected), and, for
// comparison, Mosquitto itself is killed for 8 s and started again.
func TestOutsideLongBrokerOutageMidVoteDoesNotEndTheConversation(t *testing.T) {
	for _, tc := range []struct {
		name string
		// down starts the outage and returns what ends it.
		down func(o *outside, floorWay *bustest.Proxy) (up func())
	}{
		{"the floor's connects refused", func(o *outside, p *bustest.Proxy) func() {
			p.Down()
			return p.Up
		}},
		{"mosquitto killed", func(o *outside, p *bustest.Proxy) func() {
			o.mq.Stop()
			return func() { o.mq.Restart(t) }
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := newOutside(t, bustest.Options{})
			o.brainDelay = "500ms"
			o.floorLog = "debug"
			floorWay := bustest.StartProxy(t, strings.TrimPrefix(o.url, "tcp://"))
			o.mqttFor = map[string]string{"floor-box": floorWay.URL()}
			w := o.watch("chorus/rooms/lab/#")
			procs := o.room(w)
			defer w.dumpOnFailure(t)
			id := o.say("Hello robots, what shall we talk about?")
			w.waitFor(t, 5*time.Second, "the person's message", func(l line) bool { return strings.Contains(l.payload, id) })
			time.Sleep(250 * time.Millisecond) // the companions think for 500 ms
			up := tc.down(o, floorWay)
			time.Sleep(8 * time.Second)
			up()
			back := time.Now()
			answered := o.answeredAfter(t, w, id, back, 3*time.Second+2*time.Second)
			noRestByDeadline(t, procs["floor"], id)
			w.terminalAfter(t, 40*time.Second, back)
			o.spokeOncePerFloorGrant(w, "floor-box")
			t.Logf("%s for 8 s mid-vote: the question was answered %v after the broker was reachable again; %d rests by deadline %q",
				tc.name, answered.Round(time.Millisecond), len(restsByDeadline(procs)), restsByDeadline(procs))
		})
	}
}

// answeredAfter waits for a companion's words after at: a grant of
// message id to a speaker, or a Message of a companion's. It fails t
// unless that comes within of at, and returns how long after at it came.
func (o *outside) answeredAfter(t *testing.T, w *watcher, id string, at time.Time, within time.Duration) time.Duration {
	t.Helper()
	l := w.waitFor(t, within+5*time.Second, "an answer to the question", func(l line) bool {
		if l.at.Before(at) {
			return false
		}
		if l.topic == "chorus/rooms/lab/turns" {
			g, err := protocol.DecodeTurnGrant([]byte(l.payload), 0)
			return err == nil && g.MessageID == id && g.SpeakerID() != ""
		}
		if strings.HasPrefix(l.topic, "chorus/rooms/lab/messages/") {
			m, err := protocol.DecodeMessage([]byte(l.payload), 0)
			return err == nil && m.Params.From != "user"
		}
		return false
	})
	if took := l.at.Sub(at); took > within {
		t.Errorf("the question was answered %v after the broker was back, want within %v", took, within)
	}
	return l.at.Sub(at)
}

// restByDeadline is a rest a floor decided by its deadline, with votes
// owed, and announced (a conversation ended by deadline).
var restByDeadline = regexp.MustCompile(`msg="floor: decided".* message=(\S+) speaker="" reason=rest closed_by=deadline.* again=false active=true`)

// noRestByDeadline fails t when floor p, leading, rested the room on
// message id by its deadline: a conversation ended by the outage.
func noRestByDeadline(t *testing.T, p *proc, id string) {
	t.Helper()
	for _, m := range restByDeadline.FindAllStringSubmatch(p.log.String(), -1) {
		if m[1] == id {
			t.Errorf("%s ended the conversation by deadline:\n%s", p.name, m[0])
		}
	}
}

// recoveries counts what took a rest by deadline back: words said once
// more by their author for robots that missed them, and the late votes on
// which the floors decided a rested message again.
func recoveries(procs map[string]*proc) (saidAgain, lateVotes int) {
	for name, p := range procs {
		l := p.log.String()
		saidAgain += strings.Count(l, "saying them once more for who did not hear them")
		if strings.HasPrefix(name, "floor") {
			lateVotes += strings.Count(l, "deciding it again")
		}
	}
	return saidAgain, lateVotes
}

// restsByDeadline is the rests the floors among procs decided by
// deadline and announced, as they logged them.
func restsByDeadline(procs map[string]*proc) []string {
	var out []string
	for _, f := range []string{"floor", "floor-box", "floor-box-2"} {
		if p, ok := procs[f]; ok {
			out = append(out, restByDeadline.FindAllString(p.log.String(), -1)...)
		}
	}
	return out
}
