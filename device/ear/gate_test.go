package ear

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/chorus-robotics/chorus/runtime/protocol"
	"github.com/chorus-robotics/chorus/runtime/room"
)

func TestGate(t *testing.T) {
	t0 := time.Unix(1_800_000_000, 0)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	speaking := func(id string, startMs, durMs int) room.SpeakingEvent {
		return room.SpeakingEvent{ID: id, Speaking: protocol.Speaking{MessageID: "m", Speaking: true, StartedAt: at(startMs), DurationMs: durMs}}
	}
	ended := func(id string) room.SpeakingEvent {
		return room.SpeakingEvent{ID: id, Speaking: protocol.Speaking{MessageID: "m", StartedAt: at(0)}}
	}
	type step struct {
		voice  *room.SpeakingEvent
		mute   *bool
		atMs   int
		since  *int // a person's utterance under way since then
		closed bool
		why    string
	}
	ev := func(e room.SpeakingEvent, ms int) step { return step{voice: &e, atMs: ms} }
	check := func(ms int, closed bool, why string) step { return step{atMs: ms, closed: closed, why: why} }
	person := func(sinceMs, ms int, closed bool, why string) step {
		return step{atMs: ms, since: &sinceMs, closed: closed, why: why}
	}
	on, off := true, false
	tests := []struct {
		name  string
		echo  bool
		steps []step
	}{
		{"open with nobody speaking", false, []step{check(0, false, "")}},
		{"another robot speaks: closed, then the tail, then open", false, []step{
			ev(speaking("hana", 0, 2000), 0), check(10, true, "speaking:hana"), check(1900, true, "speaking:hana"),
			ev(ended("hana"), 2000), check(2100, true, "tail"), check(2299, true, "tail"), check(2300, false, ""),
		}},
		{"its own voice closes it", false, []step{
			ev(speaking("kyoko", 0, 1000), 0), check(500, true, "speaking:kyoko"),
		}},
		{"echo cancelled: its own voice does not, another's does", true, []step{
			ev(speaking("kyoko", 0, 1000), 0), check(500, false, ""),
			ev(speaking("aya", 600, 1000), 600), check(700, true, "speaking:aya"),
		}},
		{"an end that never comes: duration plus margin, then the tail", false, []step{
			ev(speaking("hana", 0, 1000), 0), check(2499, true, "speaking:hana"),
			check(2500, true, "tail"), check(2800, false, ""),
		}},
		{"a cleared status ends the voice", false, []step{
			ev(speaking("hana", 0, 5000), 0), ev(room.SpeakingEvent{ID: "hana", Cleared: true}, 100), check(200, true, "tail"), check(400, false, ""),
		}},
		{"a stale retained status closes nothing", false, []step{
			ev(speaking("hana", 0, 1000), 60_000), check(60_001, false, ""),
		}},
		{"two voices: open only after both", false, []step{
			ev(speaking("hana", 0, 3000), 0), ev(speaking("aya", 0, 1000), 0),
			ev(ended("aya"), 1000), check(1500, true, "speaking:hana"),
			ev(ended("hana"), 3000), check(3350, false, ""),
		}},
		// A robot that starts over a person already speaking yields: the
		// person's sentence is heard to its end, through the robot's voice
		// and its tail; a new utterance is gated as always.
		{"a person speaking before a voice began is heard through it", false, []step{
			ev(speaking("hana", 500, 1000), 500), person(200, 600, false, ""), person(200, 1400, false, ""),
			ev(ended("hana"), 1500), person(200, 1600, false, ""), check(1600, true, "tail"),
		}},
		{"a voice that began before the person closes", false, []step{
			ev(speaking("hana", 0, 1000), 0), person(200, 600, true, "speaking:hana"),
			ev(ended("hana"), 1000), person(200, 1100, true, "tail"),
		}},
		{"of two voices, the one before the person closes", false, []step{
			ev(speaking("hana", 0, 3000), 0), ev(speaking("aya", 900, 1000), 900), person(500, 1000, true, "speaking:hana"),
		}},
		{"muted: closed whatever the room does", false, []step{
			{mute: &on}, check(0, true, "muted"), {mute: &off}, check(0, false, ""),
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var muted atomic.Bool
			g := &Gate{Self: "kyoko", EchoCancelled: tt.echo, Tail: 300 * time.Millisecond, Muted: muted.Load}
			for i, s := range tt.steps {
				switch {
				case s.voice != nil:
					g.Voice(*s.voice, at(s.atMs))
				case s.mute != nil:
					muted.Store(*s.mute)
				default:
					var since time.Time
					if s.since != nil {
						since = at(*s.since)
					}
					closed, why := g.Closed(at(s.atMs), since)
					if closed != s.closed || why != s.why {
						t.Errorf("step %d at %d ms: closed %v (%q), want %v (%q)", i, s.atMs, closed, why, s.closed, s.why)
					}
				}
			}
		})
	}
}
