// Package wav is an audio Output that writes each utterance to its own WAV
// file (mono, 16-bit, at the rate of its first chunk), for the demo, tests
// and robots without a speaker. Playback is not paced in real time: Drain
// returns as soon as the file is complete, with the duration it would play.
package wav

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sync"
	"sync/atomic"
	"time"

	"github.com/chorus-robotics/chorus/drivers/audio"
)

// Output writes utterances into Dir. Paced, each utterance also takes as
// long as it plays (audio.Pacer), so a room of them runs at human speed.
type Output struct {
	Dir   string
	Paced bool
	seq   atomic.Uint64
}

var _ audio.Output = (*Output)(nil)

// New returns an Output writing into dir, which it creates.
func New(dir string) (*Output, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("audio wav: %w", err)
	}
	return &Output{Dir: dir}, nil
}

var unsafeName = regexp.MustCompile(`[^A-Za-z0-9._-]+`)

// DefaultRate is the rate a WAV file is written at when no audio said
// its own.
const DefaultRate = 22050

// Begin implements audio.Output.
func (o *Output) Begin(ctx context.Context, name string) (audio.Stream, error) {
	n := o.seq.Add(1)
	name = unsafeName.ReplaceAllString(name, "_")
	if len(name) > 48 {
		name = name[:48]
	}
	path := filepath.Join(o.Dir, fmt.Sprintf("%04d-%s.wav", n, name))
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("audio wav: %w", err)
	}
	if err := audio.WriteWAVHeader(f, 0, 0); err != nil { // rewritten by Drain
		f.Close()
		return nil, fmt.Errorf("audio wav: %w", err)
	}
	st := &stream{f: f, w: bufio.NewWriter(f), path: path}
	if o.Paced {
		st.pace = &audio.Pacer{}
	}
	return st, nil
}

// Close implements audio.Output.
func (o *Output) Close() error { return nil }

type stream struct {
	mu   sync.Mutex
	f    *os.File
	w    *bufio.Writer
	path string
	rate int
	n    int
	done bool
	pace *audio.Pacer // nil unless paced
}

// Path is the file this stream writes (for tests and the demo transcript).
func Path(s audio.Stream) string {
	if st, ok := s.(*stream); ok {
		return st.path
	}
	return ""
}

func (s *stream) Write(ctx context.Context, c audio.PCM) error {
	if err := audio.Pace(ctx, s.pace, c.Duration()); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.done {
		return errors.New("audio wav: write after the utterance ended")
	}
	if s.rate == 0 {
		s.rate = c.Rate
	}
	c = audio.Resample(c, s.rate)
	var b [2]byte
	for _, x := range c.Samples {
		binary.LittleEndian.PutUint16(b[:], uint16(x))
		if _, err := s.w.Write(b[:]); err != nil {
			return fmt.Errorf("audio wav %s: %w", s.path, err)
		}
	}
	s.n += len(c.Samples)
	return nil
}

func (s *stream) finish() error {
	if s.done {
		return nil
	}
	s.done = true
	err := s.w.Flush()
	if err == nil {
		_, err = s.f.Seek(0, 0)
	}
	if err == nil {
		rate := s.rate
		if rate == 0 {
			rate = DefaultRate
		}
		err = audio.WriteWAVHeader(s.f, rate, s.n)
	}
	if cerr := s.f.Close(); err == nil {
		err = cerr
	}
	return err
}

func (s *stream) Drain(ctx context.Context) (time.Duration, error) {
	if s.pace != nil {
		if _, err := s.pace.Drain(ctx); err != nil {
			return 0, err
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.finish(); err != nil {
		return 0, fmt.Errorf("audio wav %s: %w", s.path, err)
	}
	return durationOf(s.n, s.rate), nil
}

func durationOf(n, rate int) time.Duration {
	if rate <= 0 {
		return 0
	}
	return time.Duration(n) * time.Second / time.Duration(rate)
}

func (s *stream) Abort() {
	if s.pace != nil {
		s.pace.Abort()
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.finish()
}
