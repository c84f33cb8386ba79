package realtime

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/chorus-robotics/chorus/runtime/bus/bustest"
	"github.com/chorus-robotics/chorus/runtime/clock"
	"github.com/chorus-robotics/chorus/runtime/metrics"
	"github.com/chorus-robotics/chorus/runtime/protocol"
	"github.com/chorus-robotics/chorus/runtime/room"
	"github.com/chorus-robotics/chorus/runtime/topic"
)

// A realtime floor's control events — presence, speaking status, a change
// of leader, the phase its predecessor left — are never dropped by its
// lossy queue (issue 20, item 3): here posts flood the queue full while
// presence changes, a speaker starts and this instance takes the room
// over; every one of those still takes effect, and only the post that
// found the queue full is dropped and counted.
func TestControlEventsSurviveAFloodOfPosts(t *testing.T) {
	members := []string{"ann", "ben", "cat"}
	fr := newFloodRig(t, members, &Leader{}, 15*time.Second)
	f, clk, m := fr.f, fr.clk, fr.m
	left := protocol.Phase{From: "floor", Phase: "talk-1-dead", Event: protocol.PhaseStart, Kind: protocol.PhaseTalk}
	now := clk.Now()
	online := func(id string, on bool) room.PresenceEvent {
		return room.PresenceEvent{ID: id, Presence: protocol.Presence{Online: on, Device: id + "-dev", Since: now}}
	}
	// The flood: the loop has not caught up, the queue is full.
	for i := 0; len(f.events.C) < cap(f.events.C); i++ {
		f.push(event{post: &protocol.Post{From: "ann", Phase: "talk-1-dead", ID: protocol.NewID(), Text: "flood"}}, "post")
	}
	f.ctl.phase(left)
	for _, id := range members {
		f.ctl.presenceEvent(online(id, true))
	}
	f.push(event{post: &protocol.Post{From: "ben", Phase: "talk-1-dead", ID: "x", Text: "refused"}}, "post")
	f.ctl.presenceEvent(online("cat", false))
	f.ctl.voice(room.SpeakingEvent{ID: "ben", Speaking: protocol.Speaking{MessageID: "m1", Speaking: true, StartedAt: now, DurationMs: 2000}})
	f.ctl.leader(true)

	ends, pctx := fr.run()
	select {
	case e := <-ends:
		if e.Phase != left.Phase || e.Reason != EndFloorChanged {
			t.Fatalf("phase end %+v, want %s ended %s", e, left.Phase, EndFloorChanged)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the leader change was lost in the flood: the phase the last floor left open never ended")
	}
	// The loop owns present and voices; Ping has shown it handled them.
	if err := f.Ping(pctx); err != nil {
		t.Fatal(err)
	}
	if !f.present["ann"] || !f.present["ben"] || f.present["cat"] {
		t.Fatalf("present %v, want ann and ben (cat left during the flood)", f.present)
	}
	if n := metrics.Value(m.QueueDrops.WithLabelValues("realtime", "post")); n != 1 {
		t.Fatalf("posts dropped = %v, want the one that found the queue full", n)
	}
	for _, kind := range []string{"presence", "speaking", "leader", "phase"} {
		if n := metrics.Value(m.QueueDrops.WithLabelValues("realtime", kind)); n != 0 {
			t.Fatalf("%s events dropped = %v", kind, n)
		}
	}
}

// A phase's timers are not lost in a flood either: the phase timeout
// that fires while posts fill the queue still ends the phase.
func TestPhaseTimeoutSurvivesAFloodOfPosts(t *testing.T) {
	fr := newFloodRig(t, []string{"ann", "ben"}, nil, time.Hour)
	f, clk, m := fr.f, fr.clk, fr.m
	f.open(nil) // the loop is not running yet: the test owns the floor
	id := f.phase.id
	for len(f.events.C) < cap(f.events.C) {
		f.push(event{post: &protocol.Post{From: "ann", Phase: "talk-0-old", ID: protocol.NewID(), Text: "flood"}}, "post")
	}
	clk.Advance(time.Minute) // the phase timeout fires into the full queue

	ends, _ := fr.run()
	select {
	case e := <-ends:
		if e.Phase != id || e.Reason != protocol.EndPhaseTimeout {
			t.Fatalf("phase end %+v, want %s ended %s", e, id, protocol.EndPhaseTimeout)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the phase timeout was lost in the flood: the phase never ended")
	}
	if n := metrics.Value(m.QueueDrops.WithLabelValues("realtime", "timer")); n != 0 {
		t.Fatalf("timers dropped = %v", n)
	}
}

// floodRig is a realtime floor on a memory bus whose event queue a test
// fills before the floor's loop runs.
type floodRig struct {
	t   *testing.T
	mem *bustest.Memory
	s   topic.Scheme
	m   *metrics.Metrics
	clk *clock.Fake
	f   *Floor
}

// newFloodRig builds the floor for members (leader may be nil) with the
// given silence timeout; the loop is not running yet.
func newFloodRig(t *testing.T, members []string, leader *Leader, silence time.Duration) *floodRig {
	t.Helper()
	mem := bustest.NewMemory(t, bustest.MemoryOptions{QueueLimit: 10000})
	s := topic.New("").WithRoster("lr", members)
	m := metrics.New()
	r := room.New(mem.NamedConn("floor", nil, nil), s, "lr", nil, m)
	r.SetMembers(members)
	clk := clock.NewFake(time.Date(2026, 11, 22, 9, 0, 0, 0, time.UTC))
	f, err := NewFloor(FloorConfig{Room: r, Members: members, ID: "floor", Clock: clk, Leader: leader,
		Limits: Limits{PhaseTimeout: time.Minute, SilenceTimeout: silence, RateLimit: time.Second,
			PerAgent: 3, PerDay: 6, PerTalk: 200}})
	if err != nil {
		t.Fatal(err)
	}
	return &floodRig{t: t, mem: mem, s: s, m: m, clk: clk, f: f}
}

// run has an observer report the phase ends, starts the floor's loop
// (stopped at cleanup) and waits until it has drained the queue. The
// context it returns bounds the test's further calls to the floor.
func (fr *floodRig) run() (<-chan protocol.Phase, context.Context) {
	t := fr.t
	t.Helper()
	ends := make(chan protocol.Phase, 4)
	obs := room.New(fr.mem.NamedConn("observer", nil, nil), fr.s, "lr", nil, fr.m)
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	t.Cleanup(func() { cancel(); wg.Wait() })
	if err := obs.OnPhase(ctx, "", func(p protocol.Phase) {
		if p.Event == protocol.PhaseEnd {
			ends <- p
		}
	}); err != nil {
		t.Fatal(err)
	}
	wg.Add(1)
	go func() { defer wg.Done(); fr.f.Run(ctx) }()
	pctx, pcancel := context.WithTimeout(ctx, 10*time.Second)
	t.Cleanup(pcancel)
	if err := fr.f.Flush(pctx); err != nil {
		t.Fatal(err)
	}
	fr.mem.Settle()
	return ends, pctx
}
