package realtime

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/chorus-robotics/chorus/runtime/bus"
	"github.com/chorus-robotics/chorus/runtime/clock"
	"github.com/chorus-robotics/chorus/runtime/floor"
	"github.com/chorus-robotics/chorus/runtime/protocol"
	"github.com/chorus-robotics/chorus/runtime/room"
)

// Leader decides whether this instance's realtime floors run the room, on
// the same retained floor/leader claim as the turn floor (its Last Will is
// the floor connection's, floor.LeaderWill): an instance that starts
// listens JoinWait for an online claim; without one it claims; a standby
// claims when the active one's claim goes offline. Of two that claim at
// once, the lower instance id keeps the room. A floor that takes over ends
// the phase its predecessor left open (reason floor_changed): the counts
// of that phase died with it.
type Leader struct {
	Room     *room.Room
	Instance string
	JoinWait time.Duration // default 500 ms
	Clock    clock.Clock

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

func (l *Leader) set(active bool, log *slog.Logger) {
	if l.active.Swap(active) == active {
		return
	}
	log.Info("realtime: floor", "active", active)
	l.mu.Lock()
	hooks := append([]func(bool){}, l.hooks...)
	l.mu.Unlock()
	for _, h := range hooks {
		h(active)
	}
}

// Run follows the claims and claims the room when it may, until ctx ends.
func (l *Leader) Run(ctx context.Context) error {
	if l.Clock == nil {
		l.Clock = clock.Real{}
	}
	if l.JoinWait <= 0 {
		l.JoinWait = 500 * time.Millisecond
	}
	r := l.Room
	log := r.Log.With("realtime", r.Name, "instance", l.Instance)
	out := &bus.Outbox{Bus: r.Bus, Log: log}
	claims := make(chan floor.Claim, 64)
	joined := make(chan struct{}, 1)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	defer wg.Wait()
	wg.Add(1)
	go func() { defer wg.Done(); out.Run(ctx) }()
	if err := r.Bus.Subscribe(ctx, r.Scheme.FloorLeader(r.Name), func(_ string, b []byte) {
		var c floor.Claim
		if len(b) == 0 || json.Unmarshal(b, &c) != nil || protocol.ValidIdentity(c.Instance) != "" {
			return
		}
		select {
		case claims <- c:
		default:
		}
	}); err != nil {
		return fmt.Errorf("realtime leader: %w", err)
	}
	announce := func() {
		b, _ := json.Marshal(floor.Claim{Instance: l.Instance, Online: true, Since: l.Clock.Now().UTC()})
		out.Send(r.Scheme.FloorLeader(r.Name), b, true)
	}
	t := l.Clock.AfterFunc(l.JoinWait, func() { joined <- struct{}{} })
	defer t.Stop()
	leader := "" // the instance whose online claim was seen last
	claiming := false
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-joined:
			if leader == "" {
				claiming = true
				announce()
			}
		case c := <-claims:
			switch {
			case c.Instance == l.Instance && c.Online:
				if claiming || l.Active() {
					l.set(true, log) // our claim came back: every floor sees it
				}
			case c.Instance == l.Instance: // a stale will of ours
				if claiming || l.Active() {
					announce()
				}
			case c.Online:
				if (claiming || l.Active()) && l.Instance < c.Instance {
					announce()
					continue
				}
				claiming = false
				leader = c.Instance
				l.set(false, log)
			case leader == c.Instance || leader == "": // the active one went offline
				leader, claiming = "", true
				announce()
			}
		}
	}
}
