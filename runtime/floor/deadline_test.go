package floor

import (
	"context"
	"testing"
	"time"

	"github.com/chorus-robotics/chorus/runtime/protocol"
	"github.com/chorus-robotics/chorus/runtime/room"
)

// announce publishes id's presence with a think time.
func (h *harness) announce(r *room.Room, id string, think time.Duration) {
	h.t.Helper()
	a := r.Announce(id, id+"-dev", think)
	b := a.Birth(h.clk.Now())
	if err := r.Bus.Publish(context.Background(), b.Topic, b.Payload, true); err != nil {
		h.t.Fatal(err)
	}
}

// A companion on a slow model announces how long it thinks; the floor
// waits that long (plus a margin) for its vote instead of resting the room
// at vote_timeout (issue 15, defect 1).
func TestDeadlineSizedFromAnnouncedThinkTimes(t *testing.T) {
	h, a, b, f := twoAndAFloor(t, Config{VoteTimeout: 3 * time.Second, VoteCeiling: 30 * time.Second})
	h.announce(b, "b", 8*time.Second)
	f.flush(t, h.mem)
	h.say(a, "a", "m1")
	f.flush(t, h.mem)
	h.clk.Advance(3 * time.Second)
	f.flush(t, h.mem)
	h.noGrant() // vote_timeout alone would have rested the room here
	h.clk.Advance(5 * time.Second)
	f.flush(t, h.mem)
	h.vote(b, protocol.StateParams{From: "b", MessageID: "m1", State: protocol.Speak, Importance: 5})
	if g := h.grant(); g.SpeakerID() != "b" || g.DecidedBy != protocol.DecidedAllVoted {
		t.Fatalf("grant %+v: the slow model's vote must count", g)
	}
	// A dead slow companion holds the room up no longer than it announced.
	h.say(a, "a", "m2")
	f.flush(t, h.mem)
	h.clk.Advance(8*time.Second + thinkMargin - time.Millisecond)
	f.flush(t, h.mem)
	h.noGrant()
	h.clk.Advance(time.Millisecond)
	if g := h.grant(); g.MessageID != "m2" || g.DecidedBy != protocol.DecidedDeadline {
		t.Fatalf("grant %+v", g)
	}
}

// However long a companion says it thinks, no vote waits past the ceiling;
// an announcement that grows during a vote stretches that vote.
func TestVoteCeilingAndStretch(t *testing.T) {
	h, a, b, f := twoAndAFloor(t, Config{VoteTimeout: 2 * time.Second, VoteCeiling: 10 * time.Second})
	h.announce(b, "b", time.Hour)
	f.flush(t, h.mem)
	h.say(a, "a", "m1")
	f.flush(t, h.mem)
	h.clk.Advance(10 * time.Second)
	if g := h.grant(); g.MessageID != "m1" || g.DecidedBy != protocol.DecidedDeadline {
		t.Fatalf("grant %+v, want the ceiling to decide", g)
	}
	h.announce(b, "b", time.Second)
	f.flush(t, h.mem)
	h.say(a, "a", "m2")
	f.flush(t, h.mem)
	h.clk.Advance(time.Second)
	f.flush(t, h.mem)
	h.announce(b, "b", 6*time.Second) // slower than it thought
	f.flush(t, h.mem)
	h.clk.Advance(2 * time.Second) // past vote_timeout
	f.flush(t, h.mem)
	h.noGrant()
	h.clk.Advance(3*time.Second + thinkMargin)
	if g := h.grant(); g.MessageID != "m2" || g.DecidedBy != protocol.DecidedDeadline {
		t.Fatalf("grant %+v", g)
	}
}

// A deadline never counts the time the floor itself was disconnected: a
// vote gets back the part of its window the outage took, and at least
// reconnectGrace. On a NATS cluster a lost node took the floor's
// connection, the other nodes refused connects for 7 s, and the floor
// rested the room 1.5 s after it was back, every vote still owed.
func TestNoDeadlineForTheTimeTheFloorWasDisconnected(t *testing.T) {
	const window = 3 * time.Second
	for _, tc := range []struct {
		name           string
		lostAt, outage time.Duration // after the message arrived
		left           time.Duration // the wait from the reconnect to the deadline
	}{
		{"across the deadline", 500 * time.Millisecond, 7 * time.Second, window - 500*time.Millisecond},
		{"within the window", 500 * time.Millisecond, time.Second, window - 500*time.Millisecond},
		{"just before the deadline", window - 100*time.Millisecond, 7 * time.Second, reconnectGrace},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t)
			a := h.join("a")
			h.join("b") // owes its vote
			f, conn, _ := h.startFloor("f1", Config{VoteTimeout: window})
			h.activate(f)
			h.say(a, "a", "m1")
			f.flush(t, h.mem)
			h.clk.Advance(tc.lostAt)
			f.flush(t, h.mem)
			conn.Lose()
			f.flush(t, h.mem)
			h.clk.Advance(tc.outage)
			f.flush(t, h.mem)
			conn.Reconnect()
			f.flush(t, h.mem)
			h.clk.Advance(DefaultJoinWait) // the claim read back: it leads again
			f.flush(t, h.mem)
			if !f.Active() {
				t.Fatal("the floor did not lead again after the reconnect")
			}
			h.clk.Advance(tc.left - DefaultJoinWait - time.Millisecond)
			f.flush(t, h.mem)
			h.noGrant()
			h.clk.Advance(time.Millisecond)
			f.flush(t, h.mem)
			if g := h.grant(); g.MessageID != "m1" || g.DecidedBy != protocol.DecidedDeadline {
				t.Fatalf("grant %+v, want m1 decided by its deadline", g)
			}
		})
	}
}
