// Package election elects the one floor instance that runs a room, for
// the turn floor (runtime/floor) and the realtime floors
// (runtime/realtime) alike (docs/protocol.md, "Floor leader claim"): the
// others stand by and take over.
//
// Every floor instance of a room follows the retained claim on the room's
// floor/leader topic (protocol.LeaderClaim); the claim's Last Will (Will)
// marks it offline when the instance's connection dies. An instance that
// starts listens JoinWait for an online claim; without one it claims. A
// standby claims when the active instance's claim goes offline. Of two
// that claim at once, the lower instance name keeps the room.
//
// # Lease
//
// A Last Will needs the broker that held the connection: when a node of a
// clustered broker dies, the wills of its connections die with it (issue
// 31). So the active instance also says every Beat, not retained, that
// it still leads (its claim, with the time it began to lead), and a
// standby that hears nothing of it for Lease while itself connected
// claims the room. The newer claim keeps the room (of two made at once,
// the lower name): a leader that was cut off leads again only once it
// has read its claim back and JoinWait has passed since, and on the way
// it reads the newer claim of a standby that took over, and stands by
// (its books missed what the room did meanwhile). The JoinWait covers a
// standby whose Lease ran out in the moment the leader came back: their
// claims cross on the broker, and the leader's own may come back first.
//
// An instance is active only once it has read its own claim back from the
// broker: a claim that does not come back within ClaimCheck (most likely
// an ACL that refuses the floor identity floor/leader) is logged loudly
// ("CANNOT CLAIM THE ROOM"), counted (chorus_floor_claim_failures_total)
// and tried again after Retry; meanwhile the instance does not lead, so two
// floors can never both run the room.
//
// # Usage
//
// The host (a floor's event loop) makes an Election with New, hands it the
// claims it hears (Subscribe, or Put), and calls Tick with every Tick the
// election's Wake asks for, on its own loop. OnChange tells the host when
// it starts or stops leading.
//
// # Concurrency
//
// Put, Subscribe's handler, the timers and Active may run on any
// goroutine; Put keeps the latest claim per instance (a bounded mailbox
// that never drops a claim of a known instance) and asks Wake for
// TickClaims. Everything else — Start, Tick, Reconnected, Stop — runs on
// the host's loop, which owns the election's state.
package election

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/chorus-robotics/chorus/runtime/bus"
	"github.com/chorus-robotics/chorus/runtime/clock"
	"github.com/chorus-robotics/chorus/runtime/metrics"
	"github.com/chorus-robotics/chorus/runtime/protocol"
	"github.com/chorus-robotics/chorus/runtime/room"
	"github.com/chorus-robotics/chorus/runtime/topic"
)

// Defaults.
const (
	DefaultJoinWait   = 500 * time.Millisecond
	DefaultClaimCheck = 2 * time.Second
	DefaultRetry      = 5 * time.Second
	// DefaultBeat is how often the active instance says it leads.
	DefaultBeat = 500 * time.Millisecond
	// DefaultLease is how long a standby waits without hearing the active
	// instance before it claims: with a 3 s vote_timeout the room then
	// goes on within vote_timeout + 2 s of losing its floor's broker node.
	DefaultLease = 2500 * time.Millisecond
	// MaxInstances bounds the floor instances whose claims are kept at
	// once; a flood of made-up instance names beyond it is refused.
	MaxInstances = 16
)

// Tick is a piece of the election's work that the host runs on its loop.
type Tick int

// The ticks Wake asks for.
const (
	TickClaims Tick = iota + 1 // claims arrived (Put)
	TickJoin                   // JoinWait, or a failed claim's Retry, passed: claim if nobody leads (or, returning, lead)
	TickCheck                  // ClaimCheck passed: has our claim come back?
	TickLease                  // Beat passed (leading: say so), or a standby's Lease check
)

// Config configures an Election.
type Config struct {
	Room     *room.Room // the room elected for: its scheme, name, metrics
	Identity string     // the floor identity the claim is published as (named in the log)
	Instance string     // this floor process's name, unique in the room
	Clock    clock.Clock
	Log      *slog.Logger

	JoinWait   time.Duration // how long to listen for a retained claim before claiming; default 500 ms
	ClaimCheck time.Duration // how long to wait for our claim to come back; default 2 s
	Retry      time.Duration // how long after a claim that never came back to claim again; default 5 s
	Beat       time.Duration // how often the active instance says it leads; default DefaultBeat
	Lease      time.Duration // how long a standby waits without hearing the leader; default DefaultLease

	// Send queues the retained claim for publishing (the host's outbox;
	// the loop never waits on the network); false if it could not.
	Send func(topic string, payload []byte, retain bool) bool
	// Wake asks the host to call Tick(t) on its loop. It is called from
	// timers and bus handlers and must not block.
	Wake func(t Tick)
	// OnChange is told, on the host's loop, every change of Active.
	OnChange func(active bool)
}

// Election is one floor instance's part in its room's election.
type Election struct {
	cfg   Config
	topic string
	log   *slog.Logger
	m     *metrics.Metrics

	active atomic.Bool

	mu     sync.Mutex
	claims map[string]protocol.LeaderClaim // latest per instance, not yet handled
	timers map[Tick]clock.Timer            // the pending timer of each kind

	// owned by the host's loop
	leader      string    // the instance believed to lead ("" when none is known)
	claimSince  time.Time // our claim awaiting read-back; zero when none
	activeSince time.Time // when our claim that made us active was made
	heard       time.Time // when a standby last heard the leader (or came back itself)
	away        bool      // our connection is lost: silence is ours, not the leader's
	// returning: we led, were cut off and claim again (Reconnected);
	// settling: that claim came back, and we wait JoinWait for a newer one
	// before leading (see Reconnected).
	returning, settling bool
}

// New checks cfg and returns an Election; Start starts its join wait.
func New(cfg Config) (*Election, error) {
	if cfg.Room == nil {
		return nil, errors.New("election: no room")
	}
	if why := protocol.ValidIdentity(cfg.Instance); cfg.Instance == "" || why != "" {
		return nil, fmt.Errorf("election: instance name %q: %s", cfg.Instance, why)
	}
	if cfg.Send == nil || cfg.Wake == nil {
		return nil, errors.New("election: Send and Wake are required")
	}
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	def(&cfg.JoinWait, DefaultJoinWait)
	def(&cfg.ClaimCheck, DefaultClaimCheck)
	def(&cfg.Retry, DefaultRetry)
	def(&cfg.Beat, DefaultBeat)
	def(&cfg.Lease, DefaultLease)
	if cfg.Clock == nil {
		cfg.Clock = clock.Real{}
	}
	if cfg.OnChange == nil {
		cfg.OnChange = func(bool) {}
	}
	log := cfg.Log
	if log == nil {
		log = cfg.Room.Log
	}
	return &Election{cfg: cfg, topic: cfg.Room.Scheme.FloorLeader(cfg.Room.Name), log: log, m: cfg.Room.Metrics,
		claims: map[string]protocol.LeaderClaim{}, timers: map[Tick]clock.Timer{}}, nil
}

// Will is the Last Will a floor instance's bus connection must carry, so
// that a standby learns at once when the instance dies.
func Will(s topic.Scheme, roomName, instance string) *bus.Retained {
	b, _ := json.Marshal(protocol.LeaderClaim{Instance: instance, Online: false, Since: time.Now().UTC()})
	return &bus.Retained{Topic: s.FloorLeader(roomName), Payload: b}
}

// Active reports whether this instance runs the room now (any goroutine).
func (e *Election) Active() bool { return e.active.Load() }

// Subscribe follows the room's claims until ctx ends: each is decoded
// strictly (a bad one is rejected and counted) and Put.
func (e *Election) Subscribe(ctx context.Context) error {
	r := e.cfg.Room
	err := r.Bus.Subscribe(ctx, e.topic, func(_ string, b []byte) {
		if len(b) == 0 {
			return // a cleared retained claim
		}
		c, err := protocol.DecodeLeaderClaim(b, r.MaxBytes)
		if err != nil {
			e.m.Reject(e.log, "leader", "", string(protocol.KindOf(err)), fmt.Errorf("bad leader claim: %w", err))
			return
		}
		e.Put(c)
	})
	if err != nil {
		return fmt.Errorf("election: subscribe %s: %w", e.topic, err)
	}
	return nil
}

// Put hands the election a claim heard on the bus; it keeps the latest of
// each instance until the host's loop takes them (TickClaims). A claim of
// an instance beyond MaxInstances is refused and counted (false).
func (e *Election) Put(c protocol.LeaderClaim) bool {
	e.mu.Lock()
	_, known := e.claims[c.Instance]
	ok := known || len(e.claims) < MaxInstances
	if ok {
		e.claims[c.Instance] = c
	}
	e.mu.Unlock()
	if !ok {
		e.m.Reject(e.log, "leader", c.Instance, "too_many",
			fmt.Errorf("more than %d floor instances claim room %s", MaxInstances, e.cfg.Room.Name))
		return false
	}
	e.cfg.Wake(TickClaims)
	return true
}

// Start starts the join wait (on the host's loop).
func (e *Election) Start() {
	e.after(e.cfg.JoinWait, TickJoin)
	e.after(e.cfg.Beat, TickLease)
}

// Stop stops the election's timers and steps down (on the host's loop,
// when it ends).
func (e *Election) Stop() {
	e.mu.Lock()
	for t, tm := range e.timers {
		tm.Stop()
		delete(e.timers, t)
	}
	e.mu.Unlock()
	e.setActive(false)
}

// after asks Wake for t after d; a newer wait of the same kind replaces
// the older (a claim announced again gets its full ClaimCheck).
func (e *Election) after(d time.Duration, t Tick) {
	tm := e.cfg.Clock.AfterFunc(d, func() { e.cfg.Wake(t) })
	e.mu.Lock()
	if old := e.timers[t]; old != nil {
		old.Stop()
	}
	e.timers[t] = tm
	e.mu.Unlock()
}

// Tick runs t on the host's loop.
func (e *Election) Tick(t Tick) {
	switch t {
	case TickClaims:
		e.mu.Lock()
		cs := e.claims
		e.claims = map[string]protocol.LeaderClaim{}
		e.mu.Unlock()
		insts := make([]string, 0, len(cs))
		for i := range cs {
			insts = append(insts, i)
		}
		sort.Strings(insts)
		for _, i := range insts {
			e.onClaim(cs[i])
		}
	case TickJoin:
		if e.settling {
			e.settled()
			return
		}
		if e.leader == "" && !e.Active() && e.claimSince.IsZero() {
			e.claim("no active floor")
		}
	case TickCheck:
		e.check()
	case TickLease:
		e.lease()
	}
}

// lease runs every Beat: the leader says it still leads; a standby whose
// leader has been silent for Lease claims the room.
func (e *Election) lease() {
	defer e.after(e.cfg.Beat, TickLease)
	switch {
	case e.Active():
		b, _ := json.Marshal(protocol.LeaderClaim{Instance: e.cfg.Instance, Online: true, Since: e.activeSince})
		e.cfg.Send(e.topic, b, false)
	case e.away || e.claiming() || e.leader == "" || e.leader == e.cfg.Instance || e.heard.IsZero():
	case e.cfg.Clock.Now().Sub(e.heard) >= e.cfg.Lease:
		silent := e.cfg.Clock.Now().Sub(e.heard)
		e.log.Warn("floor: the active floor has been silent; claiming the room", "other", e.leader, "silent", silent.Round(time.Millisecond))
		e.claim(fmt.Sprintf("active floor %s silent for %v", e.leader, silent.Round(time.Millisecond)))
	}
}

// Reconnected runs after the host's connection came back: a restarted
// broker forgot the retained claim, so the leader says again that it
// leads (with the time it began to lead: a standby that took over while
// it was away keeps the room); a standby gives the leader a full Lease,
// since it heard nothing while it was away itself.
//
// The leader leads again only once its claim is read back and JoinWait
// has passed since with no newer claim heard. A standby that took the
// room meanwhile has its newer claim retained, read on the renewed
// subscription first. But a standby whose Lease ran out in the same
// moment claims while ours is on its way: the two claims cross, and
// ours may come back before the standby's reaches us. Leading on the
// read-back alone would then make two floors lead at once until the
// standby's claim arrives — long enough to grant a Message twice.
func (e *Election) Reconnected() {
	e.away = false
	if e.Active() || e.returning {
		e.setActive(false)
		e.returning, e.settling = true, false
		e.claimSince = e.activeSince
		e.publish(e.activeSince)
		e.after(e.cfg.ClaimCheck, TickCheck)
		return
	}
	e.heard = e.cfg.Clock.Now()
}

// settled: JoinWait has passed since our returning claim came back, and
// no newer claim took the room meanwhile (that would have cleared
// claimSince).
func (e *Election) settled() {
	if !e.settling {
		return
	}
	e.settling, e.returning = false, false
	if !e.claiming() {
		return
	}
	e.claimed()
}

// Lost runs when the host's connection is lost: until Reconnected, a
// standby does not count the leader's silence.
func (e *Election) Lost() { e.away = true }

func (e *Election) setActive(on bool) {
	if e.active.Swap(on) == on {
		return
	}
	e.cfg.OnChange(on)
}

func (e *Election) claiming() bool { return !e.claimSince.IsZero() }

func (e *Election) onClaim(c protocol.LeaderClaim) {
	me := e.cfg.Instance
	switch {
	case c.Instance == me:
		switch {
		case c.Online && e.claiming() && c.Since.Equal(e.claimSince) && e.returning:
			if !e.settling { // back from a cut: a crossing newer claim may still come
				e.settling = true
				e.after(e.cfg.JoinWait, TickJoin)
			}
		case c.Online && e.claiming() && c.Since.Equal(e.claimSince):
			e.claimed()
		case !c.Online && (e.Active() || e.claiming()):
			e.announce() // a stale will of ours: say again that we lead
		}
	case c.Online:
		if e.Active() || e.claiming() {
			ours := e.claimSince
			if e.Active() {
				ours = e.activeSince
			}
			// The newer claim keeps the room (one made after ours was made
			// while we were cut off, or silent); of two made at once, the
			// lower instance name.
			if c.Since.Before(ours) || (c.Since.Equal(ours) && me < c.Instance) {
				e.announce()
				return
			}
			e.log.Warn("floor: another floor claims the room; standing by", "other", c.Instance)
			e.claimSince = time.Time{}
			e.returning, e.settling = false, false
			e.setActive(false)
		}
		e.leader = c.Instance
		e.heard = e.cfg.Clock.Now()
	default: // another instance went offline
		if e.Active() || e.claiming() {
			e.announce() // its will overwrote our retained claim
			return
		}
		if e.leader == "" || e.leader == c.Instance {
			e.claim("active floor " + c.Instance + " went offline")
		}
	}
}

// claim publishes our claim; the instance leads once it reads the claim
// back (claimed).
func (e *Election) claim(why string) {
	e.leader = e.cfg.Instance
	e.log.Info("floor: claiming the room", "why", why)
	e.announce()
}

// claimed: the broker handed our claim back, so every floor sees it.
func (e *Election) claimed() {
	since := e.claimSince
	e.claimSince = time.Time{}
	if e.Active() {
		return
	}
	e.activeSince = since
	e.log.Info("floor: active")
	e.setActive(true)
}

// check runs ClaimCheck after a claim: if it has not come back, the broker
// dropped it (most likely an ACL without floor/leader), and leading on it
// could make two floors run the room.
func (e *Election) check() {
	if !e.claiming() || e.Active() || e.settling {
		return
	}
	e.m.ClaimFailures.Inc()
	e.log.Error("floor: CANNOT CLAIM THE ROOM: the leader claim did not come back from the broker; leading nothing until it does",
		"topic", e.topic, "identity", e.cfg.Identity, "waited", e.cfg.ClaimCheck,
		"likely", "the broker's ACL does not let this identity write floor/leader (render it with chorus acl)", "retry_in", e.cfg.Retry)
	e.claimSince = time.Time{}
	e.leader = ""
	e.returning = false
	e.after(e.cfg.Retry, TickJoin)
}

// announce publishes our claim, retained: the one that made us active,
// the one awaiting read-back, or else one made now (it must come back to
// make us active).
func (e *Election) announce() {
	switch {
	case e.Active():
		e.publish(e.activeSince)
	case e.claiming():
		e.publish(e.claimSince) // the claim awaiting read-back, said again
	default:
		e.claimSince = e.cfg.Clock.Now().UTC()
		e.publish(e.claimSince)
		e.after(e.cfg.ClaimCheck, TickCheck)
	}
}

// publish queues our claim made at since, retained.
func (e *Election) publish(since time.Time) {
	b, _ := json.Marshal(protocol.LeaderClaim{Instance: e.cfg.Instance, Online: true, Since: since})
	if !e.cfg.Send(e.topic, b, true) {
		e.log.Error("floor: leader claim not queued (outbox full)")
	}
}
