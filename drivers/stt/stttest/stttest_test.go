package stttest

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/chorus-robotics/chorus/drivers/stt"
)

func TestFake(t *testing.T) {
	hello := stt.Transcript{Text: "hello", Confidence: 0.9, Language: "en"}
	for _, tc := range []struct {
		name    string
		e       *Engine
		samples int
		ctx     time.Duration // 0: none
		want    string
		err     error
	}{
		{"transcript", &Engine{Transcript: hello, Delay: 10 * time.Millisecond}, 1600, 0, "hello", nil},
		{"empty", &Engine{Delay: -1}, 1600, 0, "", stt.ErrEmpty},
		{"failure", &Engine{Transcript: hello, Delay: -1, FinishErr: errors.New("boom")}, 1600, 0, "", nil},
		{"overflow", &Engine{Transcript: hello, MaxSamples: 1000}, 1600, 0, "", stt.ErrOverflow},
		{"deadline", &Engine{Transcript: hello, Delay: time.Minute}, 1600, 20 * time.Millisecond, "", context.DeadlineExceeded},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			if tc.ctx > 0 {
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeout(ctx, tc.ctx)
				defer cancel()
			}
			s, err := tc.e.Start(ctx, 16000)
			if err != nil {
				t.Fatal(err)
			}
			for range tc.samples / 160 {
				if err := s.Write(make([]int16, 160)); err != nil {
					t.Fatal(err)
				}
			}
			tr, err := s.Finish(ctx)
			switch {
			case tc.want != "":
				if err != nil || tr != hello {
					t.Fatalf("Finish = %+v, %v", tr, err)
				}
			case tc.err != nil:
				if !errors.Is(err, tc.err) {
					t.Fatalf("Finish error = %v, want %v", err, tc.err)
				}
			default:
				if err == nil || errors.Is(err, stt.ErrEmpty) {
					t.Fatalf("Finish error = %v, want a failure", err)
				}
			}
			if got := tc.e.Sessions()[0].State(); got != Finished {
				t.Errorf("state %s", got)
			}
			if _, err := s.Finish(ctx); !errors.Is(err, stt.ErrFinished) {
				t.Errorf("second Finish: %v", err)
			}
			if err := s.Write([]int16{1}); !errors.Is(err, stt.ErrFinished) {
				t.Errorf("Write after Finish: %v", err)
			}
		})
	}
}

func TestFakeRecords(t *testing.T) {
	e := &Engine{Transcript: stt.Transcript{Text: "x"}, Delay: -1}
	s, _ := e.Start(context.Background(), 48000)
	s.Write([]int16{1, 2})
	s.Write([]int16{3})
	if _, err := s.Finish(context.Background()); err != nil {
		t.Fatal(err)
	}
	rec := e.Sessions()[0]
	if rec.Rate() != 48000 || rec.Writes() != 2 || len(rec.Samples()) != 3 || rec.Samples()[2] != 3 {
		t.Fatalf("recorded rate %d writes %d samples %v", rec.Rate(), rec.Writes(), rec.Samples())
	}
}

func TestFakeStartFails(t *testing.T) {
	e := &Engine{StartErr: errors.New("refused")}
	if _, err := e.Start(context.Background(), 16000); err == nil {
		t.Fatal("Start succeeded")
	}
	if _, err := (&Engine{}).Start(context.Background(), 0); err == nil {
		t.Fatal("rate 0 accepted")
	}
}

func TestAbortDuringFinish(t *testing.T) {
	e := &Engine{Transcript: stt.Transcript{Text: "x"}, Delay: time.Minute}
	s, _ := e.Start(context.Background(), 16000)
	s.Write(make([]int16, 160))
	done := make(chan error, 1)
	go func() { _, err := s.Finish(context.Background()); done <- err }()
	time.Sleep(10 * time.Millisecond)
	s.Abort()
	s.Abort() // idempotent
	select {
	case err := <-done:
		if !errors.Is(err, stt.ErrAborted) {
			t.Fatalf("Finish after Abort: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Finish did not return after Abort")
	}
	if got := e.Sessions()[0].State(); got != Aborted {
		t.Errorf("state %s", got)
	}
	if err := s.Write([]int16{1}); !errors.Is(err, stt.ErrAborted) {
		t.Errorf("Write after Abort: %v", err)
	}
}

// TestConcurrentSessions runs sessions side by side, with Abort racing
// Write and Finish, for the race detector.
func TestConcurrentSessions(t *testing.T) {
	e := &Engine{Transcript: stt.Transcript{Text: "x"}, Delay: time.Millisecond}
	var wg sync.WaitGroup
	for i := range 16 {
		wg.Go(func() {
			s, err := e.Start(context.Background(), 16000)
			if err != nil {
				t.Error(err)
				return
			}
			var inner sync.WaitGroup
			inner.Go(func() {
				if i%2 == 0 {
					s.Abort()
				}
			})
			for range 10 {
				s.Write(make([]int16, 160))
			}
			_, err = s.Finish(context.Background())
			if err != nil && !errors.Is(err, stt.ErrAborted) {
				t.Error(err)
			}
			inner.Wait()
			s.Abort()
		})
	}
	wg.Wait()
	if n := len(e.Sessions()); n != 16 {
		t.Fatalf("%d sessions", n)
	}
}
