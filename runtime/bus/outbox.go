package bus

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/chorus-robotics/chorus/runtime/loop"
)

// Outbox publishes on behalf of code that must not wait on the network: a
// bus handler (paho delivers in order on one goroutine, and a handler that
// publishes and waits for the PUBACK wedges its own connection), or an
// event loop whose timers must keep firing (the floor's, the companion's).
//
// Send queues a message and returns at once; Run, on one goroutine that
// its caller owns, publishes the queue in order, each message with a
// timeout. A full queue refuses the message: Send returns false and
// OnDrop is told, so the owner can count it.
//
// # Concurrency
//
// Send and Flush are safe from any goroutine, including bus handlers.
type Outbox struct {
	Bus     Bus
	Size    int           // queue length, default 256
	Timeout time.Duration // per publish, default 10 s
	Log     *slog.Logger
	// OnDrop, if set, is told of every message refused (queue full) or
	// not published (timeout, closed bus); it must not block.
	OnDrop func(topic string, err error)

	once sync.Once
	ch   chan outMsg
}

type outMsg struct {
	topic   string
	payload []byte
	retain  bool
	flushed chan struct{} // a Flush marker, no message
}

// ErrOutboxFull is what OnDrop is told for a message the queue refused.
var ErrOutboxFull = errors.New("bus: outbox full")

func (o *Outbox) init() {
	o.once.Do(func() {
		n := o.Size
		if n <= 0 {
			n = DefaultOutboxSize
		}
		o.ch = make(chan outMsg, n)
	})
}

// The outbox's defaults: how many messages wait, and how long one
// publish may take.
const (
	DefaultOutboxSize    = 256
	DefaultOutboxTimeout = 10 * time.Second
)

// Send queues payload for topic; false means the queue was full and the
// message is dropped.
func (o *Outbox) Send(topic string, payload []byte, retain bool) bool {
	o.init()
	select {
	case o.ch <- outMsg{topic: topic, payload: payload, retain: retain}:
		return true
	default:
		if o.OnDrop != nil {
			o.OnDrop(topic, ErrOutboxFull)
		}
		return false
	}
}

// Flush waits until everything queued before it has been published (or
// given up), or ctx ends.
func (o *Outbox) Flush(ctx context.Context) error {
	o.init()
	return loop.Ping(ctx, o.ch, func(done chan struct{}) outMsg { return outMsg{flushed: done} })
}

// Run publishes until ctx ends.
func (o *Outbox) Run(ctx context.Context) error {
	o.init()
	timeout := o.Timeout
	if timeout <= 0 {
		timeout = DefaultOutboxTimeout
	}
	for {
		select {
		case <-ctx.Done():
			return nil
		case m := <-o.ch:
			if m.flushed != nil {
				close(m.flushed)
				continue
			}
			pctx, cancel := context.WithTimeout(ctx, timeout)
			err := o.Bus.Publish(pctx, m.topic, m.payload, m.retain)
			cancel()
			if err != nil && ctx.Err() == nil {
				if o.Log != nil {
					o.Log.Warn("bus: publish failed", "topic", m.topic, "err", err)
				}
				if o.OnDrop != nil {
					o.OnDrop(m.topic, err)
				}
			}
		}
	}
}
