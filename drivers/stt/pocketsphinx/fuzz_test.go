package pocketsphinx

import (
	"strings"
	"testing"
)

// FuzzParseOutput: any output gives a transcript or an error, and a
// transcript is words of the allowed runes separated by single spaces.
func FuzzParseOutput(f *testing.F) {
	f.Add([]byte("hello robots what is the weather like today\n"))
	f.Add([]byte("INFO: x\n"))
	f.Add([]byte("a\n\nb c\r\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		s, err := ParseOutput(b)
		if err != nil {
			return
		}
		if s != strings.Join(strings.Fields(s), " ") {
			t.Fatalf("transcript %q is not single-spaced words", s)
		}
		if again, err := ParseOutput([]byte(s + "\n")); err != nil || again != s {
			t.Fatalf("ParseOutput(%q) = %q, %v", s, again, err)
		}
	})
}
