package memory

import "testing"

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
		lang, name string
		got, need  int
		refused    bool
		want       string
	}{
		{"en", "Sam", 1, 3, false, "All right, Sam. Say 2 more sentences, anything, so I learn your voice."},
		{"en", "Sam", 2, 3, false, "1 more, please."},
		{"en", "Sam", 3, 3, false, "Thank you, Sam. I know your voice now."},
		{"en", "Carol", 0, 3, true, "I don't know a Carol in this house. Ask whoever set me up to add you."},
		{"ja", "ミア", 3, 3, false, "ミアさん、声を覚えました。"},
	} {
		if got := EnrolReply(tc.lang, tc.name, tc.got, tc.need, tc.refused); got != tc.want {
			t.Errorf("%+v: %q", tc, got)
		}
	}
}
