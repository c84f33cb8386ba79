package stttest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/chorus-robotics/chorus/drivers/stt"
)

// AbortDuringFinish checks what every engine's session must do when
// aborted while Finish waits (gating started as the engine worked):
// after wait, Abort (twice: it is idempotent) makes Finish return
// stt.ErrAborted within within.
func AbortDuringFinish(t testing.TB, s stt.Session, wait, within time.Duration) {
	t.Helper()
	done := make(chan error, 1)
	go func() { _, err := s.Finish(context.Background()); done <- err }()
	time.Sleep(wait)
	s.Abort()
	s.Abort()
	select {
	case err := <-done:
		if !errors.Is(err, stt.ErrAborted) {
			t.Fatalf("Finish = %v, want ErrAborted", err)
		}
	case <-time.After(within):
		t.Fatal("Finish did not return after Abort")
	}
}
