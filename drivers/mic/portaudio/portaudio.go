//go:build portaudio

// Package portaudio is a microphone Source reading an input stream through
// PortAudio (ALSA on a Pi): the device named Device, or the default input
// device. An input overflow (the reader was late and the device dropped
// audio) is counted, not an error; any other read error is, and
// mic.Capture reopens the device with backoff.
//
// Build with -tags portaudio and Debian's portaudio19-dev.
//
// # Concurrency
//
// One goroutine (mic.Capture's) calls Open, Read and Close. A Read blocks
// for at most one buffer of audio (FramesPerBuffer samples) at a time, and
// checks its context between buffers.
package portaudio

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"

	pa "github.com/gordonklaus/portaudio"

	"github.com/chorus-robotics/chorus/drivers/mic"
)

// DefaultFramesPerBuffer is 20 ms at 16 kHz.
const DefaultFramesPerBuffer = 320

// Source is a PortAudio input device.
type Source struct {
	// Device is a name or a part of one ("default", "hw:1,0", "USB");
	// empty means the default input device.
	Device string
	// SampleRate is what the device is opened at (default mic.DefaultRate).
	SampleRate int
	// FramesPerBuffer is the read granularity (default
	// DefaultFramesPerBuffer).
	FramesPerBuffer int

	stream    *pa.Stream
	buf       []int16
	left      []int16 // read from the device, not yet returned
	inited    bool
	overflows atomic.Uint64
}

var _ mic.Source = (*Source)(nil)

// Name implements mic.Source.
func (s *Source) Name() string {
	if s.Device == "" {
		return "portaudio:default"
	}
	return "portaudio:" + s.Device
}

// Rate implements mic.Source.
func (s *Source) Rate() int { return mic.RateOr(s.SampleRate) }

// Overflows is how many reads found the device had dropped audio.
func (s *Source) Overflows() uint64 { return s.overflows.Load() }

// Open initializes PortAudio and starts the input stream.
func (s *Source) Open(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.Close()
	if err := pa.Initialize(); err != nil {
		return fmt.Errorf("mic portaudio: initialize: %w", err)
	}
	s.inited = true
	dev, err := s.find()
	if err != nil {
		s.Close()
		return err
	}
	fpb := s.FramesPerBuffer
	if fpb <= 0 {
		fpb = DefaultFramesPerBuffer
	}
	s.buf, s.left = make([]int16, fpb), nil
	p := pa.StreamParameters{
		Input:           pa.StreamDeviceParameters{Device: dev, Channels: 1, Latency: dev.DefaultHighInputLatency},
		SampleRate:      float64(s.Rate()),
		FramesPerBuffer: fpb,
	}
	st, err := pa.OpenStream(p, s.buf)
	if err != nil {
		s.Close()
		return fmt.Errorf("mic portaudio: open %q at %d Hz: %w", dev.Name, s.Rate(), err)
	}
	if err := st.Start(); err != nil {
		st.Close()
		s.Close()
		return fmt.Errorf("mic portaudio: start %q: %w", dev.Name, err)
	}
	s.stream = st
	return nil
}

func (s *Source) find() (*pa.DeviceInfo, error) {
	if s.Device == "" {
		d, err := pa.DefaultInputDevice()
		if err != nil {
			return nil, fmt.Errorf("mic portaudio: no default input device: %w", err)
		}
		return d, nil
	}
	devs, err := pa.Devices()
	if err != nil {
		return nil, fmt.Errorf("mic portaudio: list devices: %w", err)
	}
	var names []string
	for _, d := range devs {
		if d.MaxInputChannels < 1 {
			continue
		}
		if d.Name == s.Device {
			return d, nil
		}
		names = append(names, d.Name)
	}
	for _, d := range devs {
		if d.MaxInputChannels > 0 && strings.Contains(d.Name, s.Device) {
			return d, nil
		}
	}
	return nil, fmt.Errorf("mic portaudio: no input device named %q (have %s)", s.Device, strings.Join(names, ", "))
}

// Read implements mic.Source.
func (s *Source) Read(ctx context.Context, buf []int16) (int, error) {
	if s.stream == nil {
		return 0, errors.New("mic portaudio: not open")
	}
	if len(s.left) == 0 {
		if err := ctx.Err(); err != nil {
			return 0, err
		}
		err := s.stream.Read()
		if errors.Is(err, pa.InputOverflowed) {
			s.overflows.Add(1)
		} else if err != nil {
			return 0, fmt.Errorf("mic portaudio %s: read: %w", s.Name(), err)
		}
		s.left = s.buf
	}
	n := copy(buf, s.left)
	s.left = s.left[n:]
	return n, nil
}

// Close stops the stream and terminates PortAudio; it is idempotent.
func (s *Source) Close() error {
	if s.stream != nil {
		s.stream.Abort()
		s.stream.Close()
		s.stream = nil
	}
	if s.inited {
		pa.Terminate()
		s.inited = false
	}
	s.left = nil
	return nil
}
