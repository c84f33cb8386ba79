package mic

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chorus-robotics/chorus/drivers/internal/pause"
	"github.com/chorus-robotics/chorus/drivers/internal/runtest"
	"github.com/chorus-robotics/chorus/runtime/logtest"
)

// fake is a Source as unkind as a real one: it can refuse to open, fail
// mid-stream, deliver in odd-sized bursts, and deliver faster than real
// time (Every 0) or paced.
type fake struct {
	mu        sync.Mutex
	openErrs  []error // returned by successive Opens, then nil
	failAfter int     // samples before Read fails (0: never)
	burst     int     // samples per Read at most (0: len(buf))
	every     time.Duration
	opens     int
	closes    int
	open      bool
	sent      int
	next      int16
}

func (f *fake) Open(ctx context.Context) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.opens++
	if len(f.openErrs) > 0 {
		err := f.openErrs[0]
		f.openErrs = f.openErrs[1:]
		if err != nil {
			return err
		}
	}
	f.open, f.sent = true, 0
	return nil
}

func (f *fake) Read(ctx context.Context, buf []int16) (int, error) {
	if f.every > 0 && pause.Sleep(ctx, f.every) != nil {
		return 0, ctx.Err()
	}
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.open {
		return 0, errors.New("fake: not open")
	}
	if f.failAfter > 0 && f.sent >= f.failAfter {
		return 0, errors.New("fake: unplugged")
	}
	n := len(buf)
	if f.burst > 0 {
		n = min(n, f.burst)
	}
	for i := range n {
		buf[i] = f.next
		f.next++
	}
	f.sent += n
	return n, nil
}

func (f *fake) Rate() int    { return 16000 }
func (f *fake) Name() string { return "fake" }
func (f *fake) Close() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.open {
		f.closes++
	}
	f.open = false
	return nil
}

var _ Source = (*fake)(nil)

func run(t *testing.T, c *Capture) (stop func()) {
	t.Helper()
	return runtest.Loop(t, "capture", c.Run)
}

func next(t *testing.T, c *Capture) Frame {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	f, err := c.Next(ctx)
	if err != nil {
		t.Fatalf("next: %v", err)
	}
	return f
}

// Frames are 20 ms, in order, with every sample, whatever sizes the
// source reads in.
func TestFramesAreWholeAndInOrder(t *testing.T) {
	for _, burst := range []int{0, 13, 320, 1000} {
		t.Run(fmt.Sprint("burst ", burst), func(t *testing.T) {
			src := &fake{burst: burst, every: 20 * time.Microsecond}
			c := &Capture{Source: src}
			run(t, c)
			want := int16(0)
			var last Frame
			for i := range 10 {
				f := next(t, c)
				if len(f.Samples) != 320 || f.Rate != 16000 || f.Seq != uint64(i+1) || f.Dropped != 0 {
					t.Fatalf("frame %d: %d samples at %d Hz, seq %d, dropped %d", i, len(f.Samples), f.Rate, f.Seq, f.Dropped)
				}
				for _, s := range f.Samples {
					if s != want {
						t.Fatalf("frame %d: sample %d, want %d", i, s, want)
					}
					want++
				}
				if i > 0 && f.At.Before(last.At) {
					t.Fatalf("frame %d at %v, before the last one at %v", i, f.At, last.At)
				}
				last = f
			}
		})
	}
}

// A paced source gets contiguous timestamps, 20 ms apart, near now.
func TestTimestamps(t *testing.T) {
	c := &Capture{Source: &fake{burst: 160, every: 10 * time.Millisecond}}
	run(t, c)
	a := next(t, c)
	for range 5 {
		b := next(t, c)
		if got := b.At.Sub(a.At); got != FrameDuration {
			t.Fatalf("frames %v apart", got)
		}
		a = b
	}
	if age := time.Since(a.End()); age < -50*time.Millisecond || age > time.Second {
		t.Fatalf("the last frame ended %v ago", age)
	}
}

// A consumer that stalls never blocks the capture: the oldest frames are
// dropped, counted, and the consumer learns how many it missed; the ring
// never grows.
func TestStalledConsumer(t *testing.T) {
	var mu sync.Mutex
	drops := 0
	src := &fake{} // faster than real time: the consumer is far behind
	c := &Capture{Source: src, Buffer: 200 * time.Millisecond, OnDrop: func(n int) { mu.Lock(); drops += n; mu.Unlock() }}
	run(t, c)
	deadline := time.Now().Add(5 * time.Second)
	for c.Dropped() < 5000 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	if c.Dropped() < 5000 {
		t.Fatalf("dropped %d frames", c.Dropped())
	}
	c.mu.Lock()
	size, held := len(c.ring), c.n
	c.mu.Unlock()
	if size != 10 || held > 10 {
		t.Fatalf("ring of %d holding %d, want 10", size, held)
	}
	f := next(t, c)
	if f.Dropped == 0 || f.Seq != f.Dropped+1 {
		t.Fatalf("first frame read: seq %d, dropped %d", f.Seq, f.Dropped)
	}
	mu.Lock()
	defer mu.Unlock()
	if drops == 0 {
		t.Fatal("OnDrop never called")
	}
}

// The memory a stalled consumer costs is the ring's, not the stall's.
func TestStalledConsumerMemoryIsBounded(t *testing.T) {
	c := &Capture{Source: &fake{}, Buffer: time.Second}
	run(t, c)
	heap := func() uint64 {
		runtime.GC()
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		return m.HeapAlloc
	}
	for c.Dropped() < 1000 {
		time.Sleep(time.Millisecond)
	}
	before := heap()
	for d := c.Dropped(); c.Dropped() < d+50000; {
		time.Sleep(time.Millisecond)
	}
	// 50000 frames are 32 MB of samples; the ring holds 50 (32 kB). The
	// margin is the rest of the process's (a loaded CI machine's GC and
	// the race detector's shadow memory grew a 2 MB one).
	if after := heap(); after > before+8<<20 {
		t.Fatalf("heap grew from %d to %d bytes", before, after)
	}
}

// A source that fails to open, or fails mid-stream, is reopened with
// backoff; each failure is logged once and kept in Err until frames flow.
func TestReopensWithBackoff(t *testing.T) {
	var log logtest.Buffer
	unplugged := errors.New("no such device")
	src := &fake{openErrs: []error{unplugged, unplugged, unplugged}, failAfter: 3200, every: time.Millisecond, burst: 320}
	c := &Capture{Source: src, MaxBackoff: 100 * time.Millisecond, Log: slog.New(slog.NewTextHandler(&log, nil))}
	run(t, c)
	deadline := time.Now().Add(5 * time.Second)
	seen := false
	for time.Now().Before(deadline) {
		if err := c.Err(); err != nil && strings.Contains(err.Error(), "no such device") {
			seen = true
			break
		}
		time.Sleep(time.Millisecond)
	}
	if !seen {
		t.Fatal("Err never said the open failed")
	}
	for i := 0; i < 25; i++ { // past the first failure at 10 frames
		next(t, c)
	}
	src.mu.Lock()
	opens := src.opens
	src.mu.Unlock()
	if opens < 5 {
		t.Fatalf("opened %d times", opens)
	}
	out := log.String()
	if n := strings.Count(out, "no such device"); n != 1 {
		t.Fatalf("the open failure logged %d times, want once:\n%s", n, out)
	}
	if !strings.Contains(out, "fake: unplugged") || !strings.Contains(out, "mic: reopened") {
		t.Fatalf("the log lacks the read failure or the reopen:\n%s", out)
	}
}

// Stopping ctx stops the loop, closes the source, and a waiting consumer
// learns it.
func TestStopClosesAndWakesTheConsumer(t *testing.T) {
	src := &fake{every: time.Millisecond}
	c := &Capture{Source: src}
	stop := run(t, c)
	next(t, c)
	got := make(chan error, 1)
	go func() {
		for {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			_, err := c.Next(ctx)
			cancel()
			if err != nil {
				got <- err
				return
			}
		}
	}()
	stop()
	select {
	case err := <-got:
		if !errors.Is(err, ErrStopped) {
			t.Fatalf("next after stop: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the consumer was not woken")
	}
	src.mu.Lock()
	defer src.mu.Unlock()
	if src.open || src.closes == 0 {
		t.Fatalf("source left open (closes %d)", src.closes)
	}
}

// Next waits no longer than its context.
func TestNextHonoursItsContext(t *testing.T) {
	c := &Capture{Source: &fake{}}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if _, err := c.Next(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("next: %v", err)
	}
}
