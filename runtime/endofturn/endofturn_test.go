package endofturn

import (
	"testing"
	"time"
)

func TestOf(t *testing.T) {
	tests := []struct {
		text string
		want Kind
	}{
		// English: what promises more.
		{"my sister is coming to visit and", Unfinished},
		{"My sister is coming to visit, and", Unfinished},
		{"so I was thinking um", Unfinished},
		{"I went to the", Unfinished},
		{"we could bake bread or", Unfinished},
		{"I don't know, you know", Unfinished},
		{"and then", Unfinished},
		{"my favourite fruit is...", Unfinished},
		{"my favourite fruit is,", Unfinished},
		{"Well, I'm", Unfinished},
		{"UH", Unfinished},
		// English: a question asked in full.
		{"what time is it", Complete},
		{"What time is it?", Complete},
		{"can you tell me a story", Complete},
		{"is it raining", Complete},
		{"really?", Complete},
		{"can you tell me about", Unfinished},
		{"I was thinking about", Unfinished},
		{"I went there with", Unfinished},
		{"hello robots what is the weather like today", Complete},
		{"Hi Kyoko, can you sing", Complete},
		{"what I want to know is", Unfinished},
		{"do you know what I", Plain},
		{"I think so", Plain},
		{"not really", Plain},
		{"so", Unfinished},
		{"my favourite fruit is", Unfinished},
		{"the film we saw was", Unfinished},
		{"I know who he is", Plain},
		{"there it is", Plain},
		// English: neither.
		{"my sister is coming to visit", Plain},
		{"I like that", Plain},
		{"turn it on", Plain},
		{"yes I can", Plain},
		{"thank you", Plain},
		{"what", Plain}, // too short to be a question in full
		{"", Plain},
		{"   ", Plain},
		{"!!!", Plain},
		// Japanese.
		{"えっと", Unfinished},
		{"えーっとー", Unfinished},
		{"それで", Unfinished},
		{"昨日、友達と", Unfinished},
		{"京都に行って", Unfinished},
		{"雨が降ったので", Unfinished},
		{"妹が来るんですけど、", Unfinished},
		{"私は", Unfinished},
		{"来週", Unfinished}, // a time word comes before its predicate
		{"それで、あした", Unfinished},
		{"とても", Unfinished},
		{"新しい", Plain}, // an adjective ends a sentence as often as it begins a noun
		{"来週行きます", Plain},
		{"今何時ですか", Complete},
		{"明日は晴れるかな", Complete},
		{"元気？", Complete},
		{"ありがとう", Plain},
		{"こんにちは", Plain},
		{"みなさん、こんばんは", Plain},
		{"今日はいい天気です。", Plain},
		{"行きました", Plain},
		{"か", Plain}, // a particle alone asks nothing
	}
	for _, tt := range tests {
		if got := Of(tt.text); got != tt.want {
			t.Errorf("Of(%q) = %v, want %v", tt.text, got, tt.want)
		}
	}
}

func TestWaitsPause(t *testing.T) {
	w := Waits{Plain: 500 * time.Millisecond, Unfinished: 1500 * time.Millisecond, Complete: 300 * time.Millisecond}
	for text, want := range map[string]time.Duration{
		"my sister is coming to visit and": w.Unfinished,
		"what time is it":                  w.Complete,
		"my sister is coming to visit":     w.Plain,
		"":                                 w.Plain,
	} {
		if got := w.Pause(text); got != want {
			t.Errorf("Pause(%q) = %v, want %v", text, got, want)
		}
	}
}

// FuzzOf: any text is one of the three kinds, never a panic.
func FuzzOf(f *testing.F) {
	for _, s := range []string{"and", "what time is it", "えっと", "今何時ですか", "…", "\xff"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if k := Of(s); k != Plain && k != Unfinished && k != Complete {
			t.Fatalf("Of(%q) = %d", s, k)
		}
	})
}

// An opening is a greeting alone or with a name, nothing more.
func TestOpening(t *testing.T) {
	for _, tc := range []struct {
		text string
		want bool
	}{
		{"Hello robots,", true},
		{"hey Kyoko", true},
		{"hi", true},
		{"ねえ", true},
		{"ねえー", true},
		{"hello everyone out there", false},
		{"hello robots what time is it", false},
		{"okay", false},
		{"stop", false},
		{"", false},
	} {
		if got := Opening(tc.text); got != tc.want {
			t.Errorf("Opening(%q) = %v, want %v", tc.text, got, tc.want)
		}
	}
}

// The same words, whatever their case, punctuation and fillers.
func TestSameWords(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		want bool
	}{
		{"what time is it", "What time is it?", true},
		{"um, what time is it", "what time is it", true},
		{"えっと、今何時", "今何時", true},
		{"I'm here", "im here", false},
		{"what time is it", "what time is it in Tokyo", false},
		{"", "", true},
	} {
		if got := SameWords(tc.a, tc.b); got != tc.want {
			t.Errorf("SameWords(%q, %q) = %v, want %v", tc.a, tc.b, got, tc.want)
		}
	}
}
