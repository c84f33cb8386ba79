// Package runtest runs a driver's loop (a capture's Run) for a test, until
// the test ends, and checks that it stops when its context ends.
package runtest

import (
	"context"
	"testing"
	"time"
)

// Loop runs run on its own goroutine until stop, which the test's cleanup
// also calls: stop cancels run's context and fails t unless run returns
// within 5 s. what names the loop in the failure ("capture").
func Loop(t testing.TB, what string, run func(context.Context) error) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); run(ctx) }()
	stop = func() {
		cancel()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			t.Errorf("%s did not stop within 5 s of its context", what)
		}
	}
	t.Cleanup(stop)
	return stop
}
