// Package file is a microphone Source that plays a WAV file (or samples
// in memory) as if a person spoke it into the microphone: paced in real
// time from the moment Open was called, looped or followed by silence, so
// a test can say a sentence and then be quiet.
//
// The file is decoded with audio.DecodeWAV (16-bit PCM, mono or stereo
// mixed down); audio at another rate than Rate is resampled linearly
// (speech quality).
//
// # Usage
//
//	src := file.New("hello.wav")          // or file.FromSamples(16000, pcm)
//	src.Silence = 2 * time.Second         // then 2 s of silence, then EOF
//	c := &mic.Capture{Source: src}
//
// # Concurrency
//
// One goroutine (mic.Capture's) calls Open, Read and Close.
package file

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/chorus-robotics/chorus/drivers/audio"
	"github.com/chorus-robotics/chorus/drivers/mic"
)

// Forever, as Silence, pads with silence without end.
const Forever time.Duration = -1

// Source plays Path, or Samples when Path is empty.
type Source struct {
	// Path is a WAV file, read at Open.
	Path string
	// Samples are the audio when Path is empty, at SampleRate (default
	// SampleRate: no resampling).
	Samples     []int16
	SamplesRate int
	// SampleRate is the rate delivered (default mic.DefaultRate).
	SampleRate int
	// Loop plays the audio again and again (Silence is then between
	// the repeats).
	Loop bool
	// Silence follows the audio; Forever never ends. After it (and
	// without Loop), Read returns io.EOF.
	Silence time.Duration

	pcm   []int16
	start time.Time
	pos   int64 // samples delivered since Open
	open  bool
}

var _ mic.Source = (*Source)(nil)

// New returns a Source playing the WAV file at path; it reads nothing yet.
func New(path string) *Source { return &Source{Path: path} }

// FromSamples returns a Source playing samples taken at rate.
func FromSamples(rate int, samples []int16) *Source {
	return &Source{Samples: samples, SamplesRate: rate, SampleRate: rate}
}

// Name implements mic.Source.
func (s *Source) Name() string {
	if s.Path != "" {
		return "file:" + s.Path
	}
	return "file:memory"
}

// Rate implements mic.Source.
func (s *Source) Rate() int { return mic.RateOr(s.SampleRate) }

// Open loads the audio and starts its clock.
func (s *Source) Open(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	p := audio.PCM{Rate: s.SamplesRate, Samples: s.Samples}
	if p.Rate <= 0 {
		p.Rate = s.Rate()
	}
	if s.Path != "" {
		b, err := os.ReadFile(s.Path)
		if err != nil {
			return fmt.Errorf("mic file: %w", err)
		}
		if p, err = audio.DecodeWAV(b); err != nil {
			return fmt.Errorf("mic file %s: %w", s.Path, err)
		}
	}
	s.pcm = audio.Resample(p, s.Rate()).Samples
	if len(s.pcm) == 0 && s.Silence == 0 {
		return fmt.Errorf("mic file %s: no audio", s.Name())
	}
	s.start, s.pos, s.open = time.Now(), 0, true
	return nil
}

// length is how many samples one play lasts (audio and silence); -1 is
// without end.
func (s *Source) length() int64 {
	if s.Silence < 0 {
		return -1
	}
	return int64(len(s.pcm)) + int64(s.Silence)*int64(s.Rate())/int64(time.Second)
}

// Read implements mic.Source: it waits until min(len(buf), what is left)
// samples have come due since Open, and returns them.
func (s *Source) Read(ctx context.Context, buf []int16) (int, error) {
	if !s.open {
		return 0, errors.New("mic file: not open")
	}
	if len(buf) == 0 {
		return 0, nil
	}
	n := int64(len(buf))
	length := s.length()
	if length >= 0 && !s.Loop {
		if s.pos >= length {
			return 0, fmt.Errorf("mic file %s: %w", s.Name(), io.EOF)
		}
		n = min(n, length-s.pos)
	}
	rate := int64(s.Rate())
	due := s.start.Add(time.Duration((s.pos + n) * int64(time.Second) / rate))
	if d := time.Until(due); d > 0 {
		t := time.NewTimer(d)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return 0, ctx.Err()
		}
	}
	for i := range buf[:n] {
		buf[i] = s.at(s.pos + int64(i))
	}
	s.pos += n
	return int(n), nil
}

// at is the sample at position i since Open.
func (s *Source) at(i int64) int16 {
	if length := s.length(); s.Loop && length > 0 {
		i %= length
	}
	if i < int64(len(s.pcm)) {
		return s.pcm[i]
	}
	return 0
}

// Close implements mic.Source; it is idempotent.
func (s *Source) Close() error {
	s.open, s.pcm = false, nil
	return nil
}
