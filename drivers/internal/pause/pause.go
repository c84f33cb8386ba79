// Package pause is how a driver waits in real time and stays cancellable:
// a backoff before a restart, a pause that paces audio or a servo's tick.
package pause

import (
	"context"
	"time"
)

// DefaultMaxBackoff caps the wait between a device's reopen attempts (a
// camera's, a microphone's).
const DefaultMaxBackoff = 10 * time.Second

// Sleep waits d, or until ctx ends; it returns ctx's error when ctx ended
// first (or had ended already), nil otherwise. A d of zero or less
// returns at once.
func Sleep(ctx context.Context, d time.Duration) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if d <= 0 {
		return nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
