// Package null is an audio Output that plays nothing: a robot with no
// speaker still answers speak queries, with the duration the audio would
// have had.
package null

import (
	"context"
	"sync"
	"time"

	"github.com/chorus-robotics/chorus/drivers/audio"
)

// Output discards audio. Paced, it takes as long as the audio would have
// played (audio.Pacer): a room of robots without speakers at human speed.
type Output struct {
	Paced bool

	mu      sync.Mutex
	samples int // total samples ever written, for tests
}

var _ audio.Output = (*Output)(nil)

// Begin implements audio.Output.
func (o *Output) Begin(context.Context, string) (audio.Stream, error) {
	s := &stream{o: o}
	if o.Paced {
		s.pace = &audio.Pacer{}
	}
	return s, nil
}

// Close implements audio.Output.
func (o *Output) Close() error { return nil }

// Samples is how many samples were written in all.
func (o *Output) Samples() int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.samples
}

type stream struct {
	o    *Output
	d    time.Duration
	pace *audio.Pacer // nil unless paced
}

func (s *stream) Write(ctx context.Context, c audio.PCM) error {
	if err := audio.Pace(ctx, s.pace, c.Duration()); err != nil {
		return err
	}
	s.d += c.Duration()
	s.o.mu.Lock()
	s.o.samples += len(c.Samples)
	s.o.mu.Unlock()
	return nil
}

func (s *stream) Drain(ctx context.Context) (time.Duration, error) {
	if s.pace != nil {
		return s.pace.Drain(ctx)
	}
	return s.d, nil
}

func (s *stream) Abort() {
	if s.pace != nil {
		s.pace.Abort()
	}
}
