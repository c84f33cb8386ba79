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
