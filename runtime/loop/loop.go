// Package loop holds what the runtime's single-goroutine event loops (the
// floor, the companion) share: a barrier that proves a loop still turns.
package loop

import "context"

// Ping queues the barrier event that mk builds around a fresh channel and
// waits until the loop has closed that channel, that is, until it has
// handled everything queued before. It fails when ctx ends first.
func Ping[E any](ctx context.Context, events chan<- E, mk func(done chan struct{}) E) error {
	done := make(chan struct{})
	select {
	case events <- mk(done):
	case <-ctx.Done():
		return ctx.Err()
	}
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
