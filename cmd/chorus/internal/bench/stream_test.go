package bench

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/chorus-robotics/chorus/drivers/tts"
)

// shortTalk is Talk with short words, so that the paced rooms end soon.
func shortTalk(me, lang string, turn int) (float64, string) {
	imp, _ := Talk(me, lang, turn)
	return imp, "Oh, hello. It is a fine day."
}

// `chorus bench stream` at a tiny n runs all three rooms in both modes
// and prints every row (no figures are checked: that is the benchmark's
// job). The words are short, so that the paced rooms end soon.
func TestStreamBenchPrintsEveryRow(t *testing.T) {
	var out bytes.Buffer
	err := Stream(context.Background(), &out, StreamOptions{TTFT: 50 * time.Millisecond, TPS: 300, N: 1, Modes: []bool{true, false}, Speak: shortTalk})
	t.Logf("\n%s", out.String())
	if err != nil {
		t.Fatal(err)
	}
	rows := 3
	if !tts.Available("espeak-ng") {
		rows = 2
	}
	s := out.String()
	if got := strings.Count(s, "    streaming p50 "); got != rows {
		t.Errorf("%d streaming rows, want %d", got, rows)
	}
	if got := strings.Count(s, "    whole     p50 "); got != rows {
		t.Errorf("%d whole rows, want %d", got, rows)
	}
	if got := strings.Count(s, "streaming / whole: p50 "); got != rows {
		t.Errorf("%d ratios, want %d", got, rows)
	}
	for _, want := range []string{"(a) typed", "(b) voice to voice", "(c) silence", "goal p50 ≤ "} {
		if !strings.Contains(s, want) {
			t.Errorf("no %q", want)
		}
	}
}

// `chorus bench eager` at n=1 runs the three paths and prints every row
// (no figures are checked: that is the benchmark's job).
func TestEagerBenchPrintsEveryRow(t *testing.T) {
	if !tts.Available("espeak-ng") {
		t.Skip("espeak-ng speaks the person's question")
	}
	var out bytes.Buffer
	err := Eager(context.Background(), &out, EagerOptions{TTFT: 50 * time.Millisecond, TPS: 300, N: 1, Speak: shortTalk})
	t.Logf("\n%s", out.String())
	if err != nil {
		t.Fatal(err)
	}
	s := out.String()
	for _, want := range []string{"  final only  ", "  hypotheses  ", "  eager       ", "eager / final only: p50 ", "model calls per turn"} {
		if !strings.Contains(s, want) {
			t.Errorf("no %q", want)
		}
	}
}
