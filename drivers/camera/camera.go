// Package camera is the eye of the body. A Source grabs frames (a V4L2
// device through gocv, image files, or a test pattern); Capture keeps one
// open and grabbing into a latest-frame slot, so a vision query only copies
// the newest JPEG — no camera is opened per query. A lost camera is reopened
// with backoff, and said so in the log.
//
// Frames leave a Source already JPEG-encoded, so no cgo type (gocv.Mat)
// reaches the rest of the program.
package camera

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"image"
	"image/jpeg"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/chorus-robotics/chorus/drivers/internal/pause"
)

// Frame is one encoded picture.
type Frame struct {
	JPEG       []byte
	Width      int
	Height     int
	CapturedAt time.Time
	Seq        uint64
}

// Source grabs frames.
type Source interface {
	// Open opens the device or file.
	Open(ctx context.Context) error
	// Read blocks until the next frame and returns it JPEG-encoded.
	Read(ctx context.Context) (Frame, error)
	// Close releases the device; it is idempotent.
	Close() error
	// Name names the source in logs.
	Name() string
}

// Encode makes a Frame of img (pure Go: image/jpeg).
func Encode(img image.Image, quality int) (Frame, error) {
	var b bytes.Buffer
	if err := jpeg.Encode(&b, img, &jpeg.Options{Quality: quality}); err != nil {
		return Frame{}, fmt.Errorf("camera: encode JPEG: %w", err)
	}
	r := img.Bounds()
	return Frame{JPEG: b.Bytes(), Width: r.Dx(), Height: r.Dy()}, nil
}

// ErrNoFrame is returned by Latest before the first frame, or when the
// newest frame is older than the caller accepts.
var ErrNoFrame = errors.New("camera: no frame")

// Capture keeps a Source grabbing.
type Capture struct {
	Source Source
	// Interval between grabs; 0 grabs as fast as the source delivers.
	Interval time.Duration
	// MaxBackoff caps the wait between reopen attempts (default DefaultMaxBackoff).
	MaxBackoff time.Duration
	Log        *slog.Logger

	latest atomic.Pointer[Frame]
	seq    uint64
	mu     sync.Mutex
	err    error // last open/read error, for health and query errors
}

// DefaultMaxBackoff caps the wait between reopen attempts.
const DefaultMaxBackoff = pause.DefaultMaxBackoff

// Latest returns the newest frame if it is at most maxAge old (0: any age).
func (c *Capture) Latest(maxAge time.Duration) (Frame, error) {
	f := c.latest.Load()
	if f == nil {
		return Frame{}, fmt.Errorf("%w yet from %s%s", ErrNoFrame, c.Source.Name(), c.lastErr())
	}
	if maxAge > 0 {
		if age := time.Since(f.CapturedAt); age > maxAge {
			return Frame{}, fmt.Errorf("%w from %s for %v%s", ErrNoFrame, c.Source.Name(), age.Round(time.Millisecond), c.lastErr())
		}
	}
	return *f, nil
}

func (c *Capture) lastErr() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.err == nil {
		return ""
	}
	return ": " + c.err.Error()
}

func (c *Capture) setErr(err error) {
	c.mu.Lock()
	c.err = err
	c.mu.Unlock()
}

// Run grabs until ctx ends, reopening the source after failures.
func (c *Capture) Run(ctx context.Context) error {
	log := c.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	maxBackoff := c.MaxBackoff
	if maxBackoff <= 0 {
		maxBackoff = DefaultMaxBackoff
	}
	backoff := 100 * time.Millisecond
	defer c.Source.Close()
	for ctx.Err() == nil {
		if err := c.Source.Open(ctx); err != nil {
			c.setErr(err)
			log.Warn("camera: open failed; retrying", "source", c.Source.Name(), "in", backoff, "err", err)
			if pause.Sleep(ctx, backoff) != nil {
				return nil
			}
			backoff = min(backoff*2, maxBackoff)
			continue
		}
		if c.seq > 0 {
			log.Info("camera: reopened", "source", c.Source.Name())
		}
		err := c.grab(ctx)
		c.Source.Close()
		if ctx.Err() != nil {
			return nil
		}
		c.setErr(err)
		log.Warn("camera: lost; reopening", "source", c.Source.Name(), "err", err)
		if pause.Sleep(ctx, backoff) != nil {
			return nil
		}
		backoff = min(backoff*2, maxBackoff)
	}
	return nil
}

func (c *Capture) grab(ctx context.Context) error {
	next := time.Now()
	for {
		f, err := c.Source.Read(ctx)
		if err != nil {
			return err
		}
		c.seq++
		f.Seq = c.seq
		if f.CapturedAt.IsZero() {
			f.CapturedAt = time.Now()
		}
		c.latest.Store(&f)
		c.setErr(nil)
		if c.Interval > 0 {
			next = next.Add(c.Interval)
			if d := time.Until(next); d > 0 {
				if pause.Sleep(ctx, d) != nil {
					return ctx.Err()
				}
			} else {
				next = time.Now()
			}
		}
	}
}
