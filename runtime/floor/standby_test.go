package floor

import (
	"testing"

	"github.com/chorus-robotics/chorus/runtime/metrics"

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
	// A grant first published on taking over is this floor's grant: the
	// count says how many turns the floor granted (what the companions
	// may play), announced late or not.
	if n := metrics.Value(h.m.Grants.WithLabelValues(protocol.ReasonSpeak)); n != 1 {
		t.Fatalf("chorus_floor_grants_total{reason=speak} = %v after announcing one grant, want 1", n)
	}
}
