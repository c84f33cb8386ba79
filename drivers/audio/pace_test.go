package audio

import (
	"context"
	"testing"
	"time"
)

// A paced stream plays in real time: Drain returns no sooner than the
// audio written has played, Write waits while the queue is full, and
// Abort ends it with only what played counted.
func TestPacerPlaysInRealTime(t *testing.T) {
	ctx := context.Background()
	p := &Pacer{Buffer: 50 * time.Millisecond}
	start := time.Now()
	for range 3 {
		if err := p.Write(ctx, 100*time.Millisecond); err != nil {
			t.Fatal(err)
		}
	}
	if d := time.Since(start); d < 150*time.Millisecond {
		t.Fatalf("three 100 ms chunks were taken in %v: the queue holds more than its buffer", d)
	}
	played, err := p.Drain(ctx)
	if err != nil || played != 300*time.Millisecond {
		t.Fatalf("played %v, %v", played, err)
	}
	if d := time.Since(start); d < 300*time.Millisecond {
		t.Fatalf("drained after %v, before the audio could have played", d)
	}
	if p.StartedAt().Before(start) || p.StartedAt().After(start.Add(50*time.Millisecond)) {
		t.Fatalf("started at %v, first write at %v", p.StartedAt(), start)
	}

	q := &Pacer{}
	q.Write(ctx, time.Second)
	time.Sleep(20 * time.Millisecond)
	q.Abort()
	played, _ = q.Drain(ctx)
	if played >= 500*time.Millisecond {
		t.Fatalf("aborted after 20 ms, counted %v played", played)
	}

	cctx, cancel := context.WithCancel(ctx)
	r := &Pacer{}
	r.Write(cctx, time.Second)
	cancel()
	if err := r.Write(cctx, time.Second); err == nil {
		t.Fatal("a write into a full queue ignored its context")
	}
}
