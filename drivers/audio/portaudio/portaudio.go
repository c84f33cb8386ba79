//go:build portaudio

// Package portaudio plays speech through PortAudio (ALSA on a Pi). The
// stream is opened once and kept running, and every utterance starts with a
// short run of silence, so the amplifier is awake before the first syllable
// (a common complaint with Pi speakers: the first word cut off). Speech at
// another sample rate than the device's is resampled.
//
// Build with -tags portaudio and Debian's portaudio19-dev.
package portaudio

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	pa "github.com/gordonklaus/portaudio"

	"github.com/chorus-robotics/chorus/drivers/audio"
)

// Defaults.
const (
	DefaultFramesPerBuffer = 1024
	DefaultPrime           = 60 * time.Millisecond
)

// Output is a PortAudio output device.
type Output struct {
	// Device is a name or a part of one ("default", "hw:1,0", "USB");
	// empty means the default output device.
	Device string
	// Rate is the device sample rate; 0 means the device's default.
	Rate int
	// FramesPerBuffer is the write granularity; 0 means 1024.
	FramesPerBuffer int
	// Prime is the silence written before each utterance; 0 means 60 ms,
	// negative means none.
	Prime time.Duration

	mu     sync.Mutex
	stream *pa.Stream
	buf    []int16
	rate   int
	broken bool
	inited bool
}

var _ audio.Output = (*Output)(nil)

// Open initializes PortAudio and opens the device; it is idempotent.
func (o *Output) Open() error {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.openLocked()
}

func (o *Output) openLocked() error {
	if o.stream != nil && !o.broken {
		return nil
	}
	o.closeLocked()
	if err := pa.Initialize(); err != nil {
		return fmt.Errorf("audio portaudio: initialize: %w", err)
	}
	o.inited = true
	dev, err := o.find()
	if err != nil {
		o.closeLocked()
		return err
	}
	rate := o.Rate
	if rate <= 0 {
		rate = int(dev.DefaultSampleRate)
	}
	fpb := o.FramesPerBuffer
	if fpb <= 0 {
		fpb = DefaultFramesPerBuffer
	}
	o.buf = make([]int16, fpb)
	p := pa.StreamParameters{
		Output:          pa.StreamDeviceParameters{Device: dev, Channels: 1, Latency: dev.DefaultHighOutputLatency},
		SampleRate:      float64(rate),
		FramesPerBuffer: fpb,
	}
	s, err := pa.OpenStream(p, o.buf)
	if err != nil {
		o.closeLocked()
		return fmt.Errorf("audio portaudio: open %q at %d Hz: %w", dev.Name, rate, err)
	}
	if err := s.Start(); err != nil {
		s.Close()
		o.closeLocked()
		return fmt.Errorf("audio portaudio: start %q: %w", dev.Name, err)
	}
	o.stream, o.rate, o.broken = s, rate, false
	return nil
}

func (o *Output) find() (*pa.DeviceInfo, error) {
	if o.Device == "" {
		d, err := pa.DefaultOutputDevice()
		if err != nil {
			return nil, fmt.Errorf("audio portaudio: no default output device: %w", err)
		}
		return d, nil
	}
	devs, err := pa.Devices()
	if err != nil {
		return nil, fmt.Errorf("audio portaudio: list devices: %w", err)
	}
	var names []string
	for _, d := range devs {
		if d.MaxOutputChannels < 1 {
			continue
		}
		if d.Name == o.Device {
			return d, nil
		}
		names = append(names, d.Name)
	}
	for _, d := range devs {
		if d.MaxOutputChannels > 0 && strings.Contains(d.Name, o.Device) {
			return d, nil
		}
	}
	return nil, fmt.Errorf("audio portaudio: no output device named %q (have %s)", o.Device, strings.Join(names, ", "))
}

// SampleRate is the device rate (after Open).
func (o *Output) SampleRate() int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.rate
}

// Begin implements audio.Output; it reopens a device that failed.
func (o *Output) Begin(ctx context.Context, _ string) (audio.Stream, error) {
	o.mu.Lock()
	if err := o.openLocked(); err != nil {
		o.mu.Unlock()
		return nil, err
	}
	o.mu.Unlock()
	s := &stream{o: o}
	prime := o.Prime
	if prime == 0 {
		prime = DefaultPrime
	}
	if prime > 0 {
		n := int(int64(o.rate) * int64(prime) / int64(time.Second))
		if err := s.write(ctx, make([]int16, n)); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// Close stops and closes the device; it is idempotent.
func (o *Output) Close() error {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.closeLocked()
	return nil
}

func (o *Output) closeLocked() {
	if o.stream != nil {
		o.stream.Abort()
		o.stream.Close()
		o.stream = nil
	}
	if o.inited {
		pa.Terminate()
		o.inited = false
	}
}

type stream struct {
	o       *Output
	pending []int16 // less than one buffer, waiting for more
	n       int     // samples written, at the device rate
	done    bool
}

// ErrEnded is returned by writes after Drain or Abort.
var ErrEnded = errors.New("audio portaudio: utterance already ended")

func (s *stream) Write(ctx context.Context, c audio.PCM) error {
	if s.done {
		return ErrEnded
	}
	return s.write(ctx, audio.Resample(c, s.o.rate).Samples)
}

// write sends whole buffers; PortAudio's blocking write paces it in real
// time on a real device.
func (s *stream) write(ctx context.Context, samples []int16) error {
	s.pending = append(s.pending, samples...)
	o := s.o
	for len(s.pending) >= len(o.buf) {
		if err := ctx.Err(); err != nil {
			return err
		}
		o.mu.Lock()
		if o.stream == nil {
			o.mu.Unlock()
			return errors.New("audio portaudio: device closed")
		}
		copy(o.buf, s.pending[:len(o.buf)])
		err := o.stream.Write()
		if err != nil && !errors.Is(err, pa.OutputUnderflowed) {
			o.broken = true
			o.mu.Unlock()
			return fmt.Errorf("audio portaudio: write: %w", err)
		}
		o.mu.Unlock()
		s.n += len(o.buf)
		s.pending = s.pending[len(o.buf):]
	}
	return nil
}

// Drain pads the last buffer with silence, writes it, and waits out the
// device latency so the result means "heard", not "handed over".
func (s *stream) Drain(ctx context.Context) (time.Duration, error) {
	if s.done {
		return 0, ErrEnded
	}
	s.done = true
	if len(s.pending) > 0 {
		pad := make([]int16, len(s.o.buf)-len(s.pending))
		if err := s.write(ctx, pad); err != nil {
			return 0, err
		}
	}
	s.o.mu.Lock()
	var lat time.Duration
	if s.o.stream != nil {
		if info := s.o.stream.Info(); info != nil {
			lat = info.OutputLatency
		}
	}
	s.o.mu.Unlock()
	t := time.NewTimer(lat)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
		return 0, ctx.Err()
	}
	return time.Duration(s.n) * time.Second / time.Duration(s.o.rate), nil
}

// Abort drops what has not been written; PortAudio plays out at most the
// buffers already queued.
func (s *stream) Abort() {
	s.done = true
	s.pending = nil
}
