package sentence

import (
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestSplit(t *testing.T) {
	tests := []struct {
		in   string
		want []string
	}{
		{"Hello there. How are you? Fine!", []string{"Hello there.", "How are you?", "Fine!"}},
		{"こんにちは。元気？うん！", []string{"こんにちは。", "元気？", "うん！"}},
		{"Version 1.5 is out.", []string{"Version 1.5 is out."}},
		{"line one\nline two", []string{"line one", "line two"}},
		{"   ", nil},
	}
	for _, tt := range tests {
		if got := Split(tt.in); !reflect.DeepEqual(got, tt.want) {
			t.Errorf("Split(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
	for _, s := range Split(strings.Repeat("word ", 100)) {
		if len([]rune(s)) > 201 {
			t.Fatalf("piece of %d characters", len([]rune(s)))
		}
	}
}

func TestClip(t *testing.T) {
	tests := []struct {
		in      string
		max     int
		want    string
		clipped bool
	}{
		{"Short.", 100, "Short.", false},
		{"One. Two. Three.", 10, "One. Two.", true},
		{"One. Two. Three.", 16, "One. Two. Three.", false},
		{"おはよう。元気？今日は何をする？", 9, "おはよう。元気？", true},
		{"a very long first sentence without an end", 20, "a very long first…", true},
		{strings.Repeat("あ", 50), 10, strings.Repeat("あ", 9) + "…", true},
		{"Line one\nline two is long", 12, "Line one", true},
	}
	for _, tt := range tests {
		got, clipped := Clip(tt.in, tt.max)
		if got != tt.want || clipped != tt.clipped {
			t.Errorf("Clip(%q, %d) = %q %v, want %q %v", tt.in, tt.max, got, clipped, tt.want, tt.clipped)
		}
		if utf8.RuneCountInString(got) > tt.max {
			t.Errorf("Clip(%q, %d) is %d characters", tt.in, tt.max, utf8.RuneCountInString(got))
		}
	}
}

func FuzzClip(f *testing.F) {
	f.Add("Hello. World!", 7)
	f.Add("こんにちは。", 3)
	f.Fuzz(func(t *testing.T, s string, max int) {
		if max < 2 || max > 10000 || !utf8.ValidString(s) {
			return
		}
		got, _ := Clip(s, max)
		if n := utf8.RuneCountInString(got); n > max {
			t.Fatalf("Clip(%q, %d) is %d characters", s, max, n)
		}
	})
}
