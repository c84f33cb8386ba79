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
// closed too: its microphone hears nothing.
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

	mu     sync.Mutex
	voices map[string]time.Time // who speaks, until when at the latest
	quiet  time.Time            // the gate stays closed until then (the tail of the last voice)
}

// Voice updates the gate from one speaking status.
func (g *Gate) Voice(e room.SpeakingEvent, now time.Time) {
	if g.EchoCancelled && e.ID == g.Self {
		return
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.voices == nil {
		g.voices = map[string]time.Time{}
	}
	if e.Cleared || !e.Speaking.Speaking {
		if _, ok := g.voices[e.ID]; ok || !e.Cleared {
			g.quiet = later(g.quiet, now.Add(g.Tail))
		}
		delete(g.voices, e.ID)
		return
	}
	until := e.Speaking.StartedAt.Add(time.Duration(e.Speaking.DurationMs)*time.Millisecond + protocol.VoiceMargin)
	if !until.After(now) {
		return // a retained status whose voice must have ended long ago
	}
	if _, ok := g.voices[e.ID]; ok || len(g.voices) < maxVoices {
		g.voices[e.ID] = until
	}
}

// Closed reports whether audio captured at now must not be heard, and
// why ("" when open).
func (g *Gate) Closed(now time.Time) (bool, string) {
	if g.Muted != nil && g.Muted() {
		return true, "muted"
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	for id, until := range g.voices {
		if until.After(now) {
			return true, "speaking:" + id
		}
		delete(g.voices, id) // its end never came: it holds nobody up any longer
		g.quiet = later(g.quiet, until.Add(g.Tail))
	}
	if now.Before(g.quiet) {
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
