package memory

import (
	"testing"

	"github.com/chorus-robotics/chorus/runtime/protocol"
)

func TestEnrolName(t *testing.T) {
	for _, tc := range []struct {
		text, name string
		ok         bool
	}{
		{"Kyoko, remember my voice, I'm Alice.", "Alice", true},
		{"kyoko remember my voice i am sam", "sam", true},
		{"Please learn my voice — my name is Mia.", "Mia", true},
		{"This is Bob, please recognise my voice", "Bob", true},
		{"remember my voice", "", true},
		{"Do you remember my name?", "", false},
		{"I like my voice teacher", "", false},
		{"私の声を覚えて、アリスです", "アリス", true},
		{"声を覚えてね。私はミアです。", "ミア", true},
		{"キョウコ、僕はサムだよ、声を覚えて", "サム", true},
		{"声を覚えて", "", true},
		{"覚えてる？", "", false},
	} {
		name, ok := EnrolName(tc.text)
		if name != tc.name || ok != tc.ok {
			t.Errorf("EnrolName(%q) = %q, %v; want %q, %v", tc.text, name, ok, tc.name, tc.ok)
		}
	}
}

func TestEnrolReply(t *testing.T) {
	for _, tc := range []struct {
		lang string
		e    protocol.Enrolment
		want string
	}{
		{"en", protocol.Enrolment{Name: "Sam", Person: "sam", Got: 1, Need: 3}, "All right, Sam. Say 2 more sentences, anything, so I learn your voice."},
		{"en", protocol.Enrolment{Name: "sam", Person: "sam", Got: 2, Need: 3}, "1 more, please."},
		{"en", protocol.Enrolment{Name: "Sam", Person: "sam", Got: 3, Need: 3}, "Thank you, Sam. I know your voice now."},
		{"en", protocol.Enrolment{Name: "Carol", Need: 3}, "I don't know a Carol in this house. Ask whoever set me up to add you."},
		{"en", protocol.Enrolment{Name: "?", Need: 3}, "Tell me your name too: say \"remember my voice, I'm\" and your name."},
		{"en", protocol.Enrolment{Name: "sam", Person: "sam", Need: 3, Taken: true}, "I already know Sam's voice, and yours does not sound like it. Sam can ask me again, or whoever set me up."},
		{"ja", protocol.Enrolment{Name: "ミア", Person: "mia", Got: 3, Need: 3}, "ミアさん、声を覚えました。"},
	} {
		if got := EnrolReply(tc.lang, tc.e); got != tc.want {
			t.Errorf("%+v: %q", tc.e, got)
		}
	}
}
