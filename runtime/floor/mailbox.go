package floor

import (
	"sync"

	"github.com/chorus-robotics/chorus/runtime/loop"
	"github.com/chorus-robotics/chorus/runtime/protocol"
	"github.com/chorus-robotics/chorus/runtime/room"
)

// Bounds of the control mailbox. Presence and holds come only from the
// roster (room drops the rest), deadlines only for pending ballots;
// observed grants come from floor identities, and are capped here (the
// election keeps the leader claims, capped at election.MaxInstances).
const maxSeenGrants = 256

// Timer and housekeeping flags.
const (
	flagJoin = 1 << iota
	flagRegrant
	flagClaimCheck
	flagReconnected
	flagLost
	flagClaims // leader claims wait in the election
	flagEnd    // an operator ended the conversation (End)
	flagLease  // the election's beat or lease check
)

// mailbox holds the floor's control events until its loop takes them.
// Control events are never dropped (issue 9, defect 7): each kind keeps
// only what the loop needs — the latest presence and hold per companion,
// the set of grants seen, the deadlines that fired (the leader claims
// wait in the election, likewise) — so it is bounded by construction
// however fast the events come. notify wakes the loop.
type mailbox struct {
	notify loop.Signal

	mu        sync.Mutex
	presence  map[string]room.PresenceEvent
	holds     map[string]protocol.Hold
	speaking  map[string]room.SpeakingEvent
	grants    []protocol.TurnGrant // observed on the bus, oldest first
	deadlines map[string]bool
	orphans   map[string]bool // messages known only from States, whose grace ran out
	flags     int
	barriers  []chan struct{}
}

// drained is one take of the mailbox.
type drained struct {
	presence  map[string]room.PresenceEvent
	holds     map[string]protocol.Hold
	speaking  map[string]room.SpeakingEvent
	grants    []protocol.TurnGrant
	deadlines map[string]bool
	orphans   map[string]bool
	flags     int
	barriers  []chan struct{}
}

func newMailbox() *mailbox {
	m := &mailbox{notify: loop.NewSignal()}
	m.reset()
	return m
}

func (m *mailbox) reset() {
	m.presence = map[string]room.PresenceEvent{}
	m.holds = map[string]protocol.Hold{}
	m.speaking = map[string]room.SpeakingEvent{}
	m.grants = nil
	m.deadlines = map[string]bool{}
	m.orphans = map[string]bool{}
	m.flags = 0
	m.barriers = nil
}

func (m *mailbox) put(f func()) {
	m.mu.Lock()
	f()
	m.mu.Unlock()
	m.notify.Wake()
}

func (m *mailbox) presenceEvent(p room.PresenceEvent) { m.put(func() { m.presence[p.ID] = p }) }
func (m *mailbox) hold(h protocol.Hold)               { m.put(func() { m.holds[h.From] = h }) }
func (m *mailbox) voice(e room.SpeakingEvent)         { m.put(func() { m.speaking[e.ID] = e }) }
func (m *mailbox) deadline(id string)                 { m.put(func() { m.deadlines[id] = true }) }
func (m *mailbox) orphan(id string)                   { m.put(func() { m.orphans[id] = true }) }
func (m *mailbox) flag(f int)                         { m.put(func() { m.flags |= f }) }
func (m *mailbox) barrier(c chan struct{})            { m.put(func() { m.barriers = append(m.barriers, c) }) }

// grant records a grant seen on the bus; the oldest are forgotten beyond
// the cap (a standby needs only the recent ones).
func (m *mailbox) grant(g protocol.TurnGrant) {
	m.put(func() {
		m.grants = append(m.grants, g)
		if len(m.grants) > maxSeenGrants {
			m.grants = m.grants[len(m.grants)-maxSeenGrants:]
		}
	})
}

func (m *mailbox) take() drained {
	m.mu.Lock()
	defer m.mu.Unlock()
	d := drained{presence: m.presence, holds: m.holds, speaking: m.speaking, grants: m.grants,
		deadlines: m.deadlines, orphans: m.orphans, flags: m.flags, barriers: m.barriers}
	m.reset()
	return d
}
