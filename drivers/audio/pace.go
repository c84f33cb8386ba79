package audio

import (
	"context"
	"sync"
	"time"

	"github.com/chorus-robotics/chorus/drivers/internal/pause"
)

// DefaultPaceBuffer is how much audio a paced stream takes ahead of
// playback, as a sound card's buffer does.
const DefaultPaceBuffer = 100 * time.Millisecond

// Pacer plays audio in real time without a device: Write waits while more
// than Buffer of audio is queued ahead of the clock, Drain waits until
// everything written has played. Outputs without a speaker (null, wav)
// use it when configured paced, so a room of them runs at human speed and
// the silences between robots can be measured.
//
// # Concurrency
//
// Safe for concurrent use; one utterance's stream uses one Pacer.
type Pacer struct {
	Buffer time.Duration // default DefaultPaceBuffer

	mu     sync.Mutex
	start  time.Time // when the first sample played
	until  time.Time // when the audio written so far will have played
	played time.Duration
}

// Write queues d of audio, waiting first while the queue is full. An
// underrun (nothing queued) starts the new audio now.
func (p *Pacer) Write(ctx context.Context, d time.Duration) error {
	buf := p.Buffer
	if buf <= 0 {
		buf = DefaultPaceBuffer
	}
	p.mu.Lock()
	var wait time.Duration
	if !p.until.IsZero() {
		wait = time.Until(p.until.Add(-buf))
	}
	p.mu.Unlock()
	if err := pause.Sleep(ctx, wait); err != nil {
		return err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	now := time.Now()
	if p.start.IsZero() {
		p.start = now
	}
	if p.until.Before(now) {
		p.until = now
	}
	p.until = p.until.Add(d)
	p.played += d
	return nil
}

// Pace is how a stream that may be paced takes d of audio: it refuses it
// once ctx has ended, and waits as p.Write does when paced (p not nil).
func Pace(ctx context.Context, p *Pacer, d time.Duration) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if p == nil {
		return nil
	}
	return p.Write(ctx, d)
}

// Drain waits until everything written has played and returns how long
// the audio was.
func (p *Pacer) Drain(ctx context.Context) (time.Duration, error) {
	p.mu.Lock()
	var wait time.Duration
	if !p.until.IsZero() {
		wait = time.Until(p.until)
	}
	p.mu.Unlock()
	if err := pause.Sleep(ctx, wait); err != nil {
		return 0, err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.played, nil
}

// Abort stops playback now: the audio not yet played is not counted.
func (p *Pacer) Abort() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if now := time.Now(); p.until.After(now) {
		p.played -= p.until.Sub(now)
		p.until = now
	}
}

// Remaining is how long the audio written so far still plays.
func (p *Pacer) Remaining() time.Duration {
	p.mu.Lock()
	defer p.mu.Unlock()
	return max(0, time.Until(p.until))
}

// StartedAt is when the first sample played (zero before the first Write).
func (p *Pacer) StartedAt() time.Time {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.start
}
