package air

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/chorus-robotics/chorus/drivers/audio"
)

// DrainMargin is how long past the audio's own duration Drain waits for
// the air to say it has played.
const DrainMargin = 2 * time.Second

// Output is a robot's speaker in the air: audio.Output.
type Output struct {
	// Addr is the air server's host:port.
	Addr string
	// ID is the robot's identity: its own mic hears it at gain 1.
	ID string
	// Rate is the air's rate (default DefaultRate); chunks at another
	// rate are resampled.
	Rate int
	// Buffer is how much audio a Write lets be queued ahead of what has
	// played, as a sound card's buffer (default audio.DefaultPaceBuffer).
	Buffer time.Duration

	role string // RoleSpeaker when empty; RolePerson for Say

	mu     sync.Mutex
	link   *link
	closed bool
}

var _ audio.Output = (*Output)(nil)

// ErrEnded is returned by a Write or Drain after Drain or Abort.
var ErrEnded = errors.New("air: utterance already ended")

func (o *Output) rate() int {
	if o.Rate > 0 {
		return o.Rate
	}
	return DefaultRate
}

func (o *Output) buffer() time.Duration {
	if o.Buffer > 0 {
		return o.Buffer
	}
	return audio.DefaultPaceBuffer
}

// Begin implements audio.Output: it connects to the air if it is not
// (at the first utterance, or after the connection was lost).
func (o *Output) Begin(ctx context.Context, name string) (audio.Stream, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.closed {
		return nil, errors.New("air: output closed")
	}
	if o.link != nil && o.link.dead() {
		o.link.close()
		o.link = nil
	}
	if o.link == nil {
		role := o.role
		if role == "" {
			role = RoleSpeaker
		}
		l, err := newLink(ctx, o.Addr, Hello{Role: role, ID: o.ID, Rate: o.rate()})
		if err != nil {
			return nil, err
		}
		o.link = l
	}
	return &stream{o: o, l: o.link}, nil
}

// Close ends the connection (what is queued is not played); it is
// idempotent.
func (o *Output) Close() error {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.closed = true
	if o.link != nil {
		o.link.close()
		o.link = nil
	}
	return nil
}

// stream is one utterance. One goroutine uses it.
type stream struct {
	o       *Output
	l       *link
	written int    // samples this utterance wrote
	last    uint64 // the link's count once its last sample was written
	ended   bool
}

// Write implements audio.Stream: it waits while more than the Buffer is
// queued ahead of what has played, then queues the chunk whole.
func (s *stream) Write(ctx context.Context, c audio.PCM) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if s.ended {
		return ErrEnded
	}
	if c.Rate <= 0 {
		return fmt.Errorf("air %s: a chunk without a sample rate", s.o.Addr)
	}
	c = audio.Resample(c, s.o.rate())
	if len(c.Samples) == 0 {
		return nil
	}
	rate := uint64(s.o.rate())
	buf := uint64(s.o.buffer()) * rate / uint64(time.Second)
	for {
		ahead, wake, err := s.l.state()
		if err != nil {
			return err
		}
		if ahead <= buf {
			break
		}
		// Bounded: what is ahead plays in its duration.
		t := time.NewTimer(time.Duration((ahead-buf)*uint64(time.Second)/rate) + DrainMargin)
		select {
		case <-wake:
			t.Stop()
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
			return fmt.Errorf("air %s: the air plays nothing", s.o.Addr)
		}
	}
	s.last = s.l.enqueue(c.Samples)
	s.written += len(c.Samples)
	return nil
}

// Drain implements audio.Stream: it waits until the air has played
// everything written, and returns its duration.
func (s *stream) Drain(ctx context.Context) (time.Duration, error) {
	if s.ended {
		return 0, ErrEnded
	}
	s.ended = true
	if s.written == 0 {
		return 0, nil
	}
	ahead, _, _ := s.l.state()
	rate := s.o.rate()
	limit := time.Duration(ahead)*time.Second/time.Duration(rate) + DrainMargin
	if err := s.l.waitDone(ctx, s.last, limit); err != nil {
		s.l.flush()
		return 0, err
	}
	return time.Duration(s.written) * time.Second / time.Duration(rate), nil
}

// Abort implements audio.Stream: what is queued is dropped at once.
func (s *stream) Abort() {
	if s.ended {
		return
	}
	s.ended = true
	s.l.flush()
}
