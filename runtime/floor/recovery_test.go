package floor

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chorus-robotics/chorus/runtime/metrics"

	"github.com/chorus-robotics/chorus/runtime/logtest"

	"github.com/chorus-robotics/chorus/runtime/bus/bustest"
	"github.com/chorus-robotics/chorus/runtime/election"
	"github.com/chorus-robotics/chorus/runtime/protocol"
	"github.com/chorus-robotics/chorus/runtime/room"
)

// A grant lost on its way to the speaker (a broker that drops a full
// queue) is published again every RegrantEvery until the speaker answers;
// then the floor stops (issue 9, defect 2).
func TestLostGrantIsPublishedAgainUntilTheSpeakerAnswers(t *testing.T) {
	var lost atomic.Int32
	h := newHarness(t, bustest.MemoryOptions{Drop: func(to *bustest.MemConn, topic string, p []byte) bool {
		// b's first grant never reaches b.
		return to.Name() == "b" && topic == "chorus/rooms/lr/turns" && lost.CompareAndSwap(0, 1)
	}})
	a, b := h.join("a"), h.join("b")
	bGrants := make(chan protocol.TurnGrant, 16)
	b.OnGrant(context.Background(), func(g protocol.TurnGrant) { bGrants <- g })
	f := h.activeFloor(Config{})
	h.say(a, "a", "m1")
	h.vote(b, protocol.StateParams{From: "b", MessageID: "m1", State: protocol.Speak, Importance: 5})
	if g := h.grant(); g.SpeakerID() != "b" {
		t.Fatalf("grant %+v", g)
	}
	f.flush(t, h.mem)
	select {
	case g := <-bGrants:
		t.Fatalf("b got %+v; the test meant to lose it", g)
	default:
	}
	h.clk.Advance(DefaultRegrantEvery)
	f.flush(t, h.mem)
	select {
	case g := <-bGrants:
		if g.MessageID != "m1" || g.SpeakerID() != "b" {
			t.Fatalf("regrant %+v", g)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the lost grant was not published again within RegrantEvery")
	}
	if n := metrics.Value(h.m.Regrants); n != 1 {
		t.Fatalf("regrants = %v, want 1", n)
	}
	// b answers: no more regrants.
	h.say(b, "b", "m2")
	f.flush(t, h.mem)
	for len(h.grants) > 0 {
		<-h.grants
	}
	h.clk.Advance(5 * DefaultRegrantEvery)
	f.flush(t, h.mem)
	if n := metrics.Value(h.m.Regrants); n != 1 {
		t.Fatalf("regrants after the answer = %v, want still 1", n)
	}
}

// The floor gives up re-granting after RegrantFor, and at once when the
// speaker leaves.
func TestRegrantStopsWhenTheSpeakerLeavesOrAfterRegrantFor(t *testing.T) {
	h, a, b, f := twoAndAFloor(t, Config{RegrantFor: 3 * time.Second})
	h.say(a, "a", "m1")
	h.vote(b, protocol.StateParams{From: "b", MessageID: "m1", State: protocol.Speak, Importance: 5})
	h.grant()
	for range 5 {
		h.clk.Advance(DefaultRegrantEvery)
		f.flush(t, h.mem)
	}
	if n := metrics.Value(h.m.Regrants); n != 2 {
		t.Fatalf("regrants = %v, want 2 (at 1 s and 2 s, then RegrantFor)", n)
	}
	h.say(b, "b", "m2")
	h.vote(a, protocol.StateParams{From: "a", MessageID: "m2", State: protocol.Speak, Importance: 5})
	h.grant()
	h.conns["a"].Kill()
	f.flush(t, h.mem)
	h.clk.Advance(3 * DefaultRegrantEvery)
	f.flush(t, h.mem)
	if n := metrics.Value(h.m.Regrants); n != 2 {
		t.Fatalf("regrants after the speaker left = %v, want still 2", n)
	}
}

// A floor whose leader claim never comes back from the broker (an ACL that
// denies floor/leader) says so loudly and grants nothing, so two such
// floors can never both grant (issue 9, defect 6).
func TestClaimThatNeverComesBackGrantsNothing(t *testing.T) {
	h := newHarness(t, bustest.MemoryOptions{Drop: func(to *bustest.MemConn, topic string, p []byte) bool {
		return topic == "chorus/rooms/lr/floor/leader" // the broker denies every claim
	}})
	a, b := h.join("a"), h.join("b")
	f1, _, _ := h.startFloor("f1", Config{})
	f2, _, _ := h.startFloor("f2", Config{})
	h.clk.Advance(DefaultJoinWait)
	f1.flush(t, h.mem)
	f2.flush(t, h.mem)
	h.clk.Advance(DefaultClaimCheck)
	f1.flush(t, h.mem)
	f2.flush(t, h.mem)
	if f1.Active() || f2.Active() {
		t.Fatalf("active f1 %v f2 %v with claims the broker drops", f1.Active(), f2.Active())
	}
	if n := metrics.Value(h.m.ClaimFailures); n != 2 {
		t.Fatalf("claim failures = %v, want 2", n)
	}
	h.say(a, "a", "m1")
	h.vote(b, protocol.StateParams{From: "b", MessageID: "m1", State: protocol.Speak, Importance: 5})
	f1.flush(t, h.mem)
	f2.flush(t, h.mem)
	h.noGrant()
	// They keep trying.
	h.clk.Advance(claimRetry)
	f1.flush(t, h.mem)
	h.clk.Advance(DefaultClaimCheck)
	f1.flush(t, h.mem)
	if n := metrics.Value(h.m.ClaimFailures); n < 3 {
		t.Fatalf("claim failures = %v, want the floors to retry", n)
	}
}

// Only the room's members vote. A logged-in client that announces its own
// presence and votes itself selected is not a participant and never gets
// the floor, and being present but silent it does not push decisions to
// the deadline (issue 9, defect 5).
func TestNonMembersNeverVote(t *testing.T) {
	h := newHarness(t)
	a, b := h.join("a"), h.join("b")
	intruder := h.join("mallory") // not on the roster
	f := h.activeFloor(Config{})
	h.say(a, "a", "m1")
	h.vote(intruder, protocol.StateParams{From: "mallory", MessageID: "m1", State: protocol.Speak, Selected: true, Importance: 10})
	h.vote(b, protocol.StateParams{From: "b", MessageID: "m1", State: protocol.Speak, Importance: 1})
	g := h.grant()
	if g.SpeakerID() != "b" || g.DecidedBy != protocol.DecidedAllVoted || len(g.Missing) != 0 {
		t.Fatalf("grant %+v: want b, decided when b voted", g)
	}
	if f.present["mallory"] {
		t.Fatal("a non-member counts as present")
	}
}

// Control events — a presence change, a hold, a leader claim — are never
// dropped, even while Messages and States fill the floor's queue (issue 9,
// defect 7). Here the standby's queue is full when the active floor's will
// arrives: it still takes over.
func TestControlEventsSurviveAFullQueue(t *testing.T) {
	h := newHarness(t)
	a, b := h.join("a"), h.join("b")
	f1, c1, _ := h.startFloor("f1", Config{})
	h.activate(f1)

	conn := h.mem.NamedConn("floor-f2", nil, election.Will(h.s, "lr", "f2"))
	r := room.New(conn, h.s, "lr", nil, h.m)
	r.SetMembers(h.members)
	f2, err := New(Config{Room: r, Instance: "f2", Clock: h.clk})
	if err != nil {
		t.Fatal(err)
	}
	for len(f2.events.C) < cap(f2.events.C) { // a flood the loop has not caught up with
		f2.events.C <- event{state: protocol.StateParams{From: "b", MessageID: "flood", State: protocol.Speak, Closing: protocol.ClosingNone}}
	}
	c1.Kill() // the active floor dies: its will marks its claim offline
	f2.el.Put(protocol.LeaderClaim{Instance: "f1", Online: false, Since: h.clk.Now()})
	f2.ctl.presenceEvent(room.PresenceEvent{ID: "a", Presence: protocol.Presence{Online: true, Device: "a-dev", Since: h.clk.Now()}})
	f2.ctl.presenceEvent(room.PresenceEvent{ID: "b", Presence: protocol.Presence{Online: true, Device: "b-dev", Since: h.clk.Now()}})
	f2.ctl.hold(protocol.Hold{From: "b", Held: true, Since: h.clk.Now()})
	f2.push(event{state: protocol.StateParams{From: "b", MessageID: "x"}}, "state") // refused and counted
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); f2.Run(ctx) }()
	t.Cleanup(func() { cancel(); wg.Wait() })
	waitFor(t, f2.subscribed)
	f2.flush(t, h.mem)
	if !f2.Active() {
		t.Fatal("the standby lost the offline claim in a full queue and stays standby")
	}
	if !f2.holds["b"] {
		t.Fatal("the hold was lost in a full queue")
	}
	if n := metrics.Value(h.m.QueueDrops.WithLabelValues("floor", "state")); n != 1 {
		t.Fatalf("queue drops = %v, want 1", n)
	}
	_, _ = a, b
}

// The mailbox keeps the latest control event per key however many come.
func TestMailboxIsBoundedAndKeepsTheLatest(t *testing.T) {
	m := newMailbox()
	for i := range 100_000 {
		m.presenceEvent(room.PresenceEvent{ID: "a", Presence: protocol.Presence{Online: i%2 == 0}})
		m.grant(protocol.TurnGrant{MessageID: fmt.Sprint(i)})
	}
	d := m.take()
	if len(d.presence) != 1 || d.presence["a"].Presence.Online {
		t.Fatalf("presence %+v, want a's latest (offline)", d.presence)
	}
	if len(d.grants) != maxSeenGrants || d.grants[len(d.grants)-1].MessageID != "99999" {
		t.Fatalf("%d grants kept, want the newest %d", len(d.grants), maxSeenGrants)
	}
}

// A standby's record of the grants it saw stays bounded however long the
// room runs (issue 9, defect 7).
func TestStandbyBooksAreBounded(t *testing.T) {
	h := newHarness(t)
	h.join("a")
	h.activeFloor(Config{})
	f2, _, _ := h.startFloor("f2", Config{})
	h.clk.Advance(DefaultJoinWait)
	f2.flush(t, h.mem)
	floorRoom := room.New(h.mem.Conn(nil, nil), h.s, "lr", nil, nil)
	for i := range 2000 {
		s := "a"
		if err := floorRoom.SendGrant(context.Background(), protocol.TurnGrant{From: "floor", MessageID: fmt.Sprintf("g%d", i),
			Speaker: &s, Reason: protocol.ReasonSpeak, DecidedBy: protocol.DecidedAllVoted, Votes: []protocol.Vote{}}); err != nil {
			t.Fatal(err)
		}
	}
	f2.flush(t, h.mem)
	if n := f2.done.Len(); n > recentDecided {
		t.Fatalf("standby remembers %d grants, cap %d", n, recentDecided)
	}
}

// pendingOnReconnectable is a room of a and b whose floor f1 (votes due
// in 2 s) has a's m1 pending; conn is the floor's connection, for the test
// to lose and bring back.
func pendingOnReconnectable(t *testing.T) (h *harness, b *room.Room, f *Floor, conn *bustest.MemConn) {
	t.Helper()
	h = newHarness(t)
	a, b := h.join("a"), h.join("b")
	f, conn, _ = h.startFloor("f1", Config{VoteTimeout: 2 * time.Second})
	h.activate(f)
	h.say(a, "a", "m1")
	f.flush(t, h.mem)
	return h, b, f, conn
}

// voteCountsAfterReconnect has b vote to speak on m1, and fails the test
// unless the floor grants it b at once, everyone having voted.
func (h *harness) voteCountsAfterReconnect(b *room.Room) {
	h.t.Helper()
	h.vote(b, protocol.StateParams{From: "b", MessageID: "m1", State: protocol.Speak, Importance: 5})
	if g := h.grant(); g.SpeakerID() != "b" || g.DecidedBy != protocol.DecidedAllVoted {
		h.t.Fatalf("grant %+v: b's State, sent after the reconnect, must count", g)
	}
}

// After its connection comes back, the floor claims again (a restarted
// broker forgot the retained claim) and gives pending votes a grace period:
// it could not hear States while it was away.
func TestReconnectReclaimsAndGivesPendingVotesGrace(t *testing.T) {
	h, b, f, conn := pendingOnReconnectable(t)
	h.clk.Advance(1900 * time.Millisecond)
	f.flush(t, h.mem)
	// A restarted broker forgot the retained claim.
	if err := conn.Publish(context.Background(), h.s.FloorLeader("lr"), nil, true); err != nil {
		t.Fatal(err)
	}
	conn.Reconnect()
	f.flush(t, h.mem)
	if after := h.mem.Retained(h.s.FloorLeader("lr")); len(after) == 0 {
		t.Fatal("the floor did not claim again after reconnecting")
	}
	// Past the original deadline, and past the wait of a floor back from
	// a cut for a crossing claim, after which it leads again.
	h.clk.Advance(DefaultJoinWait)
	f.flush(t, h.mem)
	if !f.Active() {
		t.Fatal("the floor did not lead again once its claim came back and the join wait passed")
	}
	h.noGrant()
	h.voteCountsAfterReconnect(b)
}

// While the floor's connection is lost it cannot hear States: a deadline
// that falls in the outage does not decide (it would rest the room with
// nobody's votes); after the reconnect the votes, sent again, count.
func TestNoDeadlineDecidesWhileTheFloorCannotHear(t *testing.T) {
	h, b, f, conn := pendingOnReconnectable(t)
	conn.Lose()
	f.flush(t, h.mem)
	h.clk.Advance(5 * time.Second) // the outage outlasts the deadline
	f.flush(t, h.mem)
	h.noGrant()
	conn.Reconnect()
	f.flush(t, h.mem)
	h.clk.Advance(time.Second)
	f.flush(t, h.mem)
	h.noGrant()
	h.voteCountsAfterReconnect(b)
}

// A message lost on its way to the floor (a user's opening line, say) but
// heard by the companions is decided from their States once OrphanGrace
// passes: the room does not wait for a message that will never come.
func TestMessageLostToTheFloorIsDecidedFromItsStates(t *testing.T) {
	h := newHarness(t, bustest.MemoryOptions{Drop: func(to *bustest.MemConn, topic string, p []byte) bool {
		return to.Name() == "floor-f1" && topic == "chorus/rooms/lr/messages/user"
	}})
	a, b, c := h.join("a"), h.join("b"), h.join("c")
	f := h.activeFloor(Config{})
	h.say(room.New(h.mem.Conn(nil, nil), h.s, "lr", nil, nil), "user", "lost")
	h.vote(b, protocol.StateParams{From: "b", MessageID: "lost", State: protocol.Speak, Importance: 4})
	h.vote(c, protocol.StateParams{From: "c", MessageID: "lost", State: protocol.Speak, Importance: 6})
	f.flush(t, h.mem)
	h.noGrant()
	h.clk.Advance(DefaultOrphanGrace)
	f.flush(t, h.mem)
	h.noGrant() // a has not voted yet: it may be the sender
	h.vote(a, protocol.StateParams{From: "a", MessageID: "lost", State: protocol.Listen, Importance: 1})
	g := h.grant()
	if g.MessageID != "lost" || g.SpeakerID() != "c" || g.DecidedBy != protocol.DecidedAllVoted {
		t.Fatalf("grant %+v", g)
	}
	if n := metrics.Value(h.m.Recovered.WithLabelValues("message")); n != 1 {
		t.Fatalf("recovered = %v", n)
	}
}

// Issue 27: a stopping broker sends every companion's Last Will while they
// think, so the floor rests on the message with nobody left to vote; their
// votes come after the reconnect. The message is decided again on them and
// granted, once, and every decision is logged at debug with why it closed.
func TestVotesAfterTheRoomRestedOnAMessageDecideItAgain(t *testing.T) {
	h := newHarness(t)
	var logs logtest.Buffer
	h.log = slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	h.join("a")
	h.join("b")
	f := h.activeFloor(Config{})
	user := room.New(h.mem.Conn(nil, nil), h.s, "lr", nil, nil)
	h.say(user, "user", "m1")
	f.flush(t, h.mem)
	h.conns["a"].Kill() // the broker stops: both wills
	h.conns["b"].Kill()
	if g := h.grant(); g.MessageID != "m1" || g.SpeakerID() != "" || g.Reason != protocol.ReasonRest {
		t.Fatalf("grant %+v: want a rest with nobody left to vote", g)
	}
	// The broker is back: the companions' votes arrive before their
	// presence, one after the other; the first does not decide alone.
	a, b := h.join("a"), h.join("b")
	h.vote(b, protocol.StateParams{From: "b", MessageID: "m1", State: protocol.Speak, Importance: 2})
	f.flush(t, h.mem)
	h.noGrant()
	h.vote(a, protocol.StateParams{From: "a", MessageID: "m1", State: protocol.Speak, Importance: 6})
	f.flush(t, h.mem)
	h.noGrant() // c and latecomer, members too, may still vote
	h.clk.Advance(thinkMargin)
	g := h.grant()
	if g.MessageID != "m1" || g.SpeakerID() != "a" || g.DecidedBy != protocol.DecidedDeadline || len(g.Votes) != 2 {
		t.Fatalf("grant %+v: want m1 decided again for a, on both votes", g)
	}
	if n := metrics.Value(h.m.Recovered.WithLabelValues("late_vote")); n != 1 {
		t.Fatalf("recovered late_vote = %v, want 1", n)
	}
	// Granted to a speaker: final. A vote after it changes nothing.
	h.vote(b, protocol.StateParams{From: "b", MessageID: "m1", State: protocol.Speak, Importance: 10, Selected: true})
	f.flush(t, h.mem)
	h.noGrant()
	out := logs.String()
	for _, want := range []string{`message=m1 speaker="" reason=rest closed_by=all-voted votes="" missing=[] left="[a b]"`,
		`message=m1 speaker=a reason=speak closed_by=deadline votes="a=speak/6 b=speak/2" missing="[c latecomer]"`} {
		if !strings.Contains(out, want) {
			t.Errorf("the log lacks %s:\n%s", want, out)
		}
	}
}

// A vote owed for a rested message counts only while nothing newer was
// said, only once per voter, and never from outside the roster.
func TestLateVotesForARestedMessageAreBounded(t *testing.T) {
	h, a, b, f := twoAndAFloor(t, Config{VoteTimeout: time.Second})
	h.say(a, "a", "m1")
	f.flush(t, h.mem)
	h.clk.Advance(time.Second) // b never votes in time
	if g := h.grant(); g.SpeakerID() != "" || g.DecidedBy != protocol.DecidedDeadline {
		t.Fatalf("grant %+v", g)
	}
	// The writer of m1 and strangers never vote on it; a late vote does.
	h.vote(a, protocol.StateParams{From: "a", MessageID: "m1", State: protocol.Speak, Importance: 9})
	stranger := room.New(h.mem.NamedConn("zed", nil, nil), h.s, "lr", nil, nil)
	h.vote(stranger, protocol.StateParams{From: "zed", MessageID: "m1", State: protocol.Speak, Importance: 9})
	f.flush(t, h.mem)
	h.noGrant()
	h.vote(b, protocol.StateParams{From: "b", MessageID: "m1", State: protocol.Listen, Importance: 1})
	f.flush(t, h.mem)
	h.noGrant() // decided again for nobody: not announced twice
	// Newer words: a vote still owed for m1 no longer counts.
	h.say(b, "b", "m2")
	h.vote(a, protocol.StateParams{From: "a", MessageID: "m2", State: protocol.Listen, Importance: 1})
	if g := h.grant(); g.MessageID != "m2" || g.SpeakerID() != "" {
		t.Fatalf("grant %+v", g)
	}
	h.vote(a, protocol.StateParams{From: "a", MessageID: "m1", State: protocol.Speak, Importance: 9})
	f.flush(t, h.mem)
	h.noGrant()
}

// A granted speaker that "leaves" (a stopping broker's Last Will) before
// its grant reached it gets the grant again as soon as it is back.
func TestGrantIsPublishedAgainWhenTheSpeakerComesBack(t *testing.T) {
	h, a, b, f := twoAndAFloor(t, Config{})
	h.say(a, "a", "m1")
	h.vote(b, protocol.StateParams{From: "b", MessageID: "m1", State: protocol.Speak, Importance: 5})
	if g := h.grant(); g.SpeakerID() != "b" {
		t.Fatalf("grant %+v", g)
	}
	h.conns["b"].Kill()
	f.flush(t, h.mem)
	h.clk.Advance(3 * DefaultRegrantEvery) // away: nothing published for it
	f.flush(t, h.mem)
	h.noGrant()
	h.join("b")
	f.flush(t, h.mem)
	if g := h.grant(); g.MessageID != "m1" || g.SpeakerID() != "b" {
		t.Fatalf("grant %+v: want m1's grant to b again", g)
	}
}
