package system

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chorus-robotics/chorus/runtime/bus/bustest"
	"github.com/chorus-robotics/chorus/runtime/protocol"
)

// The reliability defects of issue 9, reproduced from outside: separate
// chorusd processes on Mosquitto with a password file and the ACL Chorus
// renders, driven only with mosquitto_pub and mosquitto_sub.

// Defect 1: the same grant delivered again (as the broker does after a
// reconnect) is spoken once.
func TestOutsideRepeatedGrantIsSpokenOnce(t *testing.T) {
	o := newOutside(t, bustest.Options{})
	w := o.watch("chorus/rooms/lab/#")
	o.room(w)
	id := o.say("Hello robots, how are you?")
	g := w.waitFor(t, 10*time.Second, "the first grant", func(l line) bool {
		return l.topic == "chorus/rooms/lab/turns" && strings.Contains(l.payload, id)
	})
	var grant protocol.TurnGrant
	json.Unmarshal([]byte(g.payload), &grant)
	w.waitFor(t, 10*time.Second, "the answer", func(l line) bool {
		return l.topic == "chorus/rooms/lab/messages/"+grant.SpeakerID()
	})
	for range 3 { // the same grant again, after it was answered
		o.pub("floor", "chorus/rooms/lab/turns", g.payload, false)
		time.Sleep(100 * time.Millisecond)
	}
	w.terminal(t, 40*time.Second)
	time.Sleep(300 * time.Millisecond)
	o.spokeOncePerGrant(w)
}

// Defect 2: with Mosquitto's queues kept short, a burst on the room's
// topics makes the broker drop messages to the robots — grants, States,
// answers. The room recovers and still runs to its end, nobody speaking
// twice.
func TestOutsideBurstThatDropsMessagesDoesNotStopTheRoom(t *testing.T) {
	o := newOutside(t, bustest.Options{MosquittoConf: []string{"max_queued_messages 5", "max_inflight_messages 1", "log_type notice"}})
	o.brainDelay = "200ms"
	w := o.watch("chorus/rooms/lab/turns", "chorus/rooms/lab/messages/ann", "chorus/rooms/lab/messages/ben",
		"chorus/rooms/lab/messages/cat", "chorus/rooms/lab/presence/+", "chorus/rooms/lab/floor/leader")
	o.room(w)
	o.say("Hello robots, how are you?") // then a chatty client starts
	flood := o.pubLines("mallory", "chorus/rooms/lab/messages/mallory")
	junk := `{"jsonrpc":"2.0","method":"message.send","params":{"pad":"` + strings.Repeat("x", 512) + `"` // malformed
	stop := make(chan struct{})
	flooded := make(chan struct{})
	go func() { // the chatty client keeps at it for the whole conversation
		defer close(flooded)
		for {
			select {
			case <-stop:
				return
			default:
			}
			for range 300 {
				flood.send(junk)
			}
			// Bursts, not a wall: each overflows Mosquitto's queue of 5 and
			// drops messages, and between them the room's resends get through
			// (a flood that never pauses drops every resend on a loaded machine).
			time.Sleep(time.Second)
		}
	}()
	defer func() { close(stop); <-flooded }()
	defer w.dumpOnFailure(t)
	w.terminal(t, 60*time.Second)
	if !strings.Contains(o.mq.Log(), "Outgoing messages are being dropped") {
		t.Fatalf("the burst made Mosquitto drop nothing; the test proves nothing:\n%s", o.mq.Log())
	}
	time.Sleep(300 * time.Millisecond)
	o.spokeOncePerGrant(w)
}

// Defect 2, across a broker restart: the conversation in progress resumes
// within 5 s and runs to its end; no message is decided twice and nobody
// speaks twice.
func TestOutsideBrokerRestartMidConversation(t *testing.T) {
	o := newOutside(t, bustest.Options{})
	o.brainDelay = "400ms" // the outages fall while the companions think, too
	w := o.watch("chorus/rooms/lab/#")
	o.room(w)
	o.say("Hello robots, how are you?")
	defer w.dumpOnFailure(t)
	for i, after := range []int{2, 4} { // twice, at different points of the conversation
		w.waitFor(t, 20*time.Second, "more companion messages", func(l line) bool {
			return len(w.companionMessages()) >= after
		})
		o.mq.Stop()
		time.Sleep(2500 * time.Millisecond) // longer than any publish timeout of old
		o.mq.Restart(t)
		back := time.Now()
		before := len(w.companionMessages())
		w.waitFor(t, 15*time.Second, "a companion message after the restart", func(l line) bool {
			return len(w.companionMessages()) > before
		})
		if d := time.Since(back); d > 5*time.Second {
			t.Errorf("restart %d: the conversation resumed %v after the broker came back, want within 5 s", i+1, d)
		}
	}
	w.terminal(t, 40*time.Second)
	time.Sleep(300 * time.Millisecond)
	o.spokeOncePerFloorGrant(w, "floor-box")
}

// Defect 3: 1,000 malformed queries from a logged-in client do not wedge a
// device; a valid vision query right after answers within 100 ms.
func TestOutsideMalformedQueryBurstDoesNotWedgeTheDevice(t *testing.T) {
	o := newOutside(t, bustest.Options{})
	// Only the room's members read a device's results (camera frames).
	w := o.watchAs("ben", "chorus/devices/dev-ann/results", "chorus/rooms/lab/presence/+")
	o.companion("ann", false)
	w.waitOnline(t, "ann")
	bad := o.pubLines("mallory", "chorus/devices/dev-ann/queries")
	for i := range 1000 {
		bad.send(fmt.Sprintf(`{"jsonrpc":"2.0","method":"query.send","id":"bad-%d","params":{"from":"mallory","type":""}}`, i))
	}
	w.waitFor(t, 10*time.Second, "an error reply to a malformed query", func(l line) bool {
		return strings.Contains(l.payload, `"bad-`)
	})
	good := o.pubLines("user", "chorus/devices/dev-ann/queries")
	time.Sleep(500 * time.Millisecond) // the burst is over, the good client connected
	for i := range 5 {
		qid := fmt.Sprintf("good-%d", i)
		start := time.Now()
		good.send(fmt.Sprintf(`{"jsonrpc":"2.0","method":"query.send","id":%q,"params":{"from":"user","type":"vision"}}`, qid))
		l := w.waitFor(t, 5*time.Second, "the vision result", func(l line) bool { return strings.Contains(l.payload, qid) })
		if !strings.Contains(l.payload, `"success":true`) {
			t.Fatalf("vision result %.300s", l.payload)
		}
		if d := l.at.Sub(start); d > 100*time.Millisecond {
			t.Errorf("vision %d answered in %v after 1,000 malformed queries, want < 100 ms", i, d)
		}
	}
}

// Defect 4: a robot whose device id equals its companion id stays healthy
// after it has spoken, twice.
func TestOutsideHealthyAfterSpeakingWithDeviceIDEqualToCompanionID(t *testing.T) {
	o := newOutside(t, bustest.Options{})
	w := o.watch("chorus/rooms/lab/#")
	o.floor("floor-box")
	o.companion("ann", true)
	w.waitOnline(t, "ann")
	w.waitFor(t, 5*time.Second, "the floor's claim", func(l line) bool {
		return l.topic == "chorus/rooms/lab/floor/leader" && strings.Contains(l.payload, `"online":true`)
	})
	for i := range 2 {
		before := len(w.companionMessages())
		o.say("Ann, what do you think?")
		w.waitFor(t, 10*time.Second, "ann's answer", func(line) bool { return len(w.companionMessages()) > before })
		resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/healthz", o.ports["ann"]))
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Fatalf("after utterance %d: /healthz %d %s", i+1, resp.StatusCode, body)
		}
	}
	if n := o.spoken("ann"); n != 2 {
		t.Fatalf("ann spoke %d times, want 2", n)
	}
}

// Defect 5: a logged-in client that announces its own presence and votes
// itself selected is not a voter, and an identity that is no valid name
// does not break the grants.
func TestOutsideLoggedInClientCannotVote(t *testing.T) {
	o := newOutside(t, bustest.Options{})
	w := o.watch("chorus/rooms/lab/#")
	o.room(w)
	online := `{"online":true,"device":"x","since":"2026-01-01T00:00:00Z"}`
	o.pub("mallory", "chorus/rooms/lab/presence/mallory", online, true)
	o.pub("a b", "chorus/rooms/lab/presence/a b", online, true)
	time.Sleep(300 * time.Millisecond)
	id := o.say("Hello robots, how are you?")
	vote := fmt.Sprintf(`{"jsonrpc":"2.0","method":"state.send","params":{"from":"mallory","messageId":%q,"state":"speak","importance":10,"selected":true}}`, id)
	o.pub("mallory", "chorus/rooms/lab/states/mallory", vote, false)
	l := w.waitFor(t, 10*time.Second, "the grant", func(l line) bool {
		return l.topic == "chorus/rooms/lab/turns" && strings.Contains(l.payload, id)
	})
	g, err := protocol.DecodeTurnGrant([]byte(l.payload), 0)
	if err != nil {
		t.Fatalf("grant undecodable: %v: %s", err, l.payload)
	}
	if g.SpeakerID() == "mallory" || g.DecidedBy != protocol.DecidedAllVoted || len(g.Votes) != 3 || len(g.Missing) != 0 {
		t.Fatalf("grant %+v: want one of the three companions, decided when they had voted", g)
	}
	w.terminal(t, 40*time.Second)
}

// Defect 6: with an ACL built by hand that lacks floor/leader (as the protocol's
// topic table once did), two floors must never both grant: neither can
// claim the room, both say so loudly, nobody is granted twice.
func TestOutsideFloorsThatCannotClaimNeverBothGrant(t *testing.T) {
	o := newOutside(t, bustest.Options{MosquittoACL: `pattern read chorus/#
pattern write chorus/rooms/+/messages/%u
pattern write chorus/devices/%u/results
pattern write chorus/devices/%u/probe
pattern write chorus/devices/+/queries
user ann
topic write chorus/rooms/lab/presence/ann
topic write chorus/rooms/lab/states/ann
user ben
topic write chorus/rooms/lab/presence/ben
topic write chorus/rooms/lab/states/ben
user floor
topic write chorus/rooms/+/turns
`})
	w := o.watch("chorus/rooms/lab/#")
	f1, f2 := o.floor("floor-box"), o.floor("floor-box-2")
	o.companion("ann", false)
	o.companion("ben", false)
	w.waitOnline(t, "ann", "ben")
	time.Sleep(3 * time.Second) // join wait + claim check
	id := o.say("Hello robots?")
	time.Sleep(4 * time.Second)
	for _, g := range w.grants() {
		if g.MessageID == id {
			t.Fatalf("a floor that never read its claim back granted %+v", g)
		}
	}
	for _, f := range []*proc{f1, f2} {
		if !strings.Contains(f.log.String(), "CANNOT CLAIM THE ROOM") {
			t.Errorf("%s did not say loudly that it cannot claim the room:\n%s", f.name, f.log.String())
		}
	}
}

// Defect 9: after the broker restarts, a robot's presence says since when
// it is back, not when it first started; and a config value of the wrong
// type names its field without hiding the file's other errors.
func TestOutsidePresenceSinceAfterRestartAndConfigTypeErrors(t *testing.T) {
	o := newOutside(t, bustest.Options{})
	w := o.watch("chorus/rooms/lab/presence/ann")
	o.companion("ann", false)
	first := w.waitFor(t, 10*time.Second, "ann online", func(l line) bool { return strings.Contains(l.payload, `"online":true`) })
	time.Sleep(50 * time.Millisecond)
	o.mq.Restart(t)
	again := w.waitFor(t, 15*time.Second, "ann online again", func(l line) bool {
		return l.at.After(first.at) && strings.Contains(l.payload, `"online":true`)
	})
	var p1, p2 protocol.Presence
	json.Unmarshal([]byte(first.payload), &p1)
	json.Unmarshal([]byte(again.payload), &p2)
	if !p2.Since.After(p1.Since) {
		t.Fatalf("presence since %v after the restart, %v before", p2.Since, p1.Since)
	}

	cfg := filepath.Join(o.dir, "bad.yaml")
	os.WriteFile(cfg, []byte(`version: 1
device: {id: dev1}
room: {name: lab, members: [k], vote_timeout: soon}
mqtt: {broker: "tcp://127.0.0.1:1883"}
log: {level: loud}
`), 0o644)
	out, err := exec.Command(o.chorusd, "--check-config", cfg).CombinedOutput()
	if err == nil {
		t.Fatal("--check-config accepted a bad config")
	}
	for _, want := range []string{`room.vote_timeout: must be a duration such as 3s or 500ms, got "soon"`, "log.level:"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("--check-config output lacks %q:\n%s", want, out)
		}
	}
}

// companionMessages counts the distinct messages of the room's companions.
func (w *watcher) companionMessages() map[string]bool {
	out := map[string]bool{}
	for _, m := range w.messages() {
		if m.Params.From != "user" && m.Params.From != "mallory" {
			out[m.Params.ID] = true
		}
	}
	return out
}

// lines is a mosquitto_pub -l that publishes each line written to it.
type lines struct {
	in io.WriteCloser
}

func (l lines) send(s string) { io.WriteString(l.in, s+"\n") }

// pubLines starts mosquitto_pub -l as user on topic.
func (o *outside) pubLines(user, topic string) lines {
	o.t.Helper()
	cmd := exec.Command("mosquitto_pub", "-h", "127.0.0.1", "-p", strconv.Itoa(o.mq.Port()), "-u", user, "-P", password(user),
		"-q", "1", "-t", topic, "-l")
	in, err := cmd.StdinPipe()
	if err != nil {
		o.t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		o.t.Fatal(err)
	}
	o.t.Cleanup(func() { in.Close(); cmd.Process.Kill(); cmd.Wait() })
	time.Sleep(100 * time.Millisecond) // connected
	return lines{in: in}
}

// Issue 27, item 1: Mosquitto stopped (SIGTERM, no persistence) while the
// room votes on a person's Message, and started again 2 s later. Whatever
// the floor decided, or could not hear, while it was away, the Message is
// answered after the broker is back: the room never waits for a person to
// speak again.
func TestOutsideBrokerRestartDuringAVoteNeverStallsTheRoom(t *testing.T) {
	o := newOutside(t, bustest.Options{})
	o.brainDelay = "500ms"
	o.floorLog = "debug"
	w := o.watch("chorus/rooms/lab/#")
	procs := o.room(w)
	defer w.dumpOnFailure(t)
	// The outage falls at several points of the vote: while the companions
	// think, as their States leave, as the floor decides.
	for i, offset := range []time.Duration{150 * time.Millisecond, 450 * time.Millisecond, 550 * time.Millisecond, 650 * time.Millisecond} {
		id := o.say(fmt.Sprintf("Hello robots, question %d?", i+1))
		w.waitFor(t, 5*time.Second, "the person's message", func(l line) bool { return strings.Contains(l.payload, id) })
		time.Sleep(offset)
		o.mq.Terminate()
		time.Sleep(2 * time.Second)
		o.mq.Restart(t)
		back := time.Now()
		w.waitFor(t, 15*time.Second, fmt.Sprintf("a companion's answer after the restart (outage %d, %v into the vote)", i+1, offset), func(l line) bool {
			if l.at.Before(back) || !strings.HasPrefix(l.topic, "chorus/rooms/lab/messages/") {
				return false
			}
			m, err := protocol.DecodeMessage([]byte(l.payload), 0)
			return err == nil && m.Params.From != "user"
		})
		w.terminalAfter(t, 40*time.Second, back)
	}
	time.Sleep(300 * time.Millisecond)
	o.spokeOncePerFloorGrant(w, "floor-box")
	// Every decision is in the floor's log at debug, with why it closed.
	if log := procs["floor"].log.String(); !strings.Contains(log, `msg="floor: decided"`) || !strings.Contains(log, "closed_by=") {
		t.Errorf("the floor logged none of its decisions at debug:\n%s", log)
	}
}
