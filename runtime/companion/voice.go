package companion

import (
	"context"
	"time"

	"github.com/chorus-robotics/chorus/runtime/protocol"
	"github.com/chorus-robotics/chorus/runtime/room"
)

// Speaking status and overlapped turns (docs/turns.md).
//
// Every companion follows the room's speaking statuses. In overlapped
// mode a granted companion prepares at once — the words, and a "speak"
// query with a hold token that makes its device synthesize the first
// sentence and wait — and starts only when the audio of everyone else
// (the previous speaker above all) has ended plus the pause: then it
// sends "speak.start", announces its speaking status and publishes its
// Message marked as being spoken, so the others vote while they hear it.
// A status whose end never comes holds nobody up longer than its
// announced duration plus VoiceMargin; a status that never comes for a
// Message marked as being spoken, longer than StatusGrace.
//
// A body that does not know the hold (Config.NoHold: aikyo's clients
// behind the bridge) would play a held speak at once, over the voice
// before it; it is handed its words only at the start, when the floor is
// free, and its voice lasts the speech estimate when its result gives no
// length. A body seen playing a held speak at once is treated so from
// then on.
//
// In sequential mode (aikyo's order) the device speaks after the pause
// that follows the grant, and the Message goes out once the audio ends.
// Both modes announce the speaking status, and both stop the words at a
// user's barge-in.

// The barge-in modes (protocol.BargeIn), VoiceMargin and the speech
// estimate are the room's contract, in runtime/protocol.

const (
	// StatusGrace is how long a Message marked as being spoken waits for
	// its speaking status before the room stops waiting for it.
	StatusGrace = 2 * time.Second
	// holdFor bounds how long a prepared speak waits for its start.
	holdFor = time.Minute
)

// voice is what a companion knows of one member's audio, in its own clock
// (remote clocks are never compared).
type voice struct {
	msgID    string
	speaking bool
	until    time.Time // while speaking: when the room stops waiting for the end
	ended    time.Time // when the end was heard; zero while speaking
}

func (c *Companion) onSpeaking(ctx context.Context, e room.SpeakingEvent) {
	now := c.cfg.Clock.Now()
	switch {
	case e.Cleared:
		delete(c.audio, e.ID)
	case e.Speaking.Speaking:
		if v, ok := c.audio[e.ID]; ok && v.msgID == e.Speaking.MessageID && !v.speaking {
			return // the start overtaken by its end, or a copy
		}
		d := time.Duration(e.Speaking.DurationMs) * time.Millisecond
		c.audio[e.ID] = voice{msgID: e.Speaking.MessageID, speaking: true, until: now.Add(d + protocol.VoiceMargin)}
	default:
		if v, ok := c.audio[e.ID]; ok && v.msgID == e.Speaking.MessageID && !v.speaking {
			return // a copy of the end
		}
		c.audio[e.ID] = voice{msgID: e.Speaking.MessageID, ended: now}
	}
	c.maybeStart(ctx)
}

// maybeStart lets the turn being prepared look again at whether it may
// start (a voice or a presence changed).
func (c *Companion) maybeStart(ctx context.Context) {
	if c.turn != nil {
		c.turn.maybeStart(ctx)
	}
}

// voices and here give a turn the room's timing (host).
func (c *Companion) voices() map[string]voice { return c.audio }
func (c *Companion) here(id string) bool      { return c.present[id] || id == c.me() }

// announceVoice publishes this companion's speaking status (retained) and
// notes it at once (its copy from the broker changes nothing).
func (c *Companion) announceVoice(msgID string, speaking bool, startedAt time.Time, d time.Duration) {
	now := c.cfg.Clock.Now()
	v := voice{msgID: msgID, speaking: speaking, ended: now}
	if speaking {
		v = voice{msgID: msgID, speaking: true, until: now.Add(d + protocol.VoiceMargin)}
	}
	c.audio[c.me()] = v
	s := protocol.Speaking{MessageID: msgID, Speaking: speaking, StartedAt: startedAt, DurationMs: int(min(d, protocol.MaxSpeakingMs*time.Millisecond) / time.Millisecond)}
	c.said = &s
	if err := c.cfg.Room.QueueSpeaking(c.out, c.me(), s); err != nil {
		c.log.Warn("speaking status not published", "err", err)
	}
}
