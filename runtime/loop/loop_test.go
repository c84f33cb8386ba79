package loop

import (
	"context"
	"testing"
	"time"
)

func TestQueueDropsAndCountsWhenFull(t *testing.T) {
	drops := map[string]int{}
	q := NewQueue[int](2, func(kind string) { drops[kind]++ })
	for i, want := range []bool{true, true, false, false} {
		if got := q.Push(i, "post"); got != want {
			t.Fatalf("push %d = %v, want %v", i, got, want)
		}
	}
	if drops["post"] != 2 || len(q.C) != 2 || <-q.C != 0 {
		t.Fatalf("drops %v, queued %d: want the first two kept and two drops", drops, len(q.C))
	}
}

func TestSignalCoalesces(t *testing.T) {
	s := NewSignal()
	for range 100 {
		s.Wake() // never blocks
	}
	<-s.C
	select {
	case <-s.C:
		t.Fatal("a hundred wakes before the loop looked woke it twice")
	default:
	}
}

func TestPing(t *testing.T) {
	q := NewQueue[chan struct{}](4, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	go func() {
		for done := range q.C {
			close(done)
		}
	}()
	if err := q.Ping(ctx, func(done chan struct{}) chan struct{} { return done }); err != nil {
		t.Fatalf("ping of a turning loop: %v", err)
	}
	close(q.C)

	stuck := NewQueue[chan struct{}](1, nil) // nobody reads it
	sctx, scancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer scancel()
	if err := stuck.Ping(sctx, func(done chan struct{}) chan struct{} { return done }); err != context.DeadlineExceeded {
		t.Fatalf("ping of a stuck loop = %v, want the deadline", err)
	}
}
