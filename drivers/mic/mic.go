// Package mic is the ear of the body: a Source delivers mono signed 16-bit
// PCM (a sound card through PortAudio, a program such as arecord writing
// raw PCM, a WAV file for tests), and Capture keeps one open and reading
// into a bounded ring of 20 ms frames that the hearing pipeline (the VAD,
// then STT) takes in order.
//
// Capture never waits for its consumer: when the ring is full the oldest
// frame is dropped and counted, and the consumer learns how many it missed
// (Frame.Dropped). A lost source is reopened with backoff, and said so in
// the log once per failure.
//
// # Usage
//
//	c := &mic.Capture{Source: src, Log: log}
//	go c.Run(ctx)               // owns the source until ctx ends
//	for {
//		f, err := c.Next(ctx)   // 20 ms of audio, oldest first
//		...
//	}
//
// # Concurrency
//
// Run is the one goroutine that calls the Source; it returns when ctx ends,
// after closing the source. Next is for one consumer goroutine; Err,
// Dropped and Rate may be called from any goroutine.
package mic

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/chorus-robotics/chorus/drivers/internal/pause"
)

// Defaults.
const (
	// DefaultRate is the rate hearing runs at (what STT engines take).
	DefaultRate = 16000
	// FrameDuration is the length of one Frame.
	FrameDuration = 20 * time.Millisecond
	// DefaultBuffer is how much audio the ring holds for a slow consumer.
	DefaultBuffer = 5 * time.Second
	// DefaultMaxBackoff caps the wait between reopen attempts.
	DefaultMaxBackoff = pause.DefaultMaxBackoff
)

// Source delivers mono signed 16-bit PCM at Rate samples per second.
type Source interface {
	// Open opens the device, program or file. A Source may be opened
	// again after Close.
	Open(ctx context.Context) error
	// Read fills buf with the next samples and returns how many; it
	// blocks until at least one is available, the source fails, or ctx
	// ends.
	Read(ctx context.Context, buf []int16) (int, error)
	// Rate is the sample rate in Hz.
	Rate() int
	// Close releases the source; it is idempotent.
	Close() error
	// Name names the source in logs.
	Name() string
}

// Frame is FrameDuration of audio.
type Frame struct {
	Samples []int16
	Rate    int
	// At is when the first sample was captured.
	At time.Time
	// Seq counts frames from 1 since Run started.
	Seq uint64
	// Dropped is how many frames the ring dropped just before this one
	// because the consumer was behind.
	Dropped uint64
}

// Duration is how long f plays.
func (f Frame) Duration() time.Duration {
	if f.Rate <= 0 {
		return 0
	}
	return time.Duration(len(f.Samples)) * time.Second / time.Duration(f.Rate)
}

// End is when the sample after the last one of f is captured.
func (f Frame) End() time.Time { return f.At.Add(f.Duration()) }

// ErrStopped is returned by Next once Run has returned and the ring is
// empty.
var ErrStopped = errors.New("mic: capture stopped")

// Capture keeps a Source reading into a ring of frames.
type Capture struct {
	Source Source
	// Buffer is how much audio the ring holds (default DefaultBuffer).
	Buffer time.Duration
	// MaxBackoff caps the wait between reopen attempts (default
	// DefaultMaxBackoff).
	MaxBackoff time.Duration
	// OnDrop, if set, is called from Run with the number of frames the
	// ring dropped (for metrics); it must not block.
	OnDrop func(n int)
	Log    *slog.Logger

	mu       sync.Mutex
	ring     []Frame // capacity fixed at the first frame
	head, n  int
	lastSeq  uint64 // the Seq of the last frame Next returned
	err      error  // last open/read error, for health and doctor
	stopped  bool
	ready    chan struct{} // signalled (capacity 1) when a frame is pushed or Run stops
	once     sync.Once
	dropped  atomic.Uint64
	rate     atomic.Int64
	seq      uint64 // owned by Run
	clockAt  time.Time
	clockSet bool
}

func (c *Capture) init() {
	c.once.Do(func() { c.ready = make(chan struct{}, 1) })
}

// Err is the last error opening or reading the source, nil once frames
// flow again.
func (c *Capture) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err
}

// Dropped is how many frames the ring has dropped since Run started.
func (c *Capture) Dropped() uint64 { return c.dropped.Load() }

// Rate is the sample rate of the frames (0 before the source opened).
func (c *Capture) Rate() int { return int(c.rate.Load()) }

func (c *Capture) setErr(err error) {
	c.mu.Lock()
	c.err = err
	c.mu.Unlock()
}

func (c *Capture) signal() {
	select {
	case c.ready <- struct{}{}:
	default:
	}
}

// Run reads until ctx ends, reopening the source after failures; it closes
// the source before it returns. Call it once.
func (c *Capture) Run(ctx context.Context) error {
	c.init()
	log := c.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	log = log.With("source", c.Source.Name())
	maxBackoff := c.MaxBackoff
	if maxBackoff <= 0 {
		maxBackoff = DefaultMaxBackoff
	}
	defer func() {
		c.Source.Close()
		c.mu.Lock()
		c.stopped = true
		c.mu.Unlock()
		c.signal()
	}()
	const minBackoff = 100 * time.Millisecond
	backoff := minBackoff
	var failing string // the failure last logged, to log each failure once
	for ctx.Err() == nil {
		if err := c.Source.Open(ctx); err != nil {
			if ctx.Err() != nil {
				return nil
			}
			c.setErr(err)
			if err.Error() != failing {
				failing = err.Error()
				log.Warn("mic: open failed; retrying with backoff", "err", err)
			}
			if pause.Sleep(ctx, backoff) != nil {
				return nil
			}
			backoff = min(backoff*2, maxBackoff)
			continue
		}
		if failing != "" {
			log.Info("mic: reopened")
		}
		got, err := c.read(ctx)
		c.Source.Close()
		if ctx.Err() != nil {
			return nil
		}
		c.setErr(err)
		if got { // frames flowed: this is a new failure, logged again
			backoff, failing = minBackoff, ""
		}
		if err.Error() != failing {
			failing = err.Error()
			log.Warn("mic: lost; reopening with backoff", "err", err)
		}
		if pause.Sleep(ctx, backoff) != nil {
			return nil
		}
		backoff = min(backoff*2, maxBackoff)
	}
	return nil
}

// read reads frames until the source fails; got says whether one came.
func (c *Capture) read(ctx context.Context) (got bool, err error) {
	rate := c.Source.Rate()
	if rate <= 0 {
		return false, errors.New("mic: source has no sample rate")
	}
	c.rate.Store(int64(rate))
	size := rate * int(FrameDuration/time.Millisecond) / 1000
	c.clockSet = false
	for {
		buf := make([]int16, size) // handed to the consumer: never reused
		for filled := 0; filled < size; {
			n, err := c.Source.Read(ctx, buf[filled:])
			if err != nil {
				return got, err
			}
			filled += n
		}
		got = true
		c.push(Frame{Samples: buf, Rate: rate, At: c.stamp(time.Now(), FrameDuration)})
	}
}

// stamp is the capture time of a frame of length d completed at now: the
// previous frame's end while the source keeps real time (within 200 ms),
// so bursty delivery (a pipe, a sound card's periods) does not jitter the
// clock, or now-d when it does not.
func (c *Capture) stamp(now time.Time, d time.Duration) time.Time {
	measured := now.Add(-d)
	if c.clockSet {
		expected := c.clockAt
		if diff := measured.Sub(expected); diff > -200*time.Millisecond && diff < 200*time.Millisecond {
			measured = expected
		}
	}
	c.clockAt, c.clockSet = measured.Add(d), true
	return measured
}

func (c *Capture) push(f Frame) {
	c.seq++
	f.Seq = c.seq
	c.mu.Lock()
	if c.ring == nil {
		buffer := c.Buffer
		if buffer <= 0 {
			buffer = DefaultBuffer
		}
		c.ring = make([]Frame, max(1, int(buffer/FrameDuration)))
	}
	dropped := 0
	if c.n == len(c.ring) {
		c.ring[c.head] = Frame{}
		c.head = (c.head + 1) % len(c.ring)
		c.n--
		dropped = 1
	}
	c.ring[(c.head+c.n)%len(c.ring)] = f
	c.n++
	c.err = nil
	c.mu.Unlock()
	if dropped > 0 {
		c.dropped.Add(uint64(dropped))
		if c.OnDrop != nil {
			c.OnDrop(dropped)
		}
	}
	c.signal()
}

// Next returns the oldest frame not yet returned, waiting for one until
// ctx ends. After Run has returned it drains the ring, then returns
// ErrStopped.
func (c *Capture) Next(ctx context.Context) (Frame, error) {
	c.init()
	for {
		c.mu.Lock()
		if c.n > 0 {
			f := c.ring[c.head]
			c.ring[c.head] = Frame{}
			c.head = (c.head + 1) % len(c.ring)
			c.n--
			if f.Seq > c.lastSeq+1 {
				f.Dropped = f.Seq - c.lastSeq - 1
			}
			c.lastSeq = f.Seq
			c.mu.Unlock()
			return f, nil
		}
		stopped := c.stopped
		c.mu.Unlock()
		if stopped {
			return Frame{}, ErrStopped
		}
		select {
		case <-c.ready:
		case <-ctx.Done():
			return Frame{}, ctx.Err()
		}
	}
}

// RateOr is rate when it is set, else DefaultRate: a source's Rate.
func RateOr(rate int) int {
	if rate > 0 {
		return rate
	}
	return DefaultRate
}
