package transcript

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/chorus-robotics/chorus/runtime/protocol"
)

func TestMessageShowsTheActionsTakenWithIt(t *testing.T) {
	cases := []struct {
		name string
		acts any
		want string
	}{
		{"two", []any{"nod", "wave"}, "Hello! [does nod, wave]\n"},
		{"none", nil, "Hello!\n"},
		{"junk is left out", []any{"nod", 7, "no such/name", strings.Repeat("x", 100)}, "Hello! [does nod]\n"},
		{"not a list", "nod", "Hello!\n"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var w bytes.Buffer
			p := &Printer{W: &w, start: time.Now()}
			m := protocol.NewMessage("m1", "kai", nil, "Hello!", "")
			if c.acts != nil {
				m.Params.Metadata[protocol.MetaActions] = c.acts
			}
			p.message(m)
			if !strings.HasSuffix(w.String(), c.want) {
				t.Fatalf("got %q, want it to end in %q", w.String(), c.want)
			}
		})
	}
}
