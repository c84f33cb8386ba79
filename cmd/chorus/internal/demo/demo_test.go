package demo

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chorus-robotics/chorus/drivers/audio"
)

// TestDemoRunsToTerminal runs the shipped demo room end to end.
func TestDemoRunsToTerminal(t *testing.T) {
	out := t.TempDir()
	var buf bytes.Buffer
	sum, err := Run(context.Background(), Options{Out: out, Timeout: 30 * time.Second, W: &buf})
	t.Log("\n" + buf.String())
	if err != nil {
		t.Fatal(err)
	}
	if !sum.Terminal || sum.Turns < 5 {
		t.Fatalf("summary %+v: want terminal after at least 5 turns", sum)
	}
	if sum.Elapsed > 30*time.Second {
		t.Fatalf("took %v", sum.Elapsed)
	}
	for _, want := range []string{"user → all: Hello everyone!", "grant: nobody — the room rests (rest, all-voted)", "votes: "} {
		if !strings.Contains(buf.String(), want) {
			t.Errorf("transcript lacks %q", want)
		}
	}
	if len(sum.Audio) != sum.Turns {
		t.Fatalf("%d audio files for %d turns", len(sum.Audio), sum.Turns)
	}
	for _, f := range sum.Audio {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		p, err := audio.DecodeWAV(b)
		if err != nil || p.Duration() < 200*time.Millisecond {
			t.Fatalf("%s: %v, %v of audio", f, err, p.Duration())
		}
	}
}

func TestDemoStopsAfterTurns(t *testing.T) {
	var buf bytes.Buffer
	sum, err := Run(context.Background(), Options{Dir: filepath.Join("..", "..", "..", "..", "firmware-configs", "demo"), Turns: 2, Timeout: 30 * time.Second, W: &buf})
	if err != nil {
		t.Fatal(err)
	}
	if sum.Turns != 2 || sum.Rested {
		t.Fatalf("summary %+v", sum)
	}
}
