package election

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chorus-robotics/chorus/runtime/bus/bustest"
	"github.com/chorus-robotics/chorus/runtime/clock"
	"github.com/chorus-robotics/chorus/runtime/metrics"
	"github.com/chorus-robotics/chorus/runtime/protocol"
	"github.com/chorus-robotics/chorus/runtime/room"
	"github.com/chorus-robotics/chorus/runtime/topic"
)

// host is the test's event loop: it runs the election's ticks on the
// test goroutine, as a floor's loop does.
type host struct {
	t       *testing.T
	e       *Election
	conn    *bustest.MemConn
	cut     atomic.Bool // its connection is cut: nothing it sends arrives (Memory's Drop does the other way)
	mu      sync.Mutex
	ticks   []Tick
	changes []bool
}

func newHost(t *testing.T, mem *bustest.Memory, m *metrics.Metrics, clk clock.Clock, instance string, drop bool) *host {
	t.Helper()
	s := topic.New("")
	conn := mem.NamedConn(instance, nil, Will(s, "lr", instance))
	r := room.New(conn, s, "lr", nil, m)
	h := &host{t: t, conn: conn}
	e, err := New(Config{Room: r, Identity: "floor", Instance: instance, Clock: clk,
		Send: func(topic string, p []byte, retain bool) bool {
			if drop || h.cut.Load() {
				return true // queued, and the broker's ACL drops it
			}
			if err := conn.Publish(context.Background(), topic, p, retain); err != nil {
				t.Errorf("publish claim: %v", err)
			}
			return true
		},
		Wake: func(tk Tick) {
			h.mu.Lock()
			h.ticks = append(h.ticks, tk)
			h.mu.Unlock()
		},
		OnChange: func(on bool) { h.changes = append(h.changes, on) }})
	if err != nil {
		t.Fatal(err)
	}
	h.e = e
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	if err := e.Subscribe(ctx); err != nil {
		t.Fatal(err)
	}
	e.Start()
	return h
}

// run hands the election every tick that is waiting.
func (h *host) run() {
	for {
		h.mu.Lock()
		ts := h.ticks
		h.ticks = nil
		h.mu.Unlock()
		if len(ts) == 0 {
			return
		}
		for _, tk := range ts {
			h.e.Tick(tk)
		}
	}
}

func settle(mem *bustest.Memory, hs ...*host) {
	for range 5 {
		mem.Settle()
		for _, h := range hs {
			h.run()
		}
	}
}

func TestElection(t *testing.T) {
	t.Run("alone it claims and leads once the claim comes back", func(t *testing.T) {
		mem, m, clk := bustest.NewMemory(t), metrics.New(), clock.NewFake(time.Unix(1e9, 0))
		h := newHost(t, mem, m, clk, "f1", false)
		settle(mem, h)
		if h.e.Active() {
			t.Fatal("active before the join wait")
		}
		clk.Advance(DefaultJoinWait)
		settle(mem, h)
		if !h.e.Active() || len(h.changes) != 1 || !h.changes[0] {
			t.Fatalf("active %v changes %v, want active once", h.e.Active(), h.changes)
		}
		clk.Advance(DefaultClaimCheck)
		settle(mem, h)
		if n := metrics.Value(m.ClaimFailures); n != 0 || !h.e.Active() {
			t.Fatalf("claim failures %v active %v after a claim that came back", n, h.e.Active())
		}
	})
	t.Run("a claim that never comes back is said, counted and retried", func(t *testing.T) {
		mem, m, clk := bustest.NewMemory(t), metrics.New(), clock.NewFake(time.Unix(1e9, 0))
		h := newHost(t, mem, m, clk, "f1", true)
		clk.Advance(DefaultJoinWait)
		settle(mem, h)
		clk.Advance(DefaultClaimCheck)
		settle(mem, h)
		if h.e.Active() || metrics.Value(m.ClaimFailures) != 1 {
			t.Fatalf("active %v failures %v, want standing by with one failure", h.e.Active(), metrics.Value(m.ClaimFailures))
		}
		clk.Advance(DefaultRetry)
		settle(mem, h)
		clk.Advance(DefaultClaimCheck)
		settle(mem, h)
		if n := metrics.Value(m.ClaimFailures); n != 2 {
			t.Fatalf("claim failures = %v, want the retry to fail again", n)
		}
	})
	t.Run("of two the lower instance leads; the other takes over when it dies", func(t *testing.T) {
		mem, m, clk := bustest.NewMemory(t), metrics.New(), clock.NewFake(time.Unix(1e9, 0))
		h2 := newHost(t, mem, m, clk, "f2", false)
		h1 := newHost(t, mem, m, clk, "f1", false)
		clk.Advance(DefaultJoinWait)
		settle(mem, h1, h2)
		if !h1.e.Active() || h2.e.Active() {
			t.Fatalf("f1 active %v, f2 active %v: want f1", h1.e.Active(), h2.e.Active())
		}
		h1.e.Stop()
		w := Will(topic.New(""), "lr", "f1")
		mem.NamedConn("killer", nil, nil).Publish(context.Background(), w.Topic, w.Payload, true)
		settle(mem, h1, h2)
		if !h2.e.Active() {
			t.Fatal("the standby did not take over when the active one's will came")
		}
	})
}

// The claims wait in a mailbox that keeps the latest per instance and is
// bounded however many made-up instances claim (moved here from the turn
// floor's mailbox test).
func TestClaimsAreBoundedAndKeepTheLatest(t *testing.T) {
	mem, m, clk := bustest.NewMemory(t), metrics.New(), clock.NewFake(time.Unix(1e9, 0))
	h := newHost(t, mem, m, clk, "f1", true)
	for i := range 100 {
		h.e.Put(protocol.LeaderClaim{Instance: fmt.Sprintf("i%03d", i), Online: true})
	}
	h.e.Put(protocol.LeaderClaim{Instance: "i000", Online: false})
	h.e.mu.Lock()
	n, latest := len(h.e.claims), h.e.claims["i000"]
	h.e.mu.Unlock()
	if n != MaxInstances {
		t.Fatalf("%d claims kept, cap %d", n, MaxInstances)
	}
	if latest.Online {
		t.Fatal("the latest claim of i000 (offline) was not kept")
	}
	if r := metrics.Value(m.BadInput.WithLabelValues("leader", "too_many")); r != 100-MaxInstances {
		t.Fatalf("refused claims counted %v, want %d", r, 100-MaxInstances)
	}
}

// twoFloors is f1 leading and f2 standing by, on a memory broker whose
// deliveries to a cut host are lost.
func twoFloors(t *testing.T) (*bustest.Memory, *clock.Fake, *host, *host) {
	var hosts []*host
	mem := bustest.NewMemory(t, bustest.MemoryOptions{Drop: func(to *bustest.MemConn, _ string, _ []byte) bool {
		for _, h := range hosts {
			if h.conn == to {
				return h.cut.Load()
			}
		}
		return false
	}})
	m, clk := metrics.New(), clock.NewFake(time.Unix(1e9, 0))
	h1 := newHost(t, mem, m, clk, "f1", false)
	h2 := newHost(t, mem, m, clk, "f2", false)
	hosts = []*host{h1, h2}
	clk.Advance(DefaultJoinWait)
	settle(mem, h1, h2)
	return mem, clk, h1, h2
}

// A node of a clustered broker that dies takes its connections' wills
// with it (issue 31): the active floor just falls silent. The standby
// claims the room once it has heard nothing of it for a Lease — and never
// while the active one still beats.
func TestLease(t *testing.T) {
	t.Run("a standby takes over from a silent leader, never from a beating one", func(t *testing.T) {
		mem, clk, h1, h2 := twoFloors(t)
		for range 4 * int(DefaultLease/DefaultBeat) {
			clk.Advance(DefaultBeat)
			settle(mem, h1, h2)
		}
		if !h1.e.Active() || h2.e.Active() {
			t.Fatalf("f1 active %v, f2 active %v, while f1 beats: want f1", h1.e.Active(), h2.e.Active())
		}
		h1.e.Stop() // its node died: no will, no beat
		for range int(DefaultLease/DefaultBeat) - 1 {
			clk.Advance(DefaultBeat)
			settle(mem, h1, h2)
		}
		if h2.e.Active() {
			t.Fatal("the standby claimed before the lease ran out")
		}
		clk.Advance(DefaultBeat)
		settle(mem, h1, h2)
		clk.Advance(DefaultBeat)
		settle(mem, h1, h2)
		if !h2.e.Active() {
			t.Fatal("the standby did not take over from a leader silent for a lease")
		}
	})
	t.Run("a leader back from a cut finds the room taken and stands by", func(t *testing.T) {
		mem, clk, h1, h2 := twoFloors(t)
		h1.cut.Store(true) // f1's node died; f1 still runs, reconnecting
		for range 2 * int(DefaultLease/DefaultBeat) {
			clk.Advance(DefaultBeat)
			settle(mem, h1, h2)
		}
		if !h2.e.Active() {
			t.Fatal("the standby did not take over")
		}
		h1.cut.Store(false)
		h1.conn.Reconnect() // f1 is back and says again that it leads, as of when it began
		h1.e.Reconnected()
		if h1.e.Active() {
			t.Fatal("f1 leads again before it has read its claim back")
		}
		h1.e.Put(decodeRetained(t, mem)) // the retained claim its new subscription reads
		settle(mem, h1, h2)
		for range 4 {
			clk.Advance(DefaultBeat)
			settle(mem, h1, h2)
		}
		f2KeepsTheRoom(t, mem, h1, h2)
	})
	t.Run("a leader back in the moment the standby's lease runs out never leads beside it", func(t *testing.T) {
		mem, clk, h1, h2 := twoFloors(t)
		h1.cut.Store(true)
		for range int(DefaultLease/DefaultBeat) - 1 {
			clk.Advance(DefaultBeat)
			settle(mem, h1, h2)
		}
		if h2.e.Active() || h2.e.claiming() {
			t.Fatal("the standby claimed before the lease ran out")
		}
		clk.Advance(DefaultBeat) // the lease runs out: f2's check waits on its loop
		h1.cut.Store(false)
		h1.conn.Reconnect() // and f1 is back in the same moment
		h1.e.Reconnected()
		mem.Settle()
		changed := len(h1.changes)
		h1.run() // f1 reads its claim back before f2's crossing claim reaches it
		h2.run() // f2 claims on its lease, then hears f1's older claim
		both := func(when string) {
			if h1.e.Active() && h2.e.Active() {
				t.Fatalf("%s: f1 and f2 both lead", when)
			}
		}
		both("the claims crossed")
		settle(mem, h1, h2)
		both("the claims were read")
		for range 4 {
			clk.Advance(DefaultBeat)
			settle(mem, h1, h2)
			both("later")
		}
		for _, on := range h1.changes[changed:] {
			if on {
				t.Fatalf("f1 led again beside f2 (changes since its return %v)", h1.changes[changed:])
			}
		}
		f2KeepsTheRoom(t, mem, h1, h2)
	})
	t.Run("a leader back from a short cut leads again once no newer claim came", func(t *testing.T) {
		mem, clk, h1, h2 := twoFloors(t)
		m := h1.e.m
		h1.cut.Store(true)
		clk.Advance(DefaultBeat)
		settle(mem, h1, h2)
		h1.cut.Store(false)
		h1.conn.Reconnect()
		h1.e.Reconnected()
		settle(mem, h1, h2)
		if h1.e.Active() {
			t.Fatal("f1 led again as soon as its claim came back, before a crossing claim could reach it")
		}
		clk.Advance(DefaultJoinWait)
		settle(mem, h1, h2)
		if !h1.e.Active() || h2.e.Active() {
			t.Fatalf("f1 active %v, f2 active %v, JoinWait after f1's claim came back: want f1", h1.e.Active(), h2.e.Active())
		}
		for range 2 * int(DefaultClaimCheck/DefaultBeat) { // past its claim check, beating
			clk.Advance(DefaultBeat)
			settle(mem, h1, h2)
		}
		if n := metrics.Value(m.ClaimFailures); n != 0 || !h1.e.Active() || h2.e.Active() {
			t.Fatalf("claim failures %v, f1 active %v, f2 active %v, after a returning claim that came back", n, h1.e.Active(), h2.e.Active())
		}
	})
	t.Run("a standby back from its own cut gives the leader a full lease", func(t *testing.T) {
		mem, clk, h1, h2 := twoFloors(t)
		h2.cut.Store(true)
		h2.e.Lost()
		for range 2 * int(DefaultLease/DefaultBeat) { // away itself, it hears no beat
			clk.Advance(DefaultBeat)
			settle(mem, h1, h2)
		}
		if h2.e.Active() || h2.e.claiming() {
			t.Fatal("a standby that lost its own connection claimed the room")
		}
		h2.cut.Store(false)
		h2.e.Reconnected()
		clk.Advance(DefaultBeat)
		settle(mem, h1, h2)
		if h2.e.Active() || !h1.e.Active() {
			t.Fatalf("f1 active %v, f2 active %v: a standby's own outage is no sign of the leader's", h1.e.Active(), h2.e.Active())
		}
	})
}

// f2KeepsTheRoom fails the test unless f2 leads, f1 stands by and the
// retained claim is f2's.
func f2KeepsTheRoom(t *testing.T, mem *bustest.Memory, h1, h2 *host) {
	t.Helper()
	if h1.e.Active() || !h2.e.Active() {
		t.Fatalf("f1 active %v, f2 active %v: the floor that took over keeps the room", h1.e.Active(), h2.e.Active())
	}
	if c := decodeRetained(t, mem); c.Instance != "f2" || !c.Online {
		t.Fatalf("the retained claim is %+v, want f2's", c)
	}
}

func decodeRetained(t *testing.T, mem *bustest.Memory) protocol.LeaderClaim {
	t.Helper()
	c, err := protocol.DecodeLeaderClaim(mem.Retained(topic.New("").FloorLeader("lr")), 0)
	if err != nil {
		t.Fatal(err)
	}
	return c
}
