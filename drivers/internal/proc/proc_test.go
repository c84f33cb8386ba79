package proc

import (
	"strings"
	"testing"
)

func TestTailKeepsTheLastLine(t *testing.T) {
	for _, c := range []struct {
		name   string
		writes []string
		want   string
	}{
		{"nothing", nil, ""},
		{"one line", []string{"ERROR: no cameras available\n"}, "ERROR: no cameras available"},
		{"the last of several, blank ones skipped", []string{"a\nb\n", "\n  \n"}, "b"},
		{"split across writes", []string{"aplay: main:8", "31: audio open error\n"}, "aplay: main:831: audio open error"},
		{"an unfinished line wins", []string{"done\nfail"}, "fail"},
		{"progress with carriage returns", []string{"frame= 1\rframe= 2\r"}, "frame= 2"},
		{"capped", []string{strings.Repeat("x", 2000) + "\n"}, strings.Repeat("x", 512)},
	} {
		t.Run(c.name, func(t *testing.T) {
			var tl Tail
			for _, w := range c.writes {
				if n, err := tl.Write([]byte(w)); n != len(w) || err != nil {
					t.Fatalf("write %d, %v", n, err)
				}
			}
			if got := tl.String(); got != c.want {
				t.Fatalf("%q, want %q", got, c.want)
			}
		})
	}
	if (*Tail)(nil).Suffix() != "" {
		t.Fatal("a nil tail has a suffix")
	}
}
