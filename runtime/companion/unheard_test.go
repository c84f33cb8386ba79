package companion_test

import (
	"testing"
	"time"

	"github.com/chorus-robotics/chorus/runtime/metrics"

	"github.com/chorus-robotics/chorus/runtime/protocol"
	"github.com/chorus-robotics/chorus/runtime/room"
)

// Words the floor rested on by its deadline while votes were owed are said
// once more, with the same id, and again when a robot that owed its vote
// comes back online: at QoS 0, robots reconnecting after a NATS node's
// loss never heard them, voted on nothing, and the conversation ended
// there (the failover test, node 1 lost mid-vote, 3 runs of 4; the robots
// were still reconnecting when the room rested). A rest every vote
// decided, a second such rest, a robot that owed nothing coming back, or
// anything after newer words, says nothing again.
func TestWordsTheRoomDidNotHearAreSaidOnceMore(t *testing.T) {
	r, states := kyokoAlone(t, "Kyoko says")
	m := r.userSays("hello")
	states.wait(t, "kyoko", m)
	fl := r.floorRoom()
	if err := fl.SendGrant(r.ctx, grantTo("kyoko", m)); err != nil {
		t.Fatal(err)
	}
	var said string
	for timeout := time.After(5 * time.Second); said == ""; {
		select {
		case e := <-r.events:
			if msg, ok := e.(protocol.Message); ok && msg.Params.From == "kyoko" {
				said = msg.Params.ID
			}
		case <-timeout:
			t.Fatal("kyoko did not speak")
		}
	}
	// copies counts kyoko's words arriving within d.
	copies := func(d time.Duration) int {
		n := 0
		for timeout := time.After(d); ; {
			select {
			case e := <-r.events:
				if msg, ok := e.(protocol.Message); ok && msg.Params.ID == said {
					n++
				}
			case <-timeout:
				return n
			}
		}
	}
	rest := func(by string, missing ...string) protocol.TurnGrant {
		return protocol.TurnGrant{From: "floor", MessageID: said, Reason: protocol.ReasonRest, DecidedBy: by, Votes: []protocol.Vote{}, Missing: missing}
	}
	fl.SendGrant(r.ctx, rest(protocol.DecidedAllVoted)) // every vote in: nothing to say again
	if n := copies(500 * time.Millisecond); n != 0 {
		t.Fatalf("a rest every vote decided: kyoko said her words %d times more", n)
	}
	fl.SendGrant(r.ctx, rest(protocol.DecidedDeadline, "hana", "aya"))
	fl.SendGrant(r.ctx, rest(protocol.DecidedDeadline, "hana", "aya")) // once per Message
	if n := copies(time.Second); n != 1 {
		t.Fatalf("rested by deadline with votes owed: kyoko said her words %d times more; want once", n)
	}
	// hana owed a vote and comes back: once more for her; then aya, who
	// owed one too — but the person spoke meanwhile: nothing more.
	back := func(id string) {
		rm := room.New(nil, r.s, "lr", nil, nil)
		birth, will := rm.PresenceMessages(id, id)
		r.dial(id, birth, will)
	}
	back("hana")
	if n := copies(time.Second); n != 1 {
		t.Fatalf("hana, who did not hear them, came back: kyoko said her words %d times more; want once", n)
	}
	newer := r.userSays("something newer")
	states.wait(t, "kyoko", newer) // she has heard them before aya is back
	back("aya")
	if n := copies(time.Second); n != 0 {
		t.Fatalf("after newer words kyoko said the rested ones %d times more", n)
	}
	if got := metrics.Value(r.m.Resent.WithLabelValues("unheard")); got != 2 {
		t.Fatalf("chorus_companion_resent_total{kind=unheard} = %v, want 2", got)
	}
}
