package floor

import (
	"testing"
	"time"

	"github.com/chorus-robotics/chorus/runtime/protocol"
)

func TestMessageBeforeClaimIsAnnounced(t *testing.T) {
	h := newHarness(t)
	a, b := h.join("a"), h.join("b")
	f, _, _ := h.startFloor("f1", Config{})
	h.say(a, "a", "m1")
	h.vote(b, protocol.StateParams{From: "b", MessageID: "m1", State: protocol.Speak, Importance: 3})
	f.flush(t)
	h.noGrant()
	h.clk.Advance(DefaultJoinWait)
	f.flush(t)
	if g := h.grant(); g.SpeakerID() != "b" {
		t.Fatalf("grant %+v", g)
	}
	_ = time.Second
}
