package hearing

import (
	"testing"

	"github.com/chorus-robotics/chorus/runtime/protocol"
)

// The Message of an utterance is the person's whose voice a robot knew:
// the nearest match wins; it is sure only when that robot was and no
// robot named another; a voice no robot knew, or a name outside the
// room's people, is the hearing user's, unknown.
func TestMessageIsFromWhoseVoice(t *testing.T) {
	sam := func(d float64, sure bool) *protocol.VoiceMatch {
		return &protocol.VoiceMatch{Person: "sam", Distance: d, Sure: sure}
	}
	mia := &protocol.VoiceMatch{Person: "mia", Distance: 0.3}
	unknown := &protocol.VoiceMatch{Distance: 0.8}
	for _, tc := range []struct {
		name          string
		kyoko, hana   *protocol.VoiceMatch
		from, reading string
		distance      float64
	}{
		{"no robot identifies voices", nil, nil, "guest", "", 0},
		{"both know sam", sam(0.1, true), sam(0.2, true), "sam", protocol.VoiceSure, 0.1},
		{"one knows sam, the other not", unknown, sam(0.2, true), "sam", protocol.VoiceSure, 0.2},
		{"the nearest match wins, unsure when another was named", sam(0.1, true), mia, "sam", protocol.VoiceUnsure, 0.1},
		{"within the threshold, not sure", sam(0.3, false), nil, "sam", protocol.VoiceUnsure, 0.3},
		{"nobody knew the voice", unknown, unknown, "guest", protocol.VoiceUnknown, 0},
		{"the service was down", &protocol.VoiceMatch{Distance: -1}, nil, "guest", protocol.VoiceUnknown, 0},
		{"a name the room does not list", &protocol.VoiceMatch{Person: "mallory", Distance: 0.05, Sure: true}, nil, "guest", protocol.VoiceUnknown, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarnessOf(t, []string{"mia", "sam"})
			h.hears("kyoko", true)
			h.hears("hana", true)
			h.settle()
			h.reportVoice("kyoko", "k1", 1, 3, "i like green tea", 0.9, -30, tc.kyoko)
			h.reportVoice("hana", "h1", 1, 3, "i like green tea", 0.8, -30, tc.hana)
			h.settle()
			msgs := h.messages()
			if len(msgs) != 1 {
				t.Fatalf("%d Messages", len(msgs))
			}
			p := msgs[0].Params
			reading, _ := p.Metadata[protocol.MetaVoice].(string)
			d, _ := p.Metadata[protocol.MetaVoiceDistance].(float64)
			if p.From != tc.from || reading != tc.reading || d != tc.distance {
				t.Fatalf("from %s, voice %q at %v; want %s, %q at %v (%v)", p.From, reading, d, tc.from, tc.reading, tc.distance, p.Metadata)
			}
		})
	}
}

// heardOnce is the one Message of an utterance kyoko alone heard and
// said v of, in a room whose robots may know people by voice.
func heardOnce(t *testing.T, people []string, text string, v *protocol.VoiceMatch) protocol.Message {
	t.Helper()
	h := newHarnessOf(t, people)
	h.hears("kyoko", true)
	h.settle()
	h.reportVoice("kyoko", "k1", 1, 3, text, 0.9, -30, v)
	h.settle()
	msgs := h.messages()
	if len(msgs) != 1 {
		t.Fatalf("%d Messages", len(msgs))
	}
	return msgs[0]
}

// An enrolment's state goes with the Message, for the robots' answer; one
// naming someone the room may not know by voice (a robot that lies, or
// a config that differs) is refused at the floor.
func TestEnrolmentGoesWithTheMessage(t *testing.T) {
	m := heardOnce(t, []string{"sam"}, "remember my voice i am sam",
		&protocol.VoiceMatch{Distance: -1, Enrol: &protocol.Enrolment{Name: "sam", Person: "sam", Got: 1, Need: 3}})
	e, ok := m.Params.Metadata[protocol.MetaVoiceEnrol].(map[string]any)
	if !ok || e["person"] != "sam" || e["got"] != 1.0 || e["need"] != 3.0 || m.Params.From != "guest" {
		t.Fatalf("metadata %v from %s", m.Params.Metadata, m.Params.From)
	}
	m = heardOnce(t, []string{"sam"}, "remember my voice i am root",
		&protocol.VoiceMatch{Distance: -1, Enrol: &protocol.Enrolment{Name: "root", Person: "root", Got: 3, Need: 3}})
	if e, _ := m.Params.Metadata[protocol.MetaVoiceEnrol].(map[string]any); e == nil || e["person"] != "" || e["got"] != 0.0 {
		t.Fatalf("an enrolment of root: %v", m.Params.Metadata)
	}
}
