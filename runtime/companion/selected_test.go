package companion_test

import (
	"strings"
	"testing"

	"github.com/chorus-robotics/chorus/runtime/protocol"
)

// A State's selected is decided by the rules (brain.Addressed), not asked
// of the model (its vote is shorter, issue 40): a Message for this
// companion alone, or a question naming it, selects it; one for everyone
// does not.
func TestSelectedByTheRules(t *testing.T) {
	for _, tc := range []struct {
		name string
		to   []string
		text string
		want bool
	}{
		{"for kyoko alone", []string{"kyoko"}, "Good morning.", true},
		{"a question naming kyoko", nil, "Kyoko, what time is it?", true},
		{"for everyone", nil, "Good morning, everyone.", false},
		{"named in passing", nil, "That's lovely, Kyoko!", false},
		{"heard: a question naming kyoko, no question mark", nil, "kyoko what time is it", true},
		{"heard: naming kyoko, no question", nil, "kyoko is lovely", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := speaker("Hello.") // its vote says selected: false
			close(b.Gate)
			r := newStreamRig(t, b, nil)
			m := protocol.NewMessage("m1", "user", tc.to, tc.text, "")
			if strings.HasPrefix(tc.name, "heard") {
				m.Params.Metadata[protocol.MetaSource] = protocol.SourceVoice
			}
			if err := r.obs.SendMessage(r.ctx, m); err != nil {
				t.Fatal(err)
			}
			if s := r.state(); s.Params.Selected != tc.want {
				t.Fatalf("selected %v, want %v", s.Params.Selected, tc.want)
			}
		})
	}
}

// A companion granted a turn for a message it did not vote on (it was
// restarted since) votes listen on it, so that the floor decides again
// without it (its retraction) instead of granting it again for a minute.
func TestGrantedWithoutAVoteVotesListen(t *testing.T) {
	b := speaker("Hello.")
	close(b.Gate)
	r := newStreamRig(t, b, nil)
	r.grant("before-the-restart")
	s := r.state()
	if s.Params.MessageID != "before-the-restart" || s.Params.State != protocol.Listen {
		t.Fatalf("State %+v, want listen on the granted message", s.Params)
	}
	r.grant("before-the-restart") // the floor's repeat: no second State
	r.noState("a repeated grant")
}
