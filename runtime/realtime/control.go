package realtime

import (
	"sync"
	"time"

	"github.com/chorus-robotics/chorus/runtime/loop"
	"github.com/chorus-robotics/chorus/runtime/protocol"
	"github.com/chorus-robotics/chorus/runtime/room"
)

// control is a realtime floor's mailbox. Its events are never dropped, as
// the turn floor's (issue 9, defect 7; issue 20): however many posts
// flood the queue, the floor still learns who is present, who speaks,
// whether it leads, and which phase its predecessor left. Each kind keeps
// only what the loop needs — the latest presence and speaking status per
// companion (at most MaxFollowed companions), the latest leadership and
// whether it stood by meanwhile, the last phase event, and the phase
// timers that found the queue full — so it is bounded by construction.
// wake tells the loop to take it.
type control struct {
	wake loop.Signal

	mu       sync.Mutex
	presence map[string]room.PresenceEvent
	voices   map[string]room.SpeakingEvent
	active   *bool
	down     bool // leadership was lost since the last take
	seen     *protocol.Phase
	ticks    map[string]time.Time // timers that found the queue full, by tick name
}

// controlled is one take of the mailbox.
type controlled struct {
	presence map[string]room.PresenceEvent
	voices   map[string]room.SpeakingEvent
	active   *bool
	down     bool
	seen     *protocol.Phase
	ticks    map[string]time.Time
}

func newControl() *control {
	return &control{wake: loop.NewSignal(), presence: map[string]room.PresenceEvent{}, voices: map[string]room.SpeakingEvent{},
		ticks: map[string]time.Time{}}
}

func (c *control) put(f func() bool) bool {
	c.mu.Lock()
	ok := f()
	c.mu.Unlock()
	if ok {
		c.wake.Wake()
	}
	return ok
}

// presenceEvent keeps p; false (refused) for a companion beyond MaxFollowed.
func (c *control) presenceEvent(p room.PresenceEvent) bool {
	return c.put(func() bool { return keep(c.presence, p.ID, p) })
}

// voice keeps s; false (refused) for a companion beyond MaxFollowed.
func (c *control) voice(s room.SpeakingEvent) bool {
	return c.put(func() bool { return keep(c.voices, s.ID, s) })
}

func keep[V any](m map[string]V, id string, v V) bool {
	if _, known := m[id]; !known && len(m) >= MaxFollowed {
		return false
	}
	m[id] = v
	return true
}

func (c *control) leader(active bool) {
	c.put(func() bool {
		c.active = &active
		c.down = c.down || !active
		return true
	})
}

func (c *control) phase(p protocol.Phase) {
	c.put(func() bool { c.seen = &p; return true })
}

// tick keeps a timer that found the queue full (the latest time of each
// tick name); false (refused) beyond maxTicks names: each phase has three.
func (c *control) tick(name string, at time.Time) bool {
	return c.put(func() bool {
		if _, known := c.ticks[name]; !known && len(c.ticks) >= maxTicks {
			return false
		}
		if at.After(c.ticks[name]) {
			c.ticks[name] = at
		}
		return true
	})
}

func (c *control) take() controlled {
	c.mu.Lock()
	defer c.mu.Unlock()
	d := controlled{presence: c.presence, voices: c.voices, active: c.active, down: c.down, seen: c.seen, ticks: c.ticks}
	c.presence, c.voices, c.active, c.down, c.seen = map[string]room.PresenceEvent{}, map[string]room.SpeakingEvent{}, nil, false, nil
	c.ticks = map[string]time.Time{}
	return d
}

// maxTicks bounds the timers waiting in the mailbox.
const maxTicks = 64
