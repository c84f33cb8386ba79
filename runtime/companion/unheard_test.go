package companion_test

import (
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/chorus-robotics/chorus/runtime/protocol"
)

// Words the floor rested on by its deadline while votes were owed are said
// once more, with the same id: at QoS 0, robots reconnecting after a NATS
// node's loss never heard them, voted on nothing, and the conversation
// ended there (the failover test, node 1 lost mid-vote, 3 runs of 4). A
// rest every vote decided, or a second such rest, says nothing again.
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
	if got := testutil.ToFloat64(r.m.Resent.WithLabelValues("unheard")); got != 1 {
		t.Fatalf("chorus_companion_resent_total{kind=unheard} = %v", got)
	}
}
