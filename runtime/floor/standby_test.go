package floor

import (
	"testing"

	"github.com/chorus-robotics/chorus/runtime/protocol"
)

func TestMessageBeforeClaimIsAnnounced(t *testing.T) {
	h := newHarness(t)
	a, b := h.join("a"), h.join("b")
	f, _, _ := h.startFloor("f1", Config{})
	h.say(a, "a", "m1")
	h.vote(b, protocol.StateParams{From: "b", MessageID: "m1", State: protocol.Speak, Importance: 3})
	f.flush(t, h.mem)
	h.noGrant()
	h.activate(f)
	if g := h.grant(); g.SpeakerID() != "b" {
		t.Fatalf("grant %+v", g)
	}
}
