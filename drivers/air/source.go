package air

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"time"

	"github.com/chorus-robotics/chorus/drivers/mic"
)

// ReadTimeout bounds the wait for the next frame of the mix, which comes
// every FrameDuration.
const ReadTimeout = 2 * time.Second

// Source is a robot's microphone in the air: mic.Source.
type Source struct {
	// Addr is the air server's host:port.
	Addr string
	// ID is the robot's identity: it hears its own speaker at gain 1.
	ID string
	// SampleRate is the air's rate (default DefaultRate).
	SampleRate int

	c    net.Conn
	br   *bufio.Reader
	left []int16 // the rest of the last frame
}

var _ mic.Source = (*Source)(nil)

// Name implements mic.Source.
func (s *Source) Name() string { return "air:" + s.Addr }

// Rate implements mic.Source.
func (s *Source) Rate() int {
	if s.SampleRate > 0 {
		return s.SampleRate
	}
	return DefaultRate
}

// Open implements mic.Source: it connects to the air as a mic.
func (s *Source) Open(ctx context.Context) error {
	s.Close()
	c, br, err := dial(ctx, s.Addr, Hello{Role: RoleMic, ID: s.ID, Rate: s.Rate()})
	if err != nil {
		return err
	}
	s.c, s.br = c, br
	return nil
}

// Read implements mic.Source: the mix, as the air sends it in real time.
func (s *Source) Read(ctx context.Context, buf []int16) (int, error) {
	if s.c == nil {
		return 0, fmt.Errorf("air mic %s: not open", s.Addr)
	}
	if len(buf) == 0 {
		return 0, nil
	}
	for len(s.left) == 0 {
		if err := ctx.Err(); err != nil {
			return 0, err
		}
		c := s.c // the AfterFunc may run after a Close has cleared s.c
		c.SetReadDeadline(time.Now().Add(ReadTimeout))
		stop := context.AfterFunc(ctx, func() { c.SetReadDeadline(time.Now()) })
		f, err := ReadFrame(s.br, MaxPayload(s.Rate()))
		stop()
		switch {
		case err != nil && ctx.Err() != nil:
			return 0, ctx.Err()
		case errors.Is(err, os.ErrDeadlineExceeded):
			return 0, fmt.Errorf("air mic %s: no audio from the air server for %v", s.Addr, ReadTimeout)
		case err != nil:
			return 0, fmt.Errorf("air mic %s: lost the air server: %w", s.Addr, err)
		case f.Type == FrameError:
			return 0, fmt.Errorf("air mic %s: the air server closed the connection: %s", s.Addr, f.Payload)
		case f.Type != FramePCM:
			return 0, fmt.Errorf("air mic %s: %w: a mic is sent only %q and %q frames, got %q", s.Addr, ErrBadFrame, FramePCM, FrameError, f.Type)
		}
		s.left = Samples(f.Payload)
	}
	n := copy(buf, s.left)
	s.left = s.left[n:]
	return n, nil
}

// Close implements mic.Source; it is idempotent.
func (s *Source) Close() error {
	if s.c != nil {
		s.c.Close()
	}
	s.c, s.br, s.left = nil, nil, nil
	return nil
}
