package realtime_test

import (
	"context"
	"encoding/json"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/chorus-robotics/chorus/runtime/bus/bustest"
	"github.com/chorus-robotics/chorus/runtime/clock"
	"github.com/chorus-robotics/chorus/runtime/metrics"
	"github.com/chorus-robotics/chorus/runtime/protocol"
	"github.com/chorus-robotics/chorus/runtime/realtime"
	"github.com/chorus-robotics/chorus/runtime/room"
	"github.com/chorus-robotics/chorus/runtime/topic"
)

var members = []string{"ann", "ben", "cat"}

var limits = realtime.Limits{PhaseTimeout: 120 * time.Second, SilenceTimeout: 15 * time.Second, RateLimit: 2 * time.Second,
	PerAgent: 3, PerDay: 6, PerTalk: 200, Overlap: true}

// floorRig runs a realtime floor on the in-memory broker with a fake
// clock, and records everything it says.
type floorRig struct {
	t     *testing.T
	mem   *bustest.Memory
	s     topic.Scheme
	clk   *clock.Fake
	f     *realtime.Floor
	ctx   context.Context
	mu    sync.Mutex
	acks  map[string]protocol.PostAck // by post id
	ends  []protocol.Phase
	opens []protocol.Phase
	casts []protocol.Message
	rooms map[string]*room.Room
	m     *metrics.Metrics
}

func newFloorRig(t *testing.T, l realtime.Limits, channel string, chMembers []string) *floorRig {
	ctx, cancel := context.WithCancel(context.Background())
	r := &floorRig{t: t, mem: bustest.NewMemory(t, bustest.MemoryOptions{QueueLimit: 5000}), s: topic.New("").WithRoster("lr", members), ctx: ctx,
		clk: clock.NewFake(time.Date(2026, 11, 22, 9, 0, 0, 0, time.UTC)), acks: map[string]protocol.PostAck{},
		rooms: map[string]*room.Room{}, m: metrics.New()}
	if channel != "" {
		r.s = r.s.WithWhisper("lr", channel, chMembers)
	} else {
		chMembers = members
	}
	fr := r.roomAs("floor")
	f, err := realtime.NewFloor(realtime.FloorConfig{Room: fr, Channel: channel, Members: chMembers, ID: "floor", Limits: l,
		Clock: r.clk, OpenOnMessage: channel == ""})
	if err != nil {
		t.Fatal(err)
	}
	r.f = f
	var wg sync.WaitGroup
	t.Cleanup(func() { cancel(); wg.Wait() })
	wg.Add(1)
	go func() { defer wg.Done(); f.Run(ctx) }()
	obs := r.roomAs("observer")
	obs.OnAcks(ctx, channel, "+", func(_ string, a protocol.PostAck) {
		r.mu.Lock()
		r.acks[a.PostID] = a
		r.mu.Unlock()
	})
	obs.OnPhase(ctx, channel, func(p protocol.Phase) {
		r.mu.Lock()
		if p.Event == protocol.PhaseEnd {
			r.ends = append(r.ends, p)
		} else {
			r.opens = append(r.opens, p)
		}
		r.mu.Unlock()
	})
	obs.OnBroadcasts(ctx, channel, func(m protocol.Message) {
		if m.Params.From == "floor" {
			r.mu.Lock()
			r.casts = append(r.casts, m)
			r.mu.Unlock()
		}
	})
	pctx, pcancel := context.WithTimeout(ctx, 5*time.Second)
	defer pcancel()
	if err := f.Ping(pctx); err != nil {
		t.Fatal(err)
	}
	for _, id := range members { // everyone present
		b, _ := json.Marshal(protocol.Presence{Online: true, Device: id, Since: r.clk.Now()})
		r.roomAs(id).Bus.Publish(ctx, r.s.Presence("lr", id), b, true)
	}
	r.settle()
	return r
}

func (r *floorRig) roomAs(id string) *room.Room {
	if rm, ok := r.rooms[id]; ok {
		return rm
	}
	rm := room.New(r.mem.NamedConn(id, nil, nil), r.s, "lr", nil, r.m)
	rm.SetMembers(members)
	r.rooms[id] = rm
	return rm
}

// settle lets every message and the floor's loop come to rest.
func (r *floorRig) settle() {
	r.mem.Settle()
	ctx, cancel := context.WithTimeout(r.ctx, 5*time.Second)
	defer cancel()
	if err := r.f.Flush(ctx); err != nil {
		r.t.Fatal(err)
	}
	r.mem.Settle()
}

// voicesRig is a room of voices (no overlap) whose phase is open, in
// which ann's post of text was accepted; ph is the phase.
func voicesRig(t *testing.T, text string) (r *floorRig, ph string) {
	t.Helper()
	l := limits
	l.Overlap = false
	r = newFloorRig(t, l, "", nil)
	ph = r.start().Phase
	if a := r.post("ann", ph, text); !a.Accepted {
		t.Fatalf("%+v", a)
	}
	return r, ph
}

// voice publishes that ann's voice of durationMs starts (speaking) or
// ends, as her device does, and lets the floor take it in.
func (r *floorRig) voice(speaking bool, durationMs int) {
	b, _ := json.Marshal(protocol.Speaking{MessageID: "m", Speaking: speaking, StartedAt: r.clk.Now(), DurationMs: durationMs})
	r.roomAs("ann").Bus.Publish(r.ctx, r.s.Speaking("lr", "ann"), b, true)
	r.settle()
}

func (r *floorRig) start() protocol.Phase {
	r.t.Helper()
	if err := r.f.Start(r.ctx); err != nil {
		r.t.Fatal(err)
	}
	r.settle()
	return r.open()
}

func (r *floorRig) open() protocol.Phase {
	r.t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.opens) == 0 {
		r.t.Fatal("no phase opened")
	}
	return r.opens[len(r.opens)-1]
}

var postN int

// post publishes text as who in phase and returns the floor's answer.
func (r *floorRig) post(who, phase, text string) protocol.PostAck {
	r.t.Helper()
	postN++
	id := protocol.NewID()
	p := protocol.Post{From: who, Phase: phase, ID: id, Text: text}
	b, _ := json.Marshal(p)
	ch := ""
	if len(r.s.Whispers["lr"]) > 0 {
		for c := range r.s.Whispers["lr"] {
			ch = c
		}
	}
	if err := r.roomAs(who).Bus.Publish(r.ctx, r.s.PostIn("lr", ch, who), b, false); err != nil {
		r.t.Fatal(err)
	}
	r.settle()
	r.mu.Lock()
	defer r.mu.Unlock()
	a, ok := r.acks[id]
	if !ok {
		r.t.Fatalf("no answer to %s's post %q", who, text)
	}
	return a
}

func (r *floorRig) ended() (protocol.Phase, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.ends) == 0 {
		return protocol.Phase{}, false
	}
	return r.ends[len(r.ends)-1], true
}

func (r *floorRig) advance(d time.Duration) {
	r.clk.Advance(d)
	r.settle()
}

func wantEnd(t *testing.T, r *floorRig, reason string) {
	t.Helper()
	e, ok := r.ended()
	if !ok || e.Reason != reason {
		t.Fatalf("phase end %+v (ended %v), want %s", e, ok, reason)
	}
}

func notEnded(t *testing.T, r *floorRig) {
	t.Helper()
	if e, ok := r.ended(); ok {
		t.Fatalf("the phase ended: %+v", e)
	}
}

// Every way a phase ends (issue 12): all present members Over, the phase
// timeout, the silence timeout since the last accepted utterance, per_day,
// the operator.
func TestPhaseEnds(t *testing.T) {
	tests := []struct {
		name string
		run  func(t *testing.T, r *floorRig, phase string)
		want string
		l    *realtime.Limits
	}{
		{"every present member says Over", func(t *testing.T, r *floorRig, ph string) {
			r.post("ann", ph, "Over")
			r.post("ben", ph, "Over")
			notEnded(t, r)
			r.post("cat", ph, "Over")
		}, protocol.EndAllOver, nil},
		{"a member gone no longer counts", func(t *testing.T, r *floorRig, ph string) {
			r.post("ann", ph, "Over")
			r.post("ben", ph, "Over")
			r.roomAs("cat").Bus.Publish(r.ctx, r.s.Presence("lr", "cat"), nil, true) // cat's presence cleared
			r.settle()
		}, protocol.EndAllOver, nil},
		{"phase timeout", func(t *testing.T, r *floorRig, ph string) {
			for range 10 { // talk goes on, silence never reached
				r.advance(11 * time.Second)
				if _, ended := r.ended(); ended {
					return
				}
				r.post([]string{"ann", "ben", "cat"}[postN%3], ph, "Still talking.")
			}
			notEnded(t, r)
			r.advance(20 * time.Second)
		}, protocol.EndPhaseTimeout, &realtime.Limits{PhaseTimeout: 120 * time.Second, SilenceTimeout: 15 * time.Second,
			RateLimit: 2 * time.Second, PerAgent: 10, PerDay: 50, PerTalk: 200, Overlap: true}},
		{"silence timeout since the last accepted utterance", func(t *testing.T, r *floorRig, ph string) {
			r.advance(10 * time.Second)
			r.post("ann", ph, "Hello.")
			r.advance(10 * time.Second) // 20 s since the start, 10 since ann
			notEnded(t, r)
			r.advance(5 * time.Second)
		}, protocol.EndSilenceTimeout, nil},
		{"per_day reached", func(t *testing.T, r *floorRig, ph string) {
			for i := range 6 {
				if i > 0 && i%3 == 0 {
					r.advance(3 * time.Second) // past the rate limit
				}
				r.post([]string{"ann", "ben", "cat"}[i%3], ph, "Talk.")
			}
		}, protocol.EndPerDay, nil},
		{"operator", func(t *testing.T, r *floorRig, ph string) {
			if err := r.f.End(r.ctx); err != nil {
				t.Fatal(err)
			}
			r.settle()
		}, protocol.EndOperator, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := limits
			if tt.l != nil {
				l = *tt.l
			}
			r := newFloorRig(t, l, "", nil)
			ph := r.start().Phase
			tt.run(t, r, ph)
			wantEnd(t, r, tt.want)
			if a := r.post("ann", ph, "After the end."); a.Accepted || a.Reason != protocol.RejectPhaseClosed {
				t.Fatalf("a post tagged with the ended phase: %+v", a)
			}
		})
	}
}

// Every limit (issue 12): each refusal is answered with its reason and
// costs no quota; a long post is cut to exactly per_talk runes and its
// author told.
func TestLimits(t *testing.T) {
	t.Run("rate limit", func(t *testing.T) {
		r := newFloorRig(t, limits, "", nil)
		ph := r.start().Phase
		if a := r.post("ann", ph, "One."); !a.Accepted || a.Idx != 1 || a.Remaining != 2 {
			t.Fatalf("%+v", a)
		}
		r.advance(time.Second)
		if a := r.post("ann", ph, "Two, too soon."); a.Accepted || a.Reason != protocol.RejectRateLimited || a.Remaining != 2 {
			t.Fatalf("%+v", a)
		}
		r.advance(time.Second)
		if a := r.post("ann", ph, "Two."); !a.Accepted || a.Idx != 2 || a.Remaining != 1 {
			t.Fatalf("%+v", a)
		}
	})
	t.Run("per_agent", func(t *testing.T) {
		r := newFloorRig(t, limits, "", nil)
		ph := r.start().Phase
		for i := range 3 {
			if a := r.post("ann", ph, "Talk."); !a.Accepted || a.Remaining != 2-i {
				t.Fatalf("post %d: %+v", i, a)
			}
			r.advance(2 * time.Second)
		}
		if a := r.post("ann", ph, "More."); a.Accepted || a.Reason != protocol.RejectQuotaExhausted || a.Remaining != 0 {
			t.Fatalf("%+v", a)
		}
		if a := r.post("ben", ph, "My turn."); !a.Accepted {
			t.Fatalf("ben: %+v", a)
		}
	})
	t.Run("empty and not a member", func(t *testing.T) {
		r := newFloorRig(t, limits, "", nil)
		ph := r.start().Phase
		for _, text := range []string{"", "   ", "LISTEN"} {
			if a := r.post("ann", ph, text); a.Accepted || a.Reason != protocol.RejectEmpty || a.Remaining != 3 {
				t.Fatalf("%q: %+v", text, a)
			}
		}
		if a := r.post("mallory", ph, "Let me in."); a.Accepted || a.Reason != protocol.RejectNotMember {
			t.Fatalf("%+v", a)
		}
	})
	t.Run("300 Japanese characters cut to per_talk", func(t *testing.T) {
		r := newFloorRig(t, limits, "", nil)
		ph := r.start().Phase
		long := strings.Repeat("あいうえお", 60) // 300 runes, 900 bytes
		a := r.post("ann", ph, long)
		if !a.Accepted || a.Reason != protocol.WarnTruncated {
			t.Fatalf("%+v", a)
		}
		r.mu.Lock()
		said := r.casts[len(r.casts)-1].Params.Message
		r.mu.Unlock()
		if n := utf8.RuneCountInString(said); n != 200 || said != string([]rune(long)[:200]) {
			t.Fatalf("broadcast %d runes", n)
		}
	})
	t.Run("floor busy while a voice plays", func(t *testing.T) {
		r, ph := voicesRig(t, "I speak now.")
		if a := r.post("ben", ph, "Me too!"); a.Accepted || a.Reason != protocol.RejectFloorBusy || a.Remaining != 3 {
			t.Fatalf("while ann holds the floor: %+v", a)
		}
		r.voice(true, 2000)
		r.advance(3 * time.Second) // within 2 s + the margin
		if a := r.post("ben", ph, "Now?"); a.Reason != protocol.RejectFloorBusy {
			t.Fatalf("%+v", a)
		}
		r.voice(false, 2000)
		if a := r.post("ben", ph, "Now."); !a.Accepted {
			t.Fatalf("after ann's voice ended: %+v", a)
		}
		// A voice whose end never comes holds nobody up past its bound.
		r.advance(realtime.StartGrace + time.Second)
		if a := r.post("cat", ph, "Ben went quiet."); !a.Accepted {
			t.Fatalf("past ben's bound: %+v", a)
		}
	})
	// A robot talking is no silence (issue 18, item 9): in a room of voices
	// silence_timeout counts from the end of the last voice, and never ends
	// the phase while a robot still talks. Before, a paced utterance longer
	// than the silence timeout ended the phase under it.
	t.Run("silence counts from the end of the voice", func(t *testing.T) {
		r, _ := voicesRig(t, "A long story.")
		r.voice(true, 25000)
		r.advance(limits.SilenceTimeout + 5*time.Second) // ann still talks
		notEnded(t, r)
		r.voice(false, 25000)
		r.advance(limits.SilenceTimeout - time.Second)
		notEnded(t, r)
		r.advance(limits.SilenceTimeout + time.Second)
		if p, ended := r.ended(); !ended || p.Reason != protocol.EndSilenceTimeout {
			t.Fatalf("ended %v: %+v", ended, p)
		}
	})
	t.Run("a copy of a post gets the same answer", func(t *testing.T) {
		r := newFloorRig(t, limits, "", nil)
		ph := r.start().Phase
		p := protocol.Post{From: "ann", Phase: ph, ID: "p1", Text: "Once."}
		b, _ := json.Marshal(p)
		for range 2 {
			r.roomAs("ann").Bus.Publish(r.ctx, r.s.PostIn("lr", "", "ann"), b, false)
			r.settle()
		}
		r.mu.Lock()
		n := len(r.casts)
		r.mu.Unlock()
		if n != 1 || r.acks["p1"].Idx != 1 {
			t.Fatalf("%d broadcasts, answer %+v", n, r.acks["p1"])
		}
	})
}

// A user's Message opens a phase when none is open, as its first history
// entry; the phase start carries the limits and every remain_count.
func TestUserMessageOpensAPhase(t *testing.T) {
	r := newFloorRig(t, limits, "", nil)
	u := r.roomAs("user")
	if err := u.SendMessage(r.ctx, protocol.NewMessage(protocol.NewID(), "user", nil, "Good morning, robots!", "")); err != nil {
		t.Fatal(err)
	}
	r.settle()
	p := r.open()
	if len(p.History) != 1 || p.History[0].Agent != "user" || p.History[0].Idx != 0 || p.Limits.PerAgent != 3 ||
		p.Remain["ann"] != 3 || len(p.Remain) != 3 {
		t.Fatalf("phase start %+v", p)
	}
	if a := r.post("ann", p.Phase, "Good morning!"); !a.Accepted || a.Idx != 1 {
		t.Fatalf("%+v", a)
	}
	r.mu.Lock()
	m := r.casts[0]
	r.mu.Unlock()
	if m.Params.Metadata["speaker"] != "ann" || m.Params.Metadata["phase"] != p.Phase || m.Params.Metadata["idx"] != float64(1) ||
		m.Params.Metadata["remain_count"] != float64(2) {
		t.Fatalf("broadcast %+v", m.Params)
	}
}

// A burst: one client posts 1,000 times within one second; exactly the
// allowed number (one, under a 2 s rate limit) is accepted and every
// other post is answered rate_limited.
func TestBurstOfPostsFromOneClient(t *testing.T) {
	r := newFloorRig(t, limits, "", nil)
	ph := r.start().Phase
	conn := r.roomAs("ann").Bus
	for i := range 1000 {
		b, _ := json.Marshal(protocol.Post{From: "ann", Phase: ph, ID: "burst-" + itoa(i), Text: "Spam " + itoa(i)})
		if err := conn.Publish(r.ctx, r.s.PostIn("lr", "", "ann"), b, false); err != nil {
			t.Fatal(err)
		}
		if i%100 == 99 {
			r.clk.Advance(100 * time.Millisecond)
		}
	}
	r.settle()
	r.mu.Lock()
	defer r.mu.Unlock()
	accepted, limited := 0, 0
	for i := range 1000 {
		a, ok := r.acks["burst-"+itoa(i)]
		switch {
		case !ok:
			t.Fatalf("post %d was not answered", i)
		case a.Accepted:
			accepted++
		case a.Reason == protocol.RejectRateLimited:
			limited++
		}
	}
	if accepted != 1 || limited != 999 || len(r.casts) != 1 {
		t.Fatalf("%d accepted, %d rate limited, %d broadcasts", accepted, limited, len(r.casts))
	}
}

func itoa(i int) string { return strconv.Itoa(i) }
