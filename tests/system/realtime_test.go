package system

import (
	"encoding/json"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/chorus-robotics/chorus/runtime/bus/bustest"
	"github.com/chorus-robotics/chorus/runtime/protocol"
	"github.com/chorus-robotics/chorus/runtime/topic"
)

// The realtime suite (issue 12) runs a realtime room of five chorusd
// companions and a floor on Mosquitto with the rendered ACL.

const realtimeRoom = `, mode: realtime, realtime: {phase_timeout: 60s, silence_timeout: 20s, rate_limit: 300ms, speak_cooldown: 300ms, poll_interval: 200ms, max_count: {per_agent: 4, per_day: 40}, whisper: {pair: [ann, ben]}}`

// phases returns the phase events seen on topic, in order.
func (w *watcher) phases(topic string) []protocol.Phase {
	lines, _ := w.snapshot()
	var out []protocol.Phase
	for _, l := range lines {
		if l.topic != topic {
			continue
		}
		var p protocol.Phase
		if json.Unmarshal([]byte(l.payload), &p) == nil {
			out = append(out, p)
		}
	}
	return out
}

// broadcasts returns the accepted utterances the floor broadcast on
// filter's messages (their metadata carries phase, idx and speaker).
func (w *watcher) broadcasts(prefix string) []protocol.Message {
	lines, _ := w.snapshot()
	var out []protocol.Message
	for _, l := range lines {
		if !strings.HasPrefix(l.topic, prefix) {
			continue
		}
		var m protocol.Message
		if json.Unmarshal([]byte(l.payload), &m) == nil && m.Params.Metadata[protocol.MetaIdx] != nil {
			out = append(out, m)
		}
	}
	return out
}

func realtimeOutside(t *testing.T) *outside {
	scheme := topic.New("").WithWhisper("lab", "pair", []string{"ann", "ben"})
	o := newOutside(t, bustest.Options{Rosters: fiveRoster, Scheme: scheme})
	o.roomExtra = realtimeRoom
	return o
}

// One of five companions is killed (kill -9) mid-phase: its Will takes it
// out of the count, and the phase still ends on all-Over of the others.
// Accepted utterances are numbered 1, 2, 3, ... with no gap or repeat.
func TestRealtimeRoomOneKilledMidPhase(t *testing.T) {
	o := realtimeOutside(t)
	w := o.watch("chorus/rooms/lab/#")
	defer w.dumpOnFailure(t)
	procs := o.room(w)
	time.Sleep(300 * time.Millisecond)
	o.say("Hello, all five of you! What shall we talk about?")
	start := w.waitFor(t, 10*time.Second, "the phase start", func(l line) bool {
		return l.topic == "chorus/rooms/lab/phase" && strings.Contains(l.payload, `"event":"start"`)
	})
	w.waitFor(t, 20*time.Second, "two accepted utterances", func(line) bool { return len(w.broadcasts("chorus/rooms/lab/messages/")) >= 2 })
	procs["eve"].cmd.Process.Signal(syscall.SIGKILL)
	killed := time.Now()
	w.waitFor(t, 10*time.Second, "eve's Will", func(l line) bool {
		return l.topic == "chorus/rooms/lab/presence/eve" && strings.Contains(l.payload, `"online":false`)
	})
	end := w.waitFor(t, 60*time.Second, "the phase end", func(l line) bool {
		return l.topic == "chorus/rooms/lab/phase" && strings.Contains(l.payload, `"event":"end"`)
	})
	var p protocol.Phase
	json.Unmarshal([]byte(end.payload), &p)
	t.Logf("realtime room: phase %s ran %v, ended %v after eve was killed: %s", p.Phase, end.at.Sub(start.at).Round(time.Millisecond),
		end.at.Sub(killed).Round(time.Millisecond), p.Reason)
	if p.Reason != protocol.EndAllOver {
		t.Fatalf("the phase ended with %q, want %q", p.Reason, protocol.EndAllOver)
	}
	bs := w.broadcasts("chorus/rooms/lab/messages/")
	for i, m := range bs {
		idx, _ := m.Params.Metadata[protocol.MetaIdx].(float64)
		if int(idx) != i+1 || m.Params.Metadata[protocol.MetaPhase] != p.Phase {
			t.Fatalf("broadcast %d: metadata %v, want idx %d of phase %s", i, m.Params.Metadata, i+1, p.Phase)
		}
		if sp := m.Params.Metadata[protocol.MetaSpeaker]; sp == "eve" && w.lineOf(m.Params.ID).at.After(killed.Add(200*time.Millisecond)) {
			t.Fatalf("eve spoke after dying: %v", m.Params)
		}
	}
	t.Logf("realtime room: %d accepted utterances", len(bs))
}

// lineOf returns the line that carried message id.
func (w *watcher) lineOf(id string) line {
	lines, _ := w.snapshot()
	for _, l := range lines {
		if strings.Contains(l.payload, `"id":"`+id+`"`) {
			return l
		}
	}
	return line{}
}

// A whisper phase on channel pair (ann and ben): started by the operator
// with `chorus phase start -whisper pair`, it runs to all-Over of its two
// members; cat, not a member, subscribed to the whole room, receives none
// of its traffic, and its posts to the channel never reach the floor (the
// broker drops them) — nothing cat does shows up in the whisper.
func TestRealtimeWhisperPhase(t *testing.T) {
	o := realtimeOutside(t)
	w := o.watch("chorus/rooms/lab/#")
	defer w.dumpOnFailure(t)
	member := o.watchAs("ann", "chorus/rooms/lab/whisper/pair/#")
	outsider := o.watchAs("cat", "chorus/rooms/lab/#")
	o.room(w)
	time.Sleep(300 * time.Millisecond)

	cmd := exec.Command(o.chorus, "phase", "start", "-whisper", "pair", "-broker", o.url, "-room", "lab", "-as", "ann")
	cmd.Env = append(cmd.Environ(), "CHORUS_MQTT_PASSWORD="+password("ann"))
	if out, err := cmd.CombinedOutput(); err != nil || !strings.Contains(string(out), "whisper channel pair") {
		t.Fatalf("chorus phase start -whisper pair: %v\n%s", err, out)
	}
	start := member.waitFor(t, 5*time.Second, "the whisper phase start", func(l line) bool {
		return l.topic == "chorus/rooms/lab/whisper/pair/phase" && strings.Contains(l.payload, `"event":"start"`)
	})
	var ph protocol.Phase
	json.Unmarshal([]byte(start.payload), &ph)
	// cat posts into the whisper as if it were a member, twice: the
	// broker's ACL drops both.
	for i := range 2 {
		post, _ := json.Marshal(protocol.Post{From: "cat", Phase: ph.Phase, ID: "cat-post-" + strconv.Itoa(i), Text: "Let me in, I am cat."})
		o.pub("cat", "chorus/rooms/lab/whisper/pair/floor/in/cat", string(post), false)
	}
	end := member.waitFor(t, 60*time.Second, "the whisper phase end", func(l line) bool {
		return l.topic == "chorus/rooms/lab/whisper/pair/phase" && strings.Contains(l.payload, `"event":"end"`)
	})
	var p protocol.Phase
	json.Unmarshal([]byte(end.payload), &p)
	bs := member.broadcasts("chorus/rooms/lab/whisper/pair/messages/")
	t.Logf("whisper phase: %d accepted utterances, ended %s after %v", len(bs), p.Reason, end.at.Sub(start.at).Round(time.Millisecond))
	if p.Reason != protocol.EndAllOver || len(bs) == 0 {
		t.Fatalf("whisper phase ended %q with %d utterances, want all_over after some talk", p.Reason, len(bs))
	}
	for _, m := range bs {
		if sp := m.Params.Metadata[protocol.MetaSpeaker]; sp != "ann" && sp != "ben" {
			t.Fatalf("a whisper utterance from %v: %+v", sp, m.Params)
		}
	}
	for _, l := range member.snapshotLines() {
		if strings.Contains(l.payload, "Let me in") {
			t.Fatalf("cat's post reached the whisper channel: %s %s", l.topic, l.payload)
		}
	}
	time.Sleep(300 * time.Millisecond)
	for _, l := range outsider.snapshotLines() {
		if strings.Contains(l.topic, "/whisper/") {
			t.Fatalf("cat, not a member, received whisper traffic: %s %.200s", l.topic, l.payload)
		}
	}
	for _, l := range w.snapshotLines() {
		if strings.Contains(l.topic, "/whisper/") {
			t.Fatalf("the room's watcher, not a member, received whisper traffic: %s %.200s", l.topic, l.payload)
		}
	}
}

// snapshotLines returns the lines seen so far.
func (w *watcher) snapshotLines() []line {
	lines, _ := w.snapshot()
	return lines
}
