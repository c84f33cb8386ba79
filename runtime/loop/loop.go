// Package loop is the small kit the runtime's single-goroutine event
// loops (the turn floor, the realtime floor and its leader, the companion,
// the outbox) share: a bounded queue whose producers never block, a
// signal that wakes a loop to read its mailbox, and a barrier that proves
// a loop still turns.
//
// # Concurrency
//
// Queue.Push and Signal.Wake never block: bus handlers and timers call
// them. The loop that owns a Queue or a Signal is the only reader of its
// channel.
package loop

import "context"

// Queue is a loop's bounded event queue. Push never blocks: when the queue
// is full the event is dropped and Drop (if set) is told its kind, to
// count it. Events that must never be dropped go into a mailbox instead
// (a map that keeps the latest per key, woken by a Signal).
type Queue[E any] struct {
	C    chan E
	Drop func(kind string)
}

// NewQueue returns a Queue that holds size events.
func NewQueue[E any](size int, drop func(kind string)) Queue[E] {
	return Queue[E]{C: make(chan E, size), Drop: drop}
}

// Push queues e; false when the queue was full and e was dropped.
func (q Queue[E]) Push(e E, kind string) bool {
	select {
	case q.C <- e:
		return true
	default:
		if q.Drop != nil {
			q.Drop(kind)
		}
		return false
	}
}

// Ping queues the barrier event mk builds and waits until the loop has
// closed its channel (see Ping).
func (q Queue[E]) Ping(ctx context.Context, mk func(done chan struct{}) E) error {
	return Ping(ctx, q.C, mk)
}

// Signal wakes a loop to look at its mailbox. Wakes before the loop looks
// coalesce into one: the loop takes everything the mailbox holds then.
type Signal struct{ C chan struct{} }

// NewSignal returns a Signal.
func NewSignal() Signal { return Signal{C: make(chan struct{}, 1)} }

// Wake tells the loop to look; it never blocks.
func (s Signal) Wake() {
	select {
	case s.C <- struct{}{}:
	default:
	}
}

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
