// Package floor decides who speaks next in a room (DESIGN.md, "Floor
// control", turn mode).
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
// reconnect the floor says again that it leads and gives pending votes a
// grace period, since it could not hear while it was away.
//
// # Standby
//
// Several floors may run for one room. They elect one through a retained
// claim on the room's floor/leader topic, whose Last Will marks the claim
// offline. A floor is active only once it has read its own claim back from
// the broker: a claim that never comes back (an ACL that denies it) is
// logged loudly and retried, and the floor grants nothing meanwhile, so
// two floors can never both grant. The standby keeps the same books (it
// shadows every vote) but publishes nothing; when the active floor's
// claim goes offline it claims the floor and announces any decision the
// old floor did not. Two floors that both claim settle it by instance
// name: the lower wins.
//
// # Concurrency
//
// One goroutine (Run) owns all state. Bus callbacks and timers never
// block: Messages and States go into a bounded queue (a full queue drops
// and counts them); control events (presence, holds, claims, grants seen,
// timers) go into a mailbox that keeps the latest of each and never drops
// one. Publishes go through an outbox, so the loop never waits on the
// network. Time comes from a clock.Clock, so tests drive deadlines with a
// fake clock.
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
	early       map[string]earlyState    // per voter: its newest State whose Message has not arrived
	done        *seen.Set                // message ids whose grant was seen on the bus
	awaiting    *awaited                 // the grant whose speaker has not answered yet
	last        lastGrant                // the newest grant decided or seen, for a takeover
	deaf        bool                     // the connection is lost: deadlines wait for it to come back
	orphans     map[string]bool          // message ids known only from States, waiting OrphanGrace
	think       map[string]time.Duration // each present companion's announced think time
	voices      map[string]time.Time     // who is speaking, until when at the latest
}

// earlyState is a State that arrived before its Message. MQTT orders
// messages per publisher only: a broker that fans out on several threads
// (mochi) or a cluster can hand the floor a companion's State before the
// Message it answers. Such a State waits (for one vote timeout) for its
// Message instead of being dropped. Each voter keeps only its newest, so
// a flood from one voter can never push out another's.
type earlyState struct {
	s  protocol.StateParams
	at time.Time
}

// awaited is a grant whose speaker has not answered yet.
type awaited struct {
	g     protocol.TurnGrant
	since time.Time
	timer clock.Timer
}

// lastGrant is the newest grant and the message count when it was made.
type lastGrant struct {
	g   protocol.TurnGrant
	seq uint64
}

type ballot struct {
	msg          protocol.Message
	arrived      time.Time
	deadline     time.Time
	seq          uint64
	participants map[string]bool
	votes        map[string]protocol.StateParams
	timer        clock.Timer
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

// wake hands an election tick to the loop.
func (f *Floor) wake(t election.Tick) {
	switch t {
	case election.TickClaims:
		f.ctl.flag(flagClaims)
	case election.TickJoin:
		f.ctl.flag(flagJoin)
	case election.TickCheck:
		f.ctl.flag(flagClaimCheck)
	}
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

// Active reports whether this floor currently decides for the room.
func (f *Floor) Active() bool { return f.el.Active() }

// onLeader follows the election: leading, the floor takes over what its
// predecessor left; standing by, it stops waiting for an answer.
func (f *Floor) onLeader(on bool) {
	if on {
		f.m.FloorActive.Set(1)
		f.takeOver()
		return
	}
	f.m.FloorActive.Set(0)
	f.stopAwaiting()
}

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
		f.deaf = true
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
	if d.flags&flagRegrant != 0 {
		f.regrant()
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

func (f *Floor) onMessage(ctx context.Context, m protocol.Message) {
	id := m.Params.ID
	if _, dup := f.pending[id]; dup || f.decided.Has(id) {
		f.m.DroppedStates.WithLabelValues("duplicate_message").Inc()
		return
	}
	// Any new message ends the wait for the last grant's answer: it is the
	// answer, or newer words that void it.
	f.stopAwaiting()
	f.seq++
	if len(f.lastSpoke) >= maxLastSpoke {
		f.lastSpoke = map[string]uint64{}
	}
	if m.Params.From != "" { // "" when adopted from its States
		f.lastSpoke[m.Params.From] = f.seq
	}
	for len(f.pending) >= f.cfg.MaxPending {
		f.evictOldest()
	}
	now := f.cfg.Clock.Now()
	b := &ballot{msg: m, arrived: now, seq: f.seq, participants: map[string]bool{}, votes: map[string]protocol.StateParams{}}
	for c := range f.present {
		if c != m.Params.From {
			b.participants[c] = true
		}
	}
	f.pending[id] = b
	if len(b.participants) == 0 {
		f.decide(b, protocol.DecidedAllVoted)
		return
	}
	f.setDeadline(b, now.Add(f.window(b)))
	for voter, e := range f.early {
		if e.s.MessageID != id {
			continue
		}
		delete(f.early, voter)
		if _, open := f.pending[id]; open {
			f.onState(ctx, e.s)
		}
	}
}

// window is how long b's vote may take: the slowest announced think time
// of its participants plus a margin, within [VoteTimeout, VoteCeiling].
func (f *Floor) window(b *ballot) time.Duration {
	w := f.cfg.VoteTimeout
	for p := range b.participants {
		if t := f.think[p]; t > 0 {
			w = max(w, t+thinkMargin)
		}
	}
	return min(w, f.cfg.VoteCeiling)
}

func (f *Floor) setDeadline(b *ballot, at time.Time) {
	if b.timer != nil {
		b.timer.Stop()
	}
	b.deadline = at
	id := b.msg.Params.ID
	b.timer = f.cfg.Clock.AfterFunc(at.Sub(f.cfg.Clock.Now()), func() { f.ctl.deadline(id) })
}

// keepEarly holds a State whose Message has not arrived yet: the newest
// per voter, for one vote timeout. The first State for a message starts
// its OrphanGrace: if the message is still missing then, it was lost on
// its way to the floor, and the States open the ballot (adopt).
func (f *Floor) keepEarly(s protocol.StateParams) {
	if old, ok := f.early[s.From]; ok && old.s.MessageID != s.MessageID {
		f.m.DroppedStates.WithLabelValues("unknown_message").Inc()
	}
	if id := s.MessageID; !f.orphans[id] && len(f.orphans) < maxOrphans {
		f.orphans[id] = true
		f.cfg.Clock.AfterFunc(f.cfg.OrphanGrace, func() { f.ctl.orphan(id) })
	}
	f.early[s.From] = earlyState{s: s, at: f.cfg.Clock.Now()}
	for voter, e := range f.early {
		if f.cfg.Clock.Now().Sub(e.at) >= f.cfg.VoteTimeout {
			delete(f.early, voter)
			f.m.DroppedStates.WithLabelValues("unknown_message").Inc()
		}
	}
}

// adopt opens the ballot for message id from the States that name it: the
// message itself never reached the floor (a broker dropped it), but the
// companions that heard it voted, and the floor needs no more than its id.
// Its sender is unknown, so every present member is a participant; the
// deadline covers the one that sent it.
func (f *Floor) adopt(id string) {
	delete(f.orphans, id)
	if _, open := f.pending[id]; open || f.decided.Has(id) {
		return
	}
	voted := false
	for _, e := range f.early {
		voted = voted || e.s.MessageID == id
	}
	if !voted {
		return
	}
	f.log.Warn("floor: votes arrived for a message the floor never received; deciding on them", "message", id)
	f.m.Recovered.WithLabelValues("message").Inc()
	f.onMessage(context.Background(), protocol.Message{JSONRPC: protocol.JSONRPC, Method: protocol.MethodMessage,
		Params: protocol.MessageParams{ID: id, To: []string{}}})
}

func (f *Floor) evictOldest() {
	var oldest *ballot
	for _, b := range f.pending {
		if oldest == nil || b.seq < oldest.seq {
			oldest = b
		}
	}
	if oldest != nil {
		f.finish(oldest, Decision{Reason: protocol.ReasonExpired}, protocol.DecidedEvicted)
	}
}

func (f *Floor) onState(ctx context.Context, s protocol.StateParams) {
	b, ok := f.pending[s.MessageID]
	switch {
	case !ok && f.decided.Has(s.MessageID):
		f.m.LateStates.Inc()
		return
	case !ok:
		f.keepEarly(s)
		return
	case !b.participants[s.From]:
		f.m.DroppedStates.WithLabelValues("not_participant").Inc()
		return
	}
	f.m.Votes.Inc()
	b.votes[s.From] = s // the last State before the decision counts
	if len(b.votes) == len(b.participants) {
		f.decide(b, protocol.DecidedAllVoted)
	}
}

func (f *Floor) onPresence(ctx context.Context, p room.PresenceEvent) {
	online := !p.Cleared && p.Presence.Online
	if online {
		if !f.present[p.ID] && len(f.present) >= MaxPresent {
			f.m.Reject(f.log, "presence", p.ID, "too_many", fmt.Errorf("more than %d companions present; %s ignored", MaxPresent, p.ID))
			return
		}
		f.present[p.ID] = true
		think := min(time.Duration(p.Presence.ThinkMs)*time.Millisecond, f.cfg.VoteCeiling)
		longer := think > f.think[p.ID]
		f.think[p.ID] = think
		if longer { // it expects to think longer now: stretch the votes it owes
			for _, b := range f.pending {
				if _, voted := b.votes[p.ID]; b.participants[p.ID] && !voted {
					if at := b.arrived.Add(f.window(b)); at.After(b.deadline) {
						f.setDeadline(b, at)
					}
				}
			}
		}
		return
	}
	delete(f.think, p.ID)
	delete(f.present, p.ID)
	delete(f.holds, p.ID) // a hold ends with the body that held it
	if f.awaiting != nil && f.awaiting.g.SpeakerID() == p.ID {
		f.log.Warn("floor: the granted speaker left before answering", "speaker", p.ID, "message", f.awaiting.g.MessageID)
		f.stopAwaiting()
	}
	// A companion that left cannot vote: stop waiting for it.
	for _, b := range f.sortedPending() {
		if b.participants[p.ID] {
			if _, voted := b.votes[p.ID]; !voted {
				delete(b.participants, p.ID)
				if len(b.votes) == len(b.participants) {
					f.decide(b, protocol.DecidedAllVoted)
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

func (f *Floor) decide(b *ballot, by string) {
	if len(f.holds) > 0 {
		f.finish(b, Decision{Reason: protocol.ReasonHeld}, by)
		return
	}
	f.finish(b, Decide(b.votes, f.lastSpoke), by)
}

func (f *Floor) finish(b *ballot, d Decision, by string) {
	id := b.msg.Params.ID
	if b.timer != nil {
		b.timer.Stop()
	}
	delete(f.pending, id)
	f.decided.Add(id)
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
	if len(g.Votes) == 0 && len(g.Missing) > 0 && by == protocol.DecidedDeadline {
		announced := time.Duration(0)
		for _, p := range g.Missing {
			announced = max(announced, f.think[p])
		}
		f.log.Warn("floor: no vote arrived before the deadline; the room rests",
			"message", id, "missing", g.Missing, "waited", b.deadline.Sub(b.arrived).Round(time.Millisecond),
			"slowest_announced_think", announced, "vote_ceiling", f.cfg.VoteCeiling,
			"likely", "the companions' brains answer slower than they announce or than room.vote_ceiling allows (a slow or overloaded model), or their States are lost")
	}
	if b.seq >= f.last.seq {
		f.last = lastGrant{g: g, seq: b.seq}
	}
	if !f.Active() {
		if !f.done.Has(id) {
			f.unannounced = append(f.unannounced, g)
			if len(f.unannounced) > maxUnannounced {
				f.unannounced = f.unannounced[1:]
			}
		}
		return
	}
	f.m.TurnLatency.Observe(f.cfg.Clock.Now().Sub(b.arrived).Seconds())
	f.m.Grants.WithLabelValues(d.Reason).Inc()
	f.publish(g)
	if b.seq == f.seq {
		f.await(g)
	}
}

func (f *Floor) publish(g protocol.TurnGrant) {
	if err := f.cfg.Room.QueueGrant(f.out, g); err != nil {
		f.log.Error("floor: grant not published", "message", g.MessageID, "err", err)
	}
}

// await starts publishing g again until its speaker answers.
func (f *Floor) await(g protocol.TurnGrant) {
	f.stopAwaiting()
	if g.SpeakerID() == "" {
		return
	}
	f.awaiting = &awaited{g: g, since: f.cfg.Clock.Now()}
	f.awaiting.timer = f.cfg.Clock.AfterFunc(f.cfg.RegrantEvery, func() { f.ctl.flag(flagRegrant) })
}

func (f *Floor) stopAwaiting() {
	if f.awaiting != nil && f.awaiting.timer != nil {
		f.awaiting.timer.Stop()
	}
	f.awaiting = nil
}

// regrant publishes the awaited grant again: its speaker acts on it once,
// and answers it again if it already did (issue 9, defect 2).
func (f *Floor) regrant() {
	a := f.awaiting
	if a == nil || !f.Active() {
		return
	}
	if f.cfg.Clock.Now().Sub(a.since) >= f.cfg.RegrantFor {
		f.log.Warn("floor: the granted speaker never answered; the room rests", "speaker", a.g.SpeakerID(),
			"message", a.g.MessageID, "waited", f.cfg.RegrantFor)
		f.stopAwaiting()
		return
	}
	a.timer = f.cfg.Clock.AfterFunc(f.cfg.RegrantEvery, func() { f.ctl.flag(flagRegrant) })
	if f.someoneSpeaks() {
		// The granted companion waits for the voice before it answers
		// (overlapped turns): not an answer missing yet.
		a.since = a.since.Add(f.cfg.RegrantEvery)
		return
	}
	f.m.Regrants.Inc()
	f.publish(a.g)
}

// someoneSpeaks reports whether a present member's voice is being heard.
func (f *Floor) someoneSpeaks() bool {
	now := f.cfg.Clock.Now()
	for id, until := range f.voices {
		if f.present[id] && now.Before(until) {
			return true
		}
	}
	return false
}

func (f *Floor) onGrant(g protocol.TurnGrant) {
	if f.Active() {
		return
	}
	f.done.Add(g.MessageID)
	for i, u := range f.unannounced {
		if u.MessageID == g.MessageID {
			f.unannounced = append(f.unannounced[:i], f.unannounced[i+1:]...)
			break
		}
	}
	// What the active floor decided is what the companions act on: a
	// takeover repeats that, not our shadow of it.
	if f.last.g.MessageID == g.MessageID || f.last.g.MessageID == "" {
		f.last.g = g
	}
}

// takeOver runs when the floor starts to lead: it announces the
// decisions the old floor did not.
func (f *Floor) takeOver() {
	published := false
	for _, g := range f.unannounced {
		f.publish(g)
		published = published || g.MessageID == f.last.g.MessageID
	}
	f.unannounced = nil
	// Take over the wait for the last grant's answer if nothing came after:
	// the old floor may have died before its grant or the answer got through.
	if f.last.seq == f.seq && f.last.g.SpeakerID() != "" {
		if !published {
			f.publish(f.last.g)
		}
		f.await(f.last.g)
	}
}

// reconnected runs after the floor's connection came back: the broker may
// have restarted and forgotten the retained claim, and nothing was heard
// while away, so pending votes get a grace period (their States are sent
// again by the companions).
func (f *Floor) reconnected() {
	f.deaf = false
	f.el.Reconnected()
	now := f.cfg.Clock.Now()
	for _, b := range f.pending {
		if b.deadline.Sub(now) < reconnectGrace {
			f.setDeadline(b, now.Add(reconnectGrace))
		}
	}
}
