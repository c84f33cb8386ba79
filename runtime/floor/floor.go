// Package floor decides who speaks next in a room (docs/protocol.md,
// "Floor control (turn mode)").
//
// Decide is the pure rule. Floor is the service: per message it snapshots
// the room's members present when the message arrived, collects their
// States until all have voted or the vote deadline passes, and publishes a
// TurnGrant. Each vote's deadline is sized from its participants: every
// companion announces in its presence how long it expects to think (its
// brain's measured latency), and the deadline is the slowest of those plus
// a margin — never shorter than VoteTimeout, never longer than
// VoteCeiling. A slow model on the LAN gets its turns; a dead robot holds
// the room up no longer than it said it would think. Late States, States from non-participants and States for
// unknown messages are dropped and counted. Pending messages are bounded;
// the oldest is evicted with a grant of nobody (reason "expired").
//
// # Recovery
//
// Delivery is at least once and any single message may be lost (a broker
// that drops a full queue, a restart). The floor publishes a grant with a
// speaker again every RegrantEvery until that speaker's answer (or any
// newer message) arrives, the speaker leaves, or RegrantFor passes. A
// companion acts once per grant and answers a repeated grant of a message
// it already answered by publishing its answer again, so a lost grant and
// a lost answer are both recovered within one interval. After its own
// reconnect the floor says again that it leads and gives pending votes
// back the time it could not hear (at least a grace period): no deadline
// counts the time the floor itself was disconnected.
//
// # Standby
//
// Several floors may run for one room. They elect one through a retained
// claim on the room's floor/leader topic, whose Last Will marks the claim
// offline: the room's one election, runtime/election, which the realtime
// floors share. A floor is active only once it has read its own claim back from
// the broker: a claim that never comes back (an ACL that denies it) is
// logged loudly and retried, and the floor grants nothing meanwhile, so
// two floors can never both grant. The standby keeps the same books (it
// shadows every vote) but publishes nothing; when the active floor's
// claim goes offline, or the active floor has been silent for a lease
// (a dead broker node takes its connections' wills with it), it claims
// the floor and announces any decision the old floor did not. Two floors
// that both claim settle it by instance name: the lower wins; of two
// active ones, the newer claim keeps the room (runtime/election).
//
// # Concurrency
//
// One goroutine (Run) owns all state. Bus callbacks and timers never
// block: Messages and States go into a bounded queue (a full queue drops
// and counts them, loop.Queue); control events (presence, holds, grants
// seen, timers, the election's ticks) go into a mailbox that keeps the
// latest of each and never drops one; the leader claims wait in the
// election's own. Publishes go through an outbox, so the loop never waits
// on the network. Time comes from a clock.Clock, so tests drive deadlines
// with a fake clock.
package floor

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/chorus-robotics/chorus/runtime/bus"
	"github.com/chorus-robotics/chorus/runtime/clock"
	"github.com/chorus-robotics/chorus/runtime/election"
	"github.com/chorus-robotics/chorus/runtime/loop"
	"github.com/chorus-robotics/chorus/runtime/metrics"
	"github.com/chorus-robotics/chorus/runtime/protocol"
	"github.com/chorus-robotics/chorus/runtime/room"
	"github.com/chorus-robotics/chorus/runtime/seen"
	"github.com/chorus-robotics/chorus/runtime/topic"
)

// Defaults.
const (
	DefaultVoteTimeout  = 3 * time.Second
	DefaultVoteCeiling  = 30 * time.Second
	thinkMargin         = 500 * time.Millisecond // a State's way to the floor
	DefaultMaxPending   = 64
	DefaultJoinWait     = election.DefaultJoinWait
	DefaultRegrantEvery = time.Second
	DefaultRegrantFor   = time.Minute
	DefaultClaimCheck   = election.DefaultClaimCheck
	DefaultOrphanGrace  = time.Second
	claimRetry          = election.DefaultRetry
	reconnectGrace      = 1500 * time.Millisecond
	queueSize           = 4096
	recentDecided       = 256
	maxLastSpoke        = 1024
	maxUnannounced      = 16
	maxOrphans          = 64 // messages known only from States, waiting at once
	// MaxPresent bounds the companions a floor follows in one room.
	MaxPresent = 1024
)

// Config configures a Floor.
type Config struct {
	Room        *room.Room    // with its roster (Members) set
	ID          string        // identity grants are signed with; default topic.DefaultFloorID
	Instance    string        // unique per floor process, for the leader election
	VoteTimeout time.Duration // the shortest vote deadline; default 3 s
	VoteCeiling time.Duration // the longest, whatever is announced; default 30 s
	MaxPending  int           // default 64
	JoinWait    time.Duration // how long to listen for a retained claim before claiming; default 500 ms
	Clock       clock.Clock   // default clock.Real
	// RegrantEvery is how often a grant is published again while its
	// speaker has not answered; RegrantFor is when the floor gives up.
	RegrantEvery time.Duration // default 1 s
	RegrantFor   time.Duration // default 1 min
	// ClaimCheck is how long the floor waits to read its leader claim back
	// before it says it cannot claim the room; default 2 s.
	ClaimCheck time.Duration
	// OrphanGrace is how long a State for a message the floor has not
	// received waits for that message before the floor opens the ballot
	// without it (the message was lost on its way here); default 1 s.
	OrphanGrace time.Duration
}

// Floor is the floor service of one room.
type Floor struct {
	cfg    Config
	log    *slog.Logger
	m      *metrics.Metrics
	events loop.Queue[event] // Messages and States
	ctl    *mailbox          // everything else
	out    *bus.Outbox
	el     *election.Election
	ready  atomic.Bool // subscriptions are in place

	// owned by Run
	present     map[string]bool
	pending     map[string]*ballot
	decided     *seen.Set
	lastSpoke   map[string]uint64
	seq         uint64
	unannounced []protocol.TurnGrant
	holds       map[string]bool          // companions through which a human holds the floor
	ended       bool                     // End: the companions' words get no turn until a person speaks
	early       map[string]earlyState    // per voter: its newest State whose Message has not arrived
	done        *seen.Set                // message ids whose grant was seen on the bus
	awaiting    *awaited                 // the grant whose speaker has not answered yet
	last        lastGrant                // the newest grant decided or seen, for a takeover
	deaf        bool                     // the connection is lost: deadlines wait for it to come back
	deafSince   time.Time                // when it was lost
	orphans     map[string]bool          // message ids known only from States, waiting OrphanGrace
	think       map[string]time.Duration // each present companion's announced think time
	voices      map[string]time.Time     // who is speaking, until when at the latest
	rested      *ballot                  // the newest message, rested on while votes were owed (lateVote)
}

type event struct {
	msg   *protocol.Message
	state protocol.StateParams
}

// New checks cfg and returns a Floor; Run starts it.
func New(cfg Config) (*Floor, error) {
	if cfg.Room == nil {
		return nil, errors.New("floor: no room")
	}
	if len(cfg.Room.Members) == 0 {
		return nil, fmt.Errorf("floor: room %s has no roster: list its companions (room.members)", cfg.Room.Name)
	}
	if cfg.ID == "" {
		cfg.ID = topic.DefaultFloorID
	}
	if cfg.Instance == "" {
		return nil, errors.New("floor: no instance name")
	}
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	def(&cfg.VoteTimeout, DefaultVoteTimeout)
	def(&cfg.VoteCeiling, DefaultVoteCeiling)
	cfg.VoteCeiling = max(cfg.VoteCeiling, cfg.VoteTimeout)
	def(&cfg.JoinWait, DefaultJoinWait)
	def(&cfg.RegrantEvery, DefaultRegrantEvery)
	def(&cfg.RegrantFor, DefaultRegrantFor)
	def(&cfg.ClaimCheck, DefaultClaimCheck)
	def(&cfg.OrphanGrace, DefaultOrphanGrace)
	if cfg.MaxPending <= 0 {
		cfg.MaxPending = DefaultMaxPending
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.Real{}
	}
	log := cfg.Room.Log.With("floor", cfg.Instance, "room", cfg.Room.Name)
	m := cfg.Room.Metrics
	f := &Floor{
		cfg: cfg,
		log: log,
		m:   m,
		events: loop.NewQueue[event](queueSize, func(kind string) {
			if kind == "state" {
				m.DroppedStates.WithLabelValues("queue_full").Inc()
			}
			m.QueueDrops.WithLabelValues("floor", kind).Inc()
		}),
		ctl: newMailbox(),
		out: &bus.Outbox{Bus: cfg.Room.Bus, Log: log, Timeout: 10 * time.Second,
			OnDrop: func(string, error) { m.PublishDropped.WithLabelValues("floor").Inc() }},
		present:   map[string]bool{},
		pending:   map[string]*ballot{},
		decided:   seen.New(recentDecided),
		lastSpoke: map[string]uint64{},
		done:      seen.New(recentDecided),
		early:     map[string]earlyState{},
		orphans:   map[string]bool{},
		think:     map[string]time.Duration{},
		holds:     map[string]bool{},
		voices:    map[string]time.Time{},
	}
	el, err := election.New(election.Config{Room: cfg.Room, Identity: cfg.ID, Instance: cfg.Instance, Clock: cfg.Clock, Log: log,
		JoinWait: cfg.JoinWait, ClaimCheck: cfg.ClaimCheck, Send: f.out.Send, Wake: f.wake, OnChange: f.onLeader})
	if err != nil {
		return nil, fmt.Errorf("floor: %w", err)
	}
	f.el = el
	return f, nil
}

func (f *Floor) subscribed() bool { return f.ready.Load() }

// Ping returns once the floor's loop has handled every control event and
// every Message and State queued before it: proof that the loop turns (for
// the watchdog, and for tests).
func (f *Floor) Ping(ctx context.Context) error {
	done := make(chan struct{})
	f.ctl.barrier(done)
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// End ends the conversation (an operator's command: Home Assistant's "end
// conversation"): every pending message is decided for nobody, and the
// companions' words that follow get no turn until a person speaks again.
// It never blocks.
func (f *Floor) End() { f.ctl.flag(flagEnd) }

// end is End on the floor's loop.
func (f *Floor) end() {
	f.ended = true
	f.rested = nil
	for _, b := range f.sortedPending() {
		f.finish(b, Decision{Reason: protocol.ReasonRest}, protocol.DecidedAllVoted)
	}
	f.log.Info("floor: the conversation was ended by an operator; it rests until a person speaks")
}

// Active reports whether this floor currently decides for the room.
func (f *Floor) Active() bool { return f.el.Active() }

func (f *Floor) push(e event, kind string) { f.events.Push(e, kind) }

// Run subscribes to the room and decides until ctx ends.
func (f *Floor) Run(ctx context.Context) error {
	r := f.cfg.Room
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel()
	wg.Add(1)
	go func() { defer wg.Done(); f.out.Run(ctx) }()
	if rc, ok := r.Bus.(interface {
		OnReconnect(func())
		OnLost(func())
	}); ok {
		rc.OnReconnect(func() { f.ctl.flag(flagReconnected) })
		rc.OnLost(func() { f.ctl.flag(flagLost) })
	}
	subs := []func() error{
		func() error { return f.el.Subscribe(ctx) },
		func() error { return r.OnPresence(ctx, f.ctl.presenceEvent) },
		func() error {
			return r.OnMessage(ctx, func(m protocol.Message) { f.push(event{msg: &m}, "message") })
		},
		func() error {
			return r.OnState(ctx, func(s protocol.State) { f.push(event{state: s.Params}, "state") })
		},
		func() error { return r.OnGrant(ctx, f.ctl.grant) },
		func() error { return r.OnHold(ctx, f.ctl.hold) },
		func() error { return r.OnSpeaking(ctx, f.ctl.voice) },
	}
	for _, s := range subs {
		if err := s(); err != nil {
			return fmt.Errorf("floor: subscribe: %w", err)
		}
	}
	f.ready.Store(true)
	f.el.Start()
	defer func() {
		for _, b := range f.pending {
			b.timer.Stop()
		}
		if f.awaiting != nil && f.awaiting.timer != nil {
			f.awaiting.timer.Stop()
		}
		f.el.Stop()
	}()
	for {
		select {
		case <-ctx.Done():
			return nil
		case e := <-f.events.C:
			f.handle(ctx, e)
		case <-f.ctl.notify.C:
			f.control(ctx)
		}
		f.held()
	}
}

// held reports how much the floor holds: ballots, early States and
// orphans drain when the room rests; the books of decided and seen
// messages stay at their cap.
func (f *Floor) held() {
	h := f.m.Held
	h.WithLabelValues("floor_ballots").Set(float64(len(f.pending)))
	h.WithLabelValues("floor_early_states").Set(float64(len(f.early)))
	h.WithLabelValues("floor_orphans").Set(float64(len(f.orphans)))
	h.WithLabelValues("floor_unannounced").Set(float64(len(f.unannounced)))
	awaiting := 0.0
	if f.awaiting != nil {
		awaiting = 1
	}
	h.WithLabelValues("floor_awaiting_answer").Set(awaiting)
	h.WithLabelValues("floor_decided_ids").Set(float64(f.decided.Len()))
	h.WithLabelValues("floor_events_queued").Set(float64(len(f.events.C)))
}

func (f *Floor) handle(ctx context.Context, e event) {
	if e.msg != nil {
		f.onMessage(ctx, *e.msg)
		return
	}
	f.onState(ctx, e.state)
}

// control handles everything the mailbox holds. Pings are answered last,
// after the Messages and States that were queued when they were taken.
func (f *Floor) control(ctx context.Context) {
	d := f.ctl.take()
	if d.flags&flagClaims != 0 {
		f.el.Tick(election.TickClaims)
	}
	for _, id := range sortedKeys(d.presence) {
		f.onPresence(ctx, d.presence[id])
	}
	for _, id := range sortedKeys(d.holds) {
		h := d.holds[id]
		if h.Held && f.present[h.From] {
			f.holds[h.From] = true
		} else {
			delete(f.holds, h.From)
		}
	}
	for _, id := range sortedKeys(d.speaking) {
		e := d.speaking[id]
		if e.Cleared || !e.Speaking.Speaking {
			delete(f.voices, id)
			continue
		}
		f.voices[id] = f.cfg.Clock.Now().Add(time.Duration(e.Speaking.DurationMs)*time.Millisecond + protocol.VoiceMargin)
	}
	for _, g := range d.grants {
		f.onGrant(g)
	}
	if d.flags&flagLost != 0 {
		if !f.deaf {
			f.deaf, f.deafSince = true, f.cfg.Clock.Now()
		}
		f.el.Lost()
	}
	if d.flags&flagReconnected != 0 {
		f.reconnected()
	}
	for _, id := range sortedKeys(d.orphans) {
		f.adopt(id)
	}
	for _, id := range sortedKeys(d.deadlines) {
		// While the floor cannot hear, a deadline waits: the votes may be
		// on their way (reconnected extends it).
		if b, ok := f.pending[id]; ok && !f.deaf && !f.cfg.Clock.Now().Before(b.deadline) {
			f.decide(b, protocol.DecidedDeadline)
		}
	}
	if d.flags&flagJoin != 0 {
		f.el.Tick(election.TickJoin)
	}
	if d.flags&flagClaimCheck != 0 {
		f.el.Tick(election.TickCheck)
	}
	if d.flags&flagLease != 0 {
		f.el.Tick(election.TickLease)
	}
	if d.flags&flagRegrant != 0 {
		f.regrant()
	}
	if d.flags&flagEnd != 0 {
		f.end()
	}
	if len(d.barriers) > 0 {
		for n := len(f.events.C); n > 0; n-- {
			f.handle(ctx, <-f.events.C)
		}
		for _, b := range d.barriers {
			close(b)
		}
	}
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func (f *Floor) publish(g protocol.TurnGrant) {
	if err := f.cfg.Room.QueueGrant(f.out, g); err != nil {
		f.log.Error("floor: grant not published", "message", g.MessageID, "err", err)
	}
}
