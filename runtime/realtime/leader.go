package realtime

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/chorus-robotics/chorus/runtime/bus"
	"github.com/chorus-robotics/chorus/runtime/clock"
	"github.com/chorus-robotics/chorus/runtime/election"
	"github.com/chorus-robotics/chorus/runtime/loop"
	"github.com/chorus-robotics/chorus/runtime/room"
)

// Leader decides whether this instance's realtime floors run the room, by
// the room's one election (runtime/election), on the same retained
// floor/leader claim as the turn floor; its Last Will is the floor
// connection's, election.Will. A claim that never comes back from the
// broker (an ACL that refuses floor/leader) is logged as CANNOT CLAIM THE
// ROOM, counted and tried again, and the floors run nothing meanwhile. A
// floor that takes over ends the phase its predecessor left open (reason
// floor_changed): the counts of that phase died with it.
type Leader struct {
	Room     *room.Room
	Instance string
	ID       string        // the floor identity the claim is published as (for the log)
	JoinWait time.Duration // default election.DefaultJoinWait
	// ClaimCheck is how long the leader waits to read its claim back;
	// Retry how long after a failed claim it claims again. Defaults
	// election.DefaultClaimCheck and election.DefaultRetry.
	ClaimCheck time.Duration
	Retry      time.Duration
	Clock      clock.Clock

	active atomic.Bool
	mu     sync.Mutex
	hooks  []func(active bool)
}

// EndFloorChanged is the end reason of a phase whose floor died.
const EndFloorChanged = "floor_changed"

// Active reports whether this instance runs the room now.
func (l *Leader) Active() bool { return l.active.Load() }

// OnChange registers f, told every change of Active (on the leader's
// goroutine; it must not block).
func (l *Leader) OnChange(f func(active bool)) {
	l.mu.Lock()
	l.hooks = append(l.hooks, f)
	l.mu.Unlock()
}

func (l *Leader) set(active bool) {
	l.active.Store(active)
	l.mu.Lock()
	hooks := append([]func(bool){}, l.hooks...)
	l.mu.Unlock()
	for _, h := range hooks {
		h(active)
	}
}

// Run follows the claims and claims the room when it may, until ctx ends.
func (l *Leader) Run(ctx context.Context) error {
	r := l.Room
	log := r.Log.With("realtime", r.Name, "instance", l.Instance)
	out := &bus.Outbox{Bus: r.Bus, Log: log, Timeout: 10 * time.Second,
		OnDrop: func(string, error) { r.Metrics.PublishDropped.WithLabelValues("realtime").Inc() }}
	// The leader's mailbox: the election keeps the claims; the ticks and
	// a reconnect are flags. Nothing is ever dropped.
	wake := loop.NewSignal()
	var mu sync.Mutex
	ticks := map[election.Tick]bool{}
	reconnected, lost := false, false
	el, err := election.New(election.Config{Room: r, Identity: l.ID, Instance: l.Instance, Clock: l.Clock, Log: log,
		JoinWait: l.JoinWait, ClaimCheck: l.ClaimCheck, Retry: l.Retry, Send: out.Send,
		Wake: func(t election.Tick) {
			mu.Lock()
			ticks[t] = true
			mu.Unlock()
			wake.Wake()
		},
		OnChange: func(active bool) {
			log.Info("realtime: floor", "active", active)
			l.set(active)
		}})
	if err != nil {
		return fmt.Errorf("realtime leader: %w", err)
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	defer wg.Wait()
	wg.Add(1)
	go func() { defer wg.Done(); out.Run(ctx) }()
	if rc, ok := r.Bus.(interface{ OnReconnect(func()) }); ok {
		rc.OnReconnect(func() {
			mu.Lock()
			reconnected = true
			mu.Unlock()
			wake.Wake()
		})
	}
	if rc, ok := r.Bus.(interface{ OnLost(func()) }); ok {
		rc.OnLost(func() {
			mu.Lock()
			lost = true
			mu.Unlock()
			wake.Wake()
		})
	}
	if err := el.Subscribe(ctx); err != nil {
		return fmt.Errorf("realtime leader: %w", err)
	}
	el.Start()
	defer el.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-wake.C:
		}
		mu.Lock()
		took, again, away := ticks, reconnected, lost
		ticks, reconnected, lost = map[election.Tick]bool{}, false, false
		mu.Unlock()
		if away {
			el.Lost()
		}
		for _, t := range []election.Tick{election.TickClaims, election.TickJoin, election.TickCheck, election.TickLease} {
			if took[t] {
				el.Tick(t)
			}
		}
		if again {
			el.Reconnected()
		}
	}
}
