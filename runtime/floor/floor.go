// Package floor decides who speaks next in a room (DESIGN.md, "Floor
// control", turn mode).
//
// Decide is the pure rule. Floor is the service: per message it snapshots the
// companions present when the message arrived, collects their States until
// all have voted or the vote deadline passes, and publishes a TurnGrant.
// Late States, States from non-participants and States for unknown messages
// are dropped and counted. Pending messages are bounded; the oldest is
// evicted with a grant of nobody (reason "expired").
//
// # Standby
//
// Several floors may run for one room. They elect one through a retained
// claim on the room's floor/leader topic, whose Last Will marks the claim
// offline. The standby keeps the same books (it shadows every vote) but
// publishes nothing; when the active floor's claim goes offline it claims
// the floor at once and announces any decision the old floor did not.
// Two floors that both claim settle it by instance name: the lower wins.
//
// # Concurrency
//
// One goroutine (Run) owns all state. Bus callbacks and timers only push
// events into a bounded queue; when the queue is full the event is dropped
// and counted. Time comes from a clock.Clock, so tests drive deadlines with
// a fake clock.
package floor

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"sync/atomic"
	"time"

	"github.com/chorus-robotics/chorus/runtime/bus"
	"github.com/chorus-robotics/chorus/runtime/clock"
	"github.com/chorus-robotics/chorus/runtime/loop"
	"github.com/chorus-robotics/chorus/runtime/protocol"
	"github.com/chorus-robotics/chorus/runtime/room"
	"github.com/chorus-robotics/chorus/runtime/topic"
)

// Defaults.
const (
	DefaultVoteTimeout = 3 * time.Second
	DefaultMaxPending  = 64
	DefaultJoinWait    = 500 * time.Millisecond
	queueSize          = 4096
	recentDecided      = 256
	maxLastSpoke       = 1024
	maxUnannounced     = 16
	publishTimeout     = 2 * time.Second
	// MaxPresent bounds the companions a floor follows in one room.
	MaxPresent = 1024
)

// Config configures a Floor.
type Config struct {
	Room        *room.Room
	ID          string        // identity grants are signed with; default topic.DefaultFloorID
	Instance    string        // unique per floor process, for the leader election
	VoteTimeout time.Duration // default 3 s
	MaxPending  int           // default 64
	JoinWait    time.Duration // how long to listen for a retained claim before claiming; default 500 ms
	Clock       clock.Clock   // default clock.Real
}

// Floor is the floor service of one room.
type Floor struct {
	cfg    Config
	log    *slog.Logger
	events chan event
	active atomic.Bool
	ready  atomic.Bool // subscriptions are in place

	// owned by Run
	present     map[string]bool
	pending     map[string]*ballot
	decided     map[string]bool
	decidedRing []string
	lastSpoke   map[string]uint64
	seq         uint64
	leader      string
	unannounced []protocol.TurnGrant
	holds       map[string]bool         // companions through which a human holds the floor
	early       map[string][]earlyState // States that overtook their Message
	earlyCount  int
	done        map[string]bool // message ids whose grant was seen on the bus
}

// earlyState is a State that arrived before its Message. MQTT orders
// messages per publisher only: a broker that fans out on several threads
// (mochi) or a cluster can hand the floor a companion's State before the
// Message it answers. Such States wait (bounded, for one vote timeout) for
// their Message instead of being dropped.
type earlyState struct {
	s  protocol.StateParams
	at time.Time
}

const maxEarly = 1024

type ballot struct {
	msg          protocol.Message
	arrived      time.Time
	seq          uint64
	participants map[string]bool
	votes        map[string]protocol.StateParams
	timer        clock.Timer
}

type event struct {
	kind     int
	msg      protocol.Message
	state    protocol.State
	presence room.PresenceEvent
	grant    protocol.TurnGrant
	claim    Claim
	hold     protocol.Hold
	id       string
	barrier  chan struct{}
}

const (
	evMessage = iota
	evState
	evPresence
	evGrant
	evClaim
	evDeadline
	evJoin
	evBarrier
	evHold
)

// Claim is the retained leader claim of a floor instance.
type Claim struct {
	Instance string    `json:"instance"`
	Online   bool      `json:"online"`
	Since    time.Time `json:"since"`
}

// New checks cfg and returns a Floor; Run starts it.
func New(cfg Config) (*Floor, error) {
	if cfg.Room == nil {
		return nil, errors.New("floor: no room")
	}
	if cfg.ID == "" {
		cfg.ID = topic.DefaultFloorID
	}
	if cfg.Instance == "" {
		return nil, errors.New("floor: no instance name")
	}
	if cfg.VoteTimeout <= 0 {
		cfg.VoteTimeout = DefaultVoteTimeout
	}
	if cfg.MaxPending <= 0 {
		cfg.MaxPending = DefaultMaxPending
	}
	if cfg.JoinWait <= 0 {
		cfg.JoinWait = DefaultJoinWait
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.Real{}
	}
	return &Floor{
		cfg:       cfg,
		log:       cfg.Room.Log.With("floor", cfg.Instance, "room", cfg.Room.Name),
		events:    make(chan event, queueSize),
		present:   map[string]bool{},
		pending:   map[string]*ballot{},
		decided:   map[string]bool{},
		lastSpoke: map[string]uint64{},
		done:      map[string]bool{},
		early:     map[string][]earlyState{},
		holds:     map[string]bool{},
	}, nil
}

// LeaderWill is the Last Will a floor's bus connection must carry, so that
// a standby learns at once when this instance dies.
func LeaderWill(s topic.Scheme, roomName, instance string) *bus.Retained {
	b, _ := json.Marshal(Claim{Instance: instance, Online: false, Since: time.Now().UTC()})
	return &bus.Retained{Topic: s.FloorLeader(roomName), Payload: b}
}

func (f *Floor) subscribed() bool { return f.ready.Load() }

// Ping returns once the floor's loop has handled everything queued before
// it: proof that the loop turns (for the watchdog, and for tests).
func (f *Floor) Ping(ctx context.Context) error {
	return loop.Ping(ctx, f.events, func(done chan struct{}) event { return event{kind: evBarrier, barrier: done} })
}

// Active reports whether this floor currently decides for the room.
func (f *Floor) Active() bool { return f.active.Load() }

func (f *Floor) push(e event) {
	select {
	case f.events <- e:
	default:
		f.cfg.Room.Metrics.DroppedStates.WithLabelValues("queue_full").Inc()
	}
}

// Run subscribes to the room and decides until ctx ends.
func (f *Floor) Run(ctx context.Context) error {
	r := f.cfg.Room
	subs := []func() error{
		func() error {
			return r.Bus.Subscribe(ctx, r.Scheme.FloorLeader(r.Name), func(_ string, b []byte) {
				if len(b) == 0 {
					return
				}
				var c Claim
				if err := json.Unmarshal(b, &c); err != nil || protocol.ValidIdentity(c.Instance) != "" {
					r.Metrics.Reject(f.log, "leader", "", string(protocol.KindInvalid), fmt.Errorf("bad leader claim: %q", b))
					return
				}
				f.push(event{kind: evClaim, claim: c})
			})
		},
		func() error {
			return r.OnPresence(ctx, func(p room.PresenceEvent) { f.push(event{kind: evPresence, presence: p}) })
		},
		func() error {
			return r.OnMessage(ctx, func(m protocol.Message) { f.push(event{kind: evMessage, msg: m}) })
		},
		func() error { return r.OnState(ctx, func(s protocol.State) { f.push(event{kind: evState, state: s}) }) },
		func() error {
			return r.OnGrant(ctx, func(g protocol.TurnGrant) { f.push(event{kind: evGrant, grant: g}) })
		},
		func() error {
			return r.OnHold(ctx, func(h protocol.Hold) { f.push(event{kind: evHold, hold: h}) })
		},
	}
	for _, s := range subs {
		if err := s(); err != nil {
			return fmt.Errorf("floor: subscribe: %w", err)
		}
	}
	f.ready.Store(true)
	join := f.cfg.Clock.AfterFunc(f.cfg.JoinWait, func() { f.timerEvent(ctx, event{kind: evJoin}) })
	defer join.Stop()
	defer func() {
		for _, b := range f.pending {
			b.timer.Stop()
		}
	}()
	for {
		select {
		case <-ctx.Done():
			return nil
		case e := <-f.events:
			f.handle(ctx, e)
		}
	}
}

// timerEvent delivers a timer's event without dropping it.
func (f *Floor) timerEvent(ctx context.Context, e event) {
	select {
	case f.events <- e:
	case <-ctx.Done():
	}
}

func (f *Floor) handle(ctx context.Context, e event) {
	switch e.kind {
	case evMessage:
		f.onMessage(ctx, e.msg)
	case evState:
		f.onState(ctx, e.state.Params)
	case evPresence:
		f.onPresence(ctx, e.presence)
	case evGrant:
		f.onGrant(e.grant)
	case evClaim:
		f.onClaim(ctx, e.claim)
	case evDeadline:
		if b, ok := f.pending[e.id]; ok {
			f.decide(ctx, b, protocol.DecidedDeadline)
		}
	case evBarrier:
		close(e.barrier)
	case evHold:
		if e.hold.Held && f.present[e.hold.From] {
			f.holds[e.hold.From] = true
		} else {
			delete(f.holds, e.hold.From)
		}
	case evJoin:
		if f.leader == "" && !f.Active() {
			f.claim(ctx, "no active floor")
		}
	}
}

func (f *Floor) onMessage(ctx context.Context, m protocol.Message) {
	id := m.Params.ID
	if _, dup := f.pending[id]; dup || f.decided[id] {
		f.cfg.Room.Metrics.DroppedStates.WithLabelValues("duplicate_message").Inc()
		return
	}
	f.seq++
	if len(f.lastSpoke) >= maxLastSpoke {
		f.lastSpoke = map[string]uint64{}
	}
	f.lastSpoke[m.Params.From] = f.seq
	for len(f.pending) >= f.cfg.MaxPending {
		f.evictOldest(ctx)
	}
	b := &ballot{msg: m, arrived: f.cfg.Clock.Now(), seq: f.seq, participants: map[string]bool{}, votes: map[string]protocol.StateParams{}}
	for c := range f.present {
		if c != m.Params.From {
			b.participants[c] = true
		}
	}
	f.pending[id] = b
	if len(b.participants) == 0 {
		f.decide(ctx, b, protocol.DecidedAllVoted)
		return
	}
	b.timer = f.cfg.Clock.AfterFunc(f.cfg.VoteTimeout, func() { f.timerEvent(ctx, event{kind: evDeadline, id: id}) })
	if es, ok := f.early[id]; ok {
		delete(f.early, id)
		f.earlyCount -= len(es)
		for _, e := range es {
			if _, open := f.pending[id]; open {
				f.onState(ctx, e.s)
			}
		}
	}
}

// keepEarly holds a State whose Message has not arrived yet; States older
// than the vote timeout are counted as unknown and dropped.
func (f *Floor) keepEarly(s protocol.StateParams) {
	now := f.cfg.Clock.Now()
	m := f.cfg.Room.Metrics
	if f.earlyCount >= maxEarly/2 {
		for id, es := range f.early {
			kept := es[:0]
			for _, e := range es {
				if now.Sub(e.at) < f.cfg.VoteTimeout {
					kept = append(kept, e)
				} else {
					m.DroppedStates.WithLabelValues("unknown_message").Inc()
				}
			}
			f.earlyCount -= len(es) - len(kept)
			if len(kept) == 0 {
				delete(f.early, id)
			} else {
				f.early[id] = kept
			}
		}
	}
	if f.earlyCount >= maxEarly {
		m.DroppedStates.WithLabelValues("unknown_message").Inc()
		return
	}
	f.early[s.MessageID] = append(f.early[s.MessageID], earlyState{s: s, at: now})
	f.earlyCount++
}

func (f *Floor) evictOldest(ctx context.Context) {
	var oldest *ballot
	for _, b := range f.pending {
		if oldest == nil || b.seq < oldest.seq {
			oldest = b
		}
	}
	if oldest != nil {
		f.finish(ctx, oldest, Decision{Reason: protocol.ReasonExpired}, protocol.DecidedEvicted)
	}
}

func (f *Floor) onState(ctx context.Context, s protocol.StateParams) {
	m := f.cfg.Room.Metrics
	b, ok := f.pending[s.MessageID]
	switch {
	case !ok && f.decided[s.MessageID]:
		m.LateStates.Inc()
		return
	case !ok:
		f.keepEarly(s)
		return
	case !b.participants[s.From]:
		m.DroppedStates.WithLabelValues("not_participant").Inc()
		return
	}
	m.Votes.Inc()
	b.votes[s.From] = s // the last State before the decision counts
	if len(b.votes) == len(b.participants) {
		f.decide(ctx, b, protocol.DecidedAllVoted)
	}
}

func (f *Floor) onPresence(ctx context.Context, p room.PresenceEvent) {
	online := !p.Cleared && p.Presence.Online
	if online {
		if !f.present[p.ID] && len(f.present) >= MaxPresent {
			f.cfg.Room.Metrics.Reject(f.log, "presence", p.ID, "too_many", fmt.Errorf("more than %d companions present; %s ignored", MaxPresent, p.ID))
			return
		}
		f.present[p.ID] = true
		return
	}
	delete(f.present, p.ID)
	delete(f.holds, p.ID) // a hold ends with the body that held it
	// A companion that left cannot vote: stop waiting for it.
	for _, b := range f.sortedPending() {
		if b.participants[p.ID] {
			if _, voted := b.votes[p.ID]; !voted {
				delete(b.participants, p.ID)
				if len(b.votes) == len(b.participants) {
					f.decide(ctx, b, protocol.DecidedAllVoted)
				}
			}
		}
	}
}

func (f *Floor) sortedPending() []*ballot {
	out := make([]*ballot, 0, len(f.pending))
	for _, b := range f.pending {
		out = append(out, b)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].seq < out[j].seq })
	return out
}

func (f *Floor) decide(ctx context.Context, b *ballot, by string) {
	if len(f.holds) > 0 {
		f.finish(ctx, b, Decision{Reason: protocol.ReasonHeld}, by)
		return
	}
	f.finish(ctx, b, Decide(b.votes, f.lastSpoke), by)
}

func (f *Floor) finish(ctx context.Context, b *ballot, d Decision, by string) {
	id := b.msg.Params.ID
	if b.timer != nil {
		b.timer.Stop()
	}
	delete(f.pending, id)
	f.decided[id] = true
	f.decidedRing = append(f.decidedRing, id)
	if len(f.decidedRing) > recentDecided {
		delete(f.decided, f.decidedRing[0])
		delete(f.done, f.decidedRing[0])
		f.decidedRing = f.decidedRing[1:]
	}
	g := protocol.TurnGrant{From: f.cfg.ID, MessageID: id, Reason: d.Reason, DecidedBy: by, Votes: []protocol.Vote{}}
	if d.Speaker != "" {
		s := d.Speaker
		g.Speaker = &s
	}
	voters := make([]string, 0, len(b.votes))
	for v := range b.votes {
		voters = append(voters, v)
	}
	sort.Strings(voters)
	for _, v := range voters {
		g.Votes = append(g.Votes, protocol.VoteOf(b.votes[v]))
	}
	for p := range b.participants {
		if _, ok := b.votes[p]; !ok {
			g.Missing = append(g.Missing, p)
		}
	}
	sort.Strings(g.Missing)
	m := f.cfg.Room.Metrics
	if !f.Active() {
		if !f.done[id] {
			f.unannounced = append(f.unannounced, g)
			if len(f.unannounced) > maxUnannounced {
				f.unannounced = f.unannounced[1:]
			}
		}
		return
	}
	m.TurnLatency.Observe(f.cfg.Clock.Now().Sub(b.arrived).Seconds())
	m.Grants.WithLabelValues(d.Reason).Inc()
	f.publish(ctx, g)
}

func (f *Floor) publish(ctx context.Context, g protocol.TurnGrant) {
	pctx, cancel := context.WithTimeout(ctx, publishTimeout)
	defer cancel()
	if err := f.cfg.Room.SendGrant(pctx, g); err != nil && ctx.Err() == nil {
		f.log.Error("floor: grant not published", "message", g.MessageID, "err", err)
	}
}

func (f *Floor) onGrant(g protocol.TurnGrant) {
	if f.Active() {
		return
	}
	f.done[g.MessageID] = true
	for i, u := range f.unannounced {
		if u.MessageID == g.MessageID {
			f.unannounced = append(f.unannounced[:i], f.unannounced[i+1:]...)
			break
		}
	}
}

func (f *Floor) onClaim(ctx context.Context, c Claim) {
	me := f.cfg.Instance
	switch {
	case c.Instance == me:
		if !c.Online && f.Active() {
			f.announce(ctx) // a stale will of ours: say again that we lead
		}
	case c.Online:
		if f.Active() {
			if me < c.Instance {
				f.announce(ctx)
				return
			}
			f.log.Warn("floor: another floor claims the room; standing by", "other", c.Instance)
			f.active.Store(false)
		}
		f.leader = c.Instance
	default: // another instance went offline
		if f.Active() {
			f.announce(ctx) // its will overwrote our retained claim
			return
		}
		if f.leader == "" || f.leader == c.Instance {
			f.claim(ctx, "active floor "+c.Instance+" went offline")
		}
	}
}

func (f *Floor) claim(ctx context.Context, why string) {
	f.active.Store(true)
	f.leader = f.cfg.Instance
	f.log.Info("floor: active", "why", why)
	f.announce(ctx)
	for _, g := range f.unannounced {
		f.publish(ctx, g)
	}
	f.unannounced = nil
}

func (f *Floor) announce(ctx context.Context) {
	r := f.cfg.Room
	b, _ := json.Marshal(Claim{Instance: f.cfg.Instance, Online: true, Since: f.cfg.Clock.Now().UTC()})
	pctx, cancel := context.WithTimeout(ctx, publishTimeout)
	defer cancel()
	if err := r.Bus.Publish(pctx, r.Scheme.FloorLeader(r.Name), b, true); err != nil && ctx.Err() == nil {
		f.log.Error("floor: leader claim not published", "err", err)
	}
}
