package ear

import (
	"sync"
	"time"

	"github.com/chorus-robotics/chorus/runtime/protocol"
	"github.com/chorus-robotics/chorus/runtime/room"
)

// maxVoices bounds the voices a gate follows (a room's roster is smaller).
const maxVoices = 1024

// Gate says when a robot's microphone must not send audio to speech to
// text (docs/hearing.md, gating): while any companion of the room is
// speaking — by its retained speaking status — and for Tail after its
// voice ended (the room's reverberation). A robot never transcribes a
// robot. With EchoCancelled, the OS takes this robot's own playback out
// of its microphone, so only the other robots' voices close its gate.
// A voice whose end never comes closes the gate no longer than its
// announced duration plus protocol.VoiceMargin. A muted robot's gate is
// closed too: its microphone hears nothing. A person's utterance that
// was under way when a voice began is not closed by it (nor by its tail):
// that robot started over the person and yields, and the person's
// sentence is heard to its end.
//
// # Concurrency
//
// Safe for concurrent use: the room's speaking handler updates it, the
// capture loop asks it.
type Gate struct {
	Self          string // this robot's companion id
	EchoCancelled bool
	Tail          time.Duration
	// Muted, if set, says whether the robot is muted (the button's
	// short press): a muted robot's microphone hears nothing.
	Muted func() bool

	mu         sync.Mutex
	voices     map[string]voice // who speaks, since when, until when at the latest
	quiet      time.Time        // the gate stays closed until then (the tail of the last voice)
	quietStart time.Time        // when the voice of that tail began
}

// voice is one robot's voice the gate follows.
type voice struct{ start, until time.Time }

// Voice updates the gate from one speaking status.
func (g *Gate) Voice(e room.SpeakingEvent, now time.Time) {
	if g.EchoCancelled && e.ID == g.Self {
		return
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.voices == nil {
		g.voices = map[string]voice{}
	}
	if e.Cleared || !e.Speaking.Speaking {
		if v, ok := g.voices[e.ID]; ok || !e.Cleared {
			start := e.Speaking.StartedAt
			if ok {
				start = v.start
			}
			g.tail(now.Add(g.Tail), start)
		}
		delete(g.voices, e.ID)
		return
	}
	until := e.Speaking.StartedAt.Add(time.Duration(e.Speaking.DurationMs)*time.Millisecond + protocol.VoiceMargin)
	if !until.After(now) {
		return // a retained status whose voice must have ended long ago
	}
	if _, ok := g.voices[e.ID]; ok || len(g.voices) < maxVoices {
		g.voices[e.ID] = voice{start: e.Speaking.StartedAt, until: until}
	}
}

// tail keeps the gate closed until quiet, for a voice that began at
// start.
func (g *Gate) tail(quiet, start time.Time) {
	if quiet.After(g.quiet) {
		g.quiet, g.quietStart = quiet, start
	}
}

// Closed reports whether audio captured at now must not be heard, and
// why ("" when open). since is when the person's utterance under way
// began (zero: none is): a voice that began after it closes nothing.
func (g *Gate) Closed(now, since time.Time) (bool, string) {
	if g.Muted != nil && g.Muted() {
		return true, "muted"
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	over := func(start time.Time) bool { return !since.IsZero() && start.After(since) }
	closedBy := ""
	for id, v := range g.voices {
		if !v.until.After(now) {
			delete(g.voices, id) // its end never came: it holds nobody up any longer
			g.tail(v.until.Add(g.Tail), v.start)
			continue
		}
		if !over(v.start) && closedBy == "" {
			closedBy = id
		}
	}
	if closedBy != "" {
		return true, "speaking:" + closedBy
	}
	if now.Before(g.quiet) && !over(g.quietStart) {
		return true, "tail"
	}
	return false, ""
}

func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}
