package floor

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/chorus-robotics/chorus/runtime/bus/bustest"
	"github.com/chorus-robotics/chorus/runtime/clock"
	"github.com/chorus-robotics/chorus/runtime/election"
	"github.com/chorus-robotics/chorus/runtime/metrics"
	"github.com/chorus-robotics/chorus/runtime/protocol"
	"github.com/chorus-robotics/chorus/runtime/room"
	"github.com/chorus-robotics/chorus/runtime/topic"
)

// flush waits until everything published so far has been delivered and
// handled, including what the floor published in turn (its claim read
// back, its grants).
func (f *Floor) flush(t *testing.T, mem *bustest.Memory) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for range 3 {
		mem.Settle()
		if err := f.Ping(ctx); err != nil {
			t.Fatal("floor loop did not answer")
		}
		if err := f.out.Flush(ctx); err != nil {
			t.Fatal("floor outbox did not drain")
		}
	}
	mem.Settle()
}

// roster is the harness room's members.
var roster = []string{"a", "b", "c", "latecomer"}

type harness struct {
	t       *testing.T
	mem     *bustest.Memory
	s       topic.Scheme
	clk     *clock.Fake
	m       *metrics.Metrics
	grants  chan protocol.TurnGrant
	conns   map[string]*bustest.MemConn
	members []string
	log     *slog.Logger // the floors' logger; none by default
}

func newHarness(t *testing.T, opts ...bustest.MemoryOptions) *harness {
	h := &harness{t: t, mem: bustest.NewMemory(t, opts...), s: topic.New(""), clk: clock.NewFake(time.Unix(1_800_000_000, 0)),
		m: metrics.New(), grants: make(chan protocol.TurnGrant, 1024), conns: map[string]*bustest.MemConn{}, members: roster}
	obs := room.New(h.mem.NamedConn("observer", nil, nil), h.s, "lr", nil, nil)
	if err := obs.OnGrant(context.Background(), func(g protocol.TurnGrant) {
		select { // a handler never blocks
		case h.grants <- g:
		default:
		}
	}); err != nil {
		t.Fatal(err)
	}
	return h
}

// startFloor starts a floor instance and returns it once it is subscribed.
func (h *harness) startFloor(instance string, cfg Config) (*Floor, *bustest.MemConn, context.CancelFunc) {
	h.t.Helper()
	conn := h.mem.NamedConn("floor-"+instance, nil, election.Will(h.s, "lr", instance))
	cfg.Room = room.New(conn, h.s, "lr", h.log, h.m)
	cfg.Room.SetMembers(h.members)
	cfg.Instance = instance
	cfg.Clock = h.clk
	f, err := New(cfg)
	if err != nil {
		h.t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); f.Run(ctx) }()
	h.t.Cleanup(func() { cancel(); wg.Wait() })
	waitFor(h.t, func() bool { return f.subscribed() })
	h.mem.Settle()
	return f, conn, cancel
}

// activate lets the join wait pass and the claim come back.
func (h *harness) activate(f *Floor) {
	h.t.Helper()
	h.clk.Advance(DefaultJoinWait)
	f.flush(h.t, h.mem)
	if !f.Active() {
		h.t.Fatal("a lone floor must become active after the join wait")
	}
}

// activeFloor starts floor f1 with cfg and makes it the room's active
// floor.
func (h *harness) activeFloor(cfg Config) *Floor {
	h.t.Helper()
	f, _, _ := h.startFloor("f1", cfg)
	h.activate(f)
	return f
}

// twoAndAFloor is a harness where a and b have joined and floor f1, with
// cfg, is active.
func twoAndAFloor(t *testing.T, cfg Config) (h *harness, a, b *room.Room, f *Floor) {
	t.Helper()
	h = newHarness(t)
	a, b = h.join("a"), h.join("b")
	return h, a, b, h.activeFloor(cfg)
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met within 5 s")
		}
		time.Sleep(time.Millisecond)
	}
}

func (h *harness) join(id string) *room.Room {
	r := room.New(nil, h.s, "lr", nil, nil)
	birth, will := r.PresenceMessages(id, id+"-dev")
	c := h.mem.NamedConn(id, birth, will)
	h.conns[id] = c
	r.Bus = c
	return r
}

func (h *harness) say(r *room.Room, from, id string) {
	h.t.Helper()
	if err := r.SendMessage(context.Background(), protocol.NewMessage(id, from, nil, "hello from "+from, "")); err != nil {
		h.t.Fatal(err)
	}
}

func (h *harness) vote(r *room.Room, p protocol.StateParams) {
	h.t.Helper()
	if p.Closing == "" {
		p.Closing = protocol.ClosingNone
	}
	if err := r.SendState(context.Background(), protocol.NewState(p)); err != nil {
		h.t.Fatal(err)
	}
}

func (h *harness) grant() protocol.TurnGrant {
	h.t.Helper()
	select {
	case g := <-h.grants:
		return g
	case <-time.After(5 * time.Second):
		h.t.Fatal("no grant")
	}
	return protocol.TurnGrant{}
}

func (h *harness) noGrant() {
	h.t.Helper()
	h.mem.Settle()
	select {
	case g := <-h.grants:
		h.t.Fatalf("unexpected grant %+v", g)
	case <-time.After(20 * time.Millisecond):
	}
}

func TestAllVotedDecidesAtOnce(t *testing.T) {
	h := newHarness(t)
	a, b := h.join("a"), h.join("b")
	h.join("user-client") // not on the roster: it never votes, however present it says it is
	f := h.activeFloor(Config{})
	h.say(room.New(h.mem.Conn(nil, nil), h.s, "lr", nil, nil), "user", "m1")
	h.vote(a, protocol.StateParams{From: "a", MessageID: "m1", State: protocol.Speak, Importance: 4})
	h.vote(b, protocol.StateParams{From: "b", MessageID: "m1", State: protocol.Speak, Importance: 6})
	g := h.grant()
	if g.SpeakerID() != "b" || g.Reason != protocol.ReasonSpeak || g.DecidedBy != protocol.DecidedAllVoted || len(g.Votes) != 2 {
		t.Fatalf("grant %+v", g)
	}
	// A late state for a decided message is ignored and counted.
	h.vote(a, protocol.StateParams{From: "a", MessageID: "m1", State: protocol.Speak, Importance: 10})
	f.flush(t, h.mem)
	h.noGrant()
	if n := metrics.Value(h.m.LateStates); n != 1 {
		t.Fatalf("late states = %v, want 1", n)
	}
}

func TestDeadlineDecidesWithoutSilentVoter(t *testing.T) {
	h := newHarness(t)
	a, b, _ := h.join("a"), h.join("b"), h.join("c")
	f := h.activeFloor(Config{VoteTimeout: 3 * time.Second})
	h.say(a, "a", "m1") // a speaks: b and c vote
	h.vote(b, protocol.StateParams{From: "b", MessageID: "m1", State: protocol.Listen, Selected: true, Importance: 1})
	f.flush(t, h.mem)
	h.clk.Advance(2999 * time.Millisecond)
	f.flush(t, h.mem)
	h.noGrant()
	h.clk.Advance(time.Millisecond)
	g := h.grant()
	if g.SpeakerID() != "b" || g.Reason != protocol.ReasonSelected || g.DecidedBy != protocol.DecidedDeadline {
		t.Fatalf("grant %+v", g)
	}
	if len(g.Missing) != 1 || g.Missing[0] != "c" {
		t.Fatalf("missing = %v, want [c]", g.Missing)
	}
}

func TestDroppedStates(t *testing.T) {
	h, a, b, f := twoAndAFloor(t, Config{OrphanGrace: time.Hour})
	h.say(a, "a", "m1")
	f.flush(t, h.mem)
	// a sent m1, so a is not a participant of its own message.
	h.vote(a, protocol.StateParams{From: "a", MessageID: "m1", State: protocol.Speak, Importance: 9})
	// A state for a message nobody sent.
	h.vote(b, protocol.StateParams{From: "b", MessageID: "nope", State: protocol.Speak, Importance: 9})
	// A newcomer after the message arrived is not a participant either.
	late := h.join("latecomer")
	f.flush(t, h.mem)
	h.vote(late, protocol.StateParams{From: "latecomer", MessageID: "m1", State: protocol.Speak, Importance: 9})
	// Someone off the roster is dropped before the floor sees it.
	h.vote(h.join("stranger"), protocol.StateParams{From: "stranger", MessageID: "m1", State: protocol.Speak, Importance: 9})
	f.flush(t, h.mem)
	h.clk.Advance(DefaultVoteTimeout)
	// b's newer early State replaces its older one ("nope" counts as unknown).
	for range 600 {
		h.vote(b, protocol.StateParams{From: "b", MessageID: "never-0", State: protocol.Speak, Importance: 1})
	}
	f.flush(t, h.mem)
	if g := h.grant(); g.MessageID != "m1" || g.DecidedBy != protocol.DecidedDeadline {
		t.Fatalf("grant %+v", g)
	}
	for reason, want := range map[string]float64{"not_participant": 2, "unknown_message": 1} {
		if n := metrics.Value(h.m.DroppedStates.WithLabelValues(reason)); n != want {
			t.Errorf("dropped %s = %v, want %v", reason, n, want)
		}
	}
	if n := metrics.Value(h.m.BadInput.WithLabelValues("state", "not_member")); n != 1 {
		t.Errorf("states from off the roster counted %v, want 1", n)
	}
	if len(f.early) != 1 || f.early["b"].s.MessageID != "never-0" {
		t.Fatalf("early states %+v, want b's newest only", f.early)
	}
}

func TestLastVoteBeforeDecisionCounts(t *testing.T) {
	h := newHarness(t)
	a, b, c := h.join("a"), h.join("b"), h.join("c")
	f := h.activeFloor(Config{})
	h.say(a, "a", "m1")
	f.flush(t, h.mem)
	h.vote(b, protocol.StateParams{From: "b", MessageID: "m1", State: protocol.Speak, Importance: 9})
	h.vote(b, protocol.StateParams{From: "b", MessageID: "m1", State: protocol.Listen, Importance: 0})
	f.flush(t, h.mem)
	h.vote(c, protocol.StateParams{From: "c", MessageID: "m1", State: protocol.Speak, Importance: 2})
	if g := h.grant(); g.SpeakerID() != "c" {
		t.Fatalf("grant %+v, want c (b changed its mind to listen)", g)
	}
}

func TestNobodyEligibleRests(t *testing.T) {
	h := newHarness(t)
	a, b := h.join("a"), h.join("b")
	h.activeFloor(Config{})
	h.say(a, "a", "m1")
	h.vote(b, protocol.StateParams{From: "b", MessageID: "m1", State: protocol.Speak, Importance: 9, Closing: protocol.ClosingTerminal})
	if g := h.grant(); g.Speaker != nil || g.Reason != protocol.ReasonRest {
		t.Fatalf("grant %+v, want rest", g)
	}
}

func TestPendingBounded(t *testing.T) {
	h := newHarness(t)
	a, _ := h.join("a"), h.join("b")
	f := h.activeFloor(Config{MaxPending: 3})
	for i := range 4 {
		h.say(a, "a", fmt.Sprintf("m%d", i))
	}
	f.flush(t, h.mem)
	g := h.grant()
	if g.MessageID != "m0" || g.Reason != protocol.ReasonExpired || g.DecidedBy != protocol.DecidedEvicted {
		t.Fatalf("grant %+v, want m0 expired", g)
	}
	if len(f.pending) != 3 {
		t.Fatalf("%d pending, want 3", len(f.pending))
	}
	h.clk.Advance(DefaultVoteTimeout)
	for range 3 {
		if g := h.grant(); g.DecidedBy != protocol.DecidedDeadline {
			t.Fatalf("grant %+v", g)
		}
	}
	f.flush(t, h.mem)
	if len(f.pending) != 0 || h.clk.Pending() != 1 { // the election's beat
		t.Fatalf("%d pending, %d timers left (want the beat's only)", len(f.pending), h.clk.Pending())
	}
}

func TestLeavingParticipantDoesNotStallVote(t *testing.T) {
	h := newHarness(t)
	a, b, _ := h.join("a"), h.join("b"), h.join("c")
	f := h.activeFloor(Config{})
	h.say(a, "a", "m1")
	h.vote(b, protocol.StateParams{From: "b", MessageID: "m1", State: protocol.Speak, Importance: 3})
	f.flush(t, h.mem)
	h.noGrant()
	h.conns["c"].Kill() // its Last Will marks it offline
	g := h.grant()
	if g.SpeakerID() != "b" || g.DecidedBy != protocol.DecidedAllVoted {
		t.Fatalf("grant %+v", g)
	}
}

func TestStandbyTakesOver(t *testing.T) {
	h := newHarness(t)
	a, b := h.join("a"), h.join("b")
	f1, c1, _ := h.startFloor("f1", Config{})
	h.activate(f1)
	f2, _, _ := h.startFloor("f2", Config{})
	h.clk.Advance(DefaultJoinWait)
	f2.flush(t, h.mem)
	if !f1.Active() || f2.Active() {
		t.Fatalf("active: f1 %v f2 %v; want f1 only", f1.Active(), f2.Active())
	}
	h.say(a, "a", "m1")
	h.vote(b, protocol.StateParams{From: "b", MessageID: "m1", State: protocol.Speak, Importance: 3})
	if g := h.grant(); g.SpeakerID() != "b" {
		t.Fatalf("grant %+v", g)
	}
	f2.flush(t, h.mem)
	h.noGrant() // the standby decided too, silently

	// The active floor dies mid-vote: its will marks its claim offline.
	h.say(b, "b", "m2")
	f1.flush(t, h.mem)
	c1.Kill()
	f2.flush(t, h.mem)
	if !f2.Active() {
		t.Fatal("standby did not take over")
	}
	h.vote(a, protocol.StateParams{From: "a", MessageID: "m2", State: protocol.Speak, Importance: 5})
	if g := h.grant(); g.MessageID != "m2" || g.SpeakerID() != "a" {
		t.Fatalf("grant after takeover %+v", g)
	}
	var claim protocol.LeaderClaim
	json.Unmarshal(h.mem.Retained(h.s.FloorLeader("lr")), &claim)
	if claim.Instance != "f2" || !claim.Online {
		t.Fatalf("retained claim %+v", claim)
	}
}

func TestStateBeforeItsMessage(t *testing.T) {
	h, a, b, f := twoAndAFloor(t, Config{})
	// b's State overtakes a's Message (brokers order per publisher only).
	h.vote(b, protocol.StateParams{From: "b", MessageID: "m1", State: protocol.Speak, Importance: 3})
	f.flush(t, h.mem)
	h.say(a, "a", "m1")
	g := h.grant()
	if g.SpeakerID() != "b" || g.DecidedBy != protocol.DecidedAllVoted {
		t.Fatalf("grant %+v", g)
	}
	if n := metrics.Value(h.m.DroppedStates.WithLabelValues("unknown_message")); n != 0 {
		t.Fatalf("unknown_message = %v", n)
	}
}

// A voter that floods States for messages nobody sent keeps one early
// State; it never pushes out another voter's (issue 9, defect 7: early
// States are kept one per voter, not per message).
func TestEarlyStatesOnePerVoter(t *testing.T) {
	// The broker keeps all 2,000 (the fake drops past 1,000 queued, as
	// Mosquitto does, which made this test fail by chance: issue 27).
	h := newHarness(t, bustest.MemoryOptions{QueueLimit: 4000})
	a, b, c := h.join("a"), h.join("b"), h.join("c")
	f := h.activeFloor(Config{OrphanGrace: time.Hour})
	h.vote(c, protocol.StateParams{From: "c", MessageID: "real", State: protocol.Speak, Importance: 7})
	f.flush(t, h.mem)
	for i := range 2000 {
		h.vote(b, protocol.StateParams{From: "b", MessageID: fmt.Sprintf("ghost-%d", i), State: protocol.Speak, Importance: 3})
	}
	f.flush(t, h.mem)
	if len(f.early) != 2 {
		t.Fatalf("%d early states kept, want one per voter (2)", len(f.early))
	}
	if n := metrics.Value(h.m.DroppedStates.WithLabelValues("unknown_message")); n != 1999 {
		t.Fatalf("unknown_message = %v, want 1999", n)
	}
	h.say(a, "a", "real")
	h.vote(b, protocol.StateParams{From: "b", MessageID: "real", State: protocol.Listen, Importance: 1})
	g := h.grant()
	if g.MessageID != "real" || g.SpeakerID() != "c" || g.DecidedBy != protocol.DecidedAllVoted {
		t.Fatalf("grant %+v: c's early vote must count", g)
	}
	h.clk.Advance(DefaultVoteTimeout)
	h.vote(b, protocol.StateParams{From: "b", MessageID: "late", State: protocol.Speak, Importance: 3})
	f.flush(t, h.mem)
	if len(f.early) != 1 {
		t.Fatalf("stale early states not dropped: %d kept", len(f.early))
	}
}

func TestHumanHoldsTheFloor(t *testing.T) {
	h, a, b, f := twoAndAFloor(t, Config{})
	if err := b.SendHold(context.Background(), "b", true, h.clk.Now()); err != nil {
		t.Fatal(err)
	}
	f.flush(t, h.mem)
	h.say(a, "a", "m1")
	h.vote(b, protocol.StateParams{From: "b", MessageID: "m1", State: protocol.Speak, Importance: 9})
	if g := h.grant(); g.Speaker != nil || g.Reason != protocol.ReasonHeld {
		t.Fatalf("grant while held %+v", g)
	}
	b.SendHold(context.Background(), "b", false, h.clk.Now())
	f.flush(t, h.mem)
	h.say(a, "a", "m2")
	h.vote(b, protocol.StateParams{From: "b", MessageID: "m2", State: protocol.Speak, Importance: 9})
	if g := h.grant(); g.SpeakerID() != "b" {
		t.Fatalf("grant after release %+v", g)
	}
	// A hold ends when the body holding it goes offline.
	b.SendHold(context.Background(), "b", true, h.clk.Now())
	f.flush(t, h.mem)
	h.conns["b"].Kill()
	f.flush(t, h.mem)
	if len(f.holds) != 0 {
		t.Fatalf("hold outlived its body: %v", f.holds)
	}
}

func TestPresenceBounded(t *testing.T) {
	h := newHarness(t)
	h.members = nil
	for i := range MaxPresent + 10 {
		h.members = append(h.members, fmt.Sprintf("c%04d", i))
	}
	f, _, _ := h.startFloor("f1", Config{})
	for _, id := range h.members {
		h.join(id)
	}
	f.flush(t, h.mem)
	if len(f.present) != MaxPresent {
		t.Fatalf("%d companions followed, cap %d", len(f.present), MaxPresent)
	}
}

// End (Home Assistant's "end conversation"): the message being voted on is
// decided for nobody at once, the robots' next words get no turn, and a
// person's message starts the room again.
func TestEndRestsUntilAPersonSpeaks(t *testing.T) {
	h, a, b, f := twoAndAFloor(t, Config{})
	user := room.New(h.mem.Conn(nil, nil), h.s, "lr", nil, nil)
	h.say(a, "a", "m1")
	f.flush(t, h.mem)
	f.End()
	if g := h.grant(); g.MessageID != "m1" || g.Speaker != nil || g.Reason != protocol.ReasonRest {
		t.Fatalf("grant %+v, want m1 decided for nobody", g)
	}
	h.say(b, "b", "m2") // a robot's words after the end
	if g := h.grant(); g.MessageID != "m2" || g.Speaker != nil || len(g.Votes) != 0 {
		t.Fatalf("grant %+v, want m2 decided for nobody without a vote", g)
	}
	h.say(user, "user", "m3")
	h.vote(a, protocol.StateParams{From: "a", MessageID: "m3", State: protocol.Speak, Importance: 7})
	h.vote(b, protocol.StateParams{From: "b", MessageID: "m3", State: protocol.Listen, Importance: 1})
	if g := h.grant(); g.MessageID != "m3" || g.SpeakerID() != "a" {
		t.Fatalf("grant %+v, want a to answer the person", g)
	}
}

// The floor decides as soon as no missing vote can change the outcome
// (issue 28): a companion addressed by name at the highest importance,
// which wins every tie, is granted without waiting for the others; a
// vote that could still be outranked waits.
func TestSettledDecidesBeforeEveryVote(t *testing.T) {
	h := newHarness(t)
	a, b, _ := h.join("a"), h.join("b"), h.join("c")
	f := h.activeFloor(Config{VoteTimeout: 3 * time.Second})
	user := room.New(h.mem.Conn(nil, nil), h.s, "lr", nil, nil)
	h.say(user, "user", "m1")
	h.vote(b, protocol.StateParams{From: "b", MessageID: "m1", State: protocol.Speak, Importance: protocol.MaxImportance})
	f.flush(t, h.mem)
	h.noGrant() // speak, not selected: a missing selected vote would outrank it
	h.vote(a, protocol.StateParams{From: "a", MessageID: "m1", State: protocol.Speak, Selected: true, Importance: protocol.MaxImportance})
	g := h.grant() // c has not voted: it could at best tie, and a wins the tie (lower id, neither spoke)
	if g.SpeakerID() != "a" || g.Reason != protocol.ReasonSelected || g.DecidedBy != protocol.DecidedSettled ||
		len(g.Votes) != 2 || len(g.Missing) != 1 || g.Missing[0] != "c" {
		t.Fatalf("grant %+v", g)
	}
	// a spoke (its answer is m2): b and c owe votes; neither has spoken,
	// so b's selected vote at the highest wins the tie against c.
	h.say(a, "a", "m2")
	h.vote(b, protocol.StateParams{From: "b", MessageID: "m2", State: protocol.Speak, Selected: true, Importance: protocol.MaxImportance})
	if g := h.grant(); g.SpeakerID() != "b" || g.DecidedBy != protocol.DecidedSettled {
		t.Fatalf("grant %+v", g)
	}
	// b spoke (m3): a and c owe votes; c, which never spoke, would win a
	// tie with a, which has, so a's selected vote at the highest waits for
	// c until the deadline.
	h.say(b, "b", "m3")
	h.vote(a, protocol.StateParams{From: "a", MessageID: "m3", State: protocol.Speak, Selected: true, Importance: protocol.MaxImportance})
	f.flush(t, h.mem)
	h.noGrant()
	h.clk.Advance(3 * time.Second)
	if g := h.grant(); g.SpeakerID() != "a" || g.DecidedBy != protocol.DecidedDeadline {
		t.Fatalf("grant %+v", g)
	}
}

// A granted speaker that takes its vote back before it says anything (its
// model's streamed answer failed after the vote left, issue 28) makes the
// floor decide again without it, once: before, the floor granted it again
// until RegrantFor while it had nothing to say, and the room stalled.
func TestRetractedVoteIsDecidedAgain(t *testing.T) {
	h := newHarness(t)
	a, b := h.join("a"), h.join("b")
	f := h.activeFloor(Config{VoteTimeout: 3 * time.Second})
	user := room.New(h.mem.Conn(nil, nil), h.s, "lr", nil, nil)
	h.say(user, "user", "m1")
	h.vote(a, protocol.StateParams{From: "a", MessageID: "m1", State: protocol.Speak, Importance: 9})
	h.vote(b, protocol.StateParams{From: "b", MessageID: "m1", State: protocol.Speak, Importance: 5})
	if g := h.grant(); g.SpeakerID() != "a" {
		t.Fatalf("grant %+v", g)
	}
	h.vote(a, protocol.StateParams{From: "a", MessageID: "m1", State: protocol.Listen})
	g := h.grant()
	if g.SpeakerID() != "b" || g.DecidedBy != protocol.DecidedRetracted || g.MessageID != "m1" {
		t.Fatalf("grant %+v, want b decided again (retracted)", g)
	}
	h.vote(b, protocol.StateParams{From: "b", MessageID: "m1", State: protocol.Listen}) // b fails too: the room rests
	if g := h.grant(); g.SpeakerID() != "" || g.DecidedBy != protocol.DecidedRetracted {
		t.Fatalf("grant %+v, want a rest", g)
	}
	h.vote(a, protocol.StateParams{From: "a", MessageID: "m1", State: protocol.Listen}) // a copy changes nothing
	f.flush(t, h.mem)
	h.noGrant()
}
