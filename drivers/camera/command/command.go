// Package command is a camera Source that runs a program writing an MJPEG
// stream (JPEGs back to back) to its stdout: `rpicam-vid -t 0 -n --codec
// mjpeg -o -` for a Raspberry Pi camera (which Raspberry Pi OS reaches only
// through libcamera), `ffmpeg -f v4l2 -i /dev/video0 -f mjpeg -` for a USB
// webcam. Pure Go: no C library, so the cross-built chorusd sees a camera.
//
// Frames are cut out of the stream by their JPEG markers (Split, a pure
// function) with a size cap; bytes that are not a JPEG, malformed frames
// and frames over the cap are dropped, counted (OnBad) and logged once per
// run of the program. A program that exits, or stops writing for Stall, is
// a lost camera: Read returns an error with the exit status and the last
// line the program wrote to stderr, and camera.Capture restarts it with
// backoff.
//
// # Concurrency
//
// Open starts the program and one goroutine that reads its stdout and keeps
// only the newest frame, so a slow reader never makes the program block or
// serves an old frame. Close kills the program's process group (a `sh -c`
// wrapper's children too), waits for it and for the reader: no zombie, no
// goroutine left. Open, Read and Close are called from one goroutine
// (camera.Capture's).
package command

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"image/jpeg"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"sync"
	"time"

	"github.com/chorus-robotics/chorus/drivers/camera"
	"github.com/chorus-robotics/chorus/drivers/internal/proc"
)

// Defaults.
const (
	DefaultMaxFrame   = 4 << 20
	DefaultStall      = 5 * time.Second
	DefaultFirstFrame = 15 * time.Second
	readSize          = 64 << 10
)

// Source runs Command and serves the frames it writes.
type Source struct {
	// Command is the program and its arguments; Command[0] is looked up
	// on PATH.
	Command []string
	// MaxFrame caps one JPEG in bytes (default DefaultMaxFrame).
	MaxFrame int
	// Stall is how long the program may go without a frame once it has
	// sent one (default DefaultStall); FirstFrame bounds the wait for the
	// first (default DefaultFirstFrame: rpicam-vid takes a second or two
	// to start the sensor).
	Stall, FirstFrame time.Duration
	// OnBad, if set, counts what was dropped: "not_jpeg", "malformed",
	// "too_big".
	OnBad func(kind string)
	Log   *slog.Logger

	cmd    *exec.Cmd
	out    *os.File      // read end of the program's stdout
	frames chan []byte   // the newest frame, at most one
	eof    chan struct{} // closed when the reader stops
	exited chan struct{} // closed when the program has been reaped
	errMu  sync.Mutex
	rerr   error // why the reader stopped
	werr   error // the program's exit status
	stderr *proc.Tail
	got    bool // a frame was read since Open
}

var _ camera.Source = (*Source)(nil)

// Name implements camera.Source.
func (s *Source) Name() string { return proc.Name(s.Command) }

// Open starts the program.
func (s *Source) Open(ctx context.Context) error {
	if err := proc.Startable(ctx, "camera command", s.Command); err != nil {
		return err
	}
	s.Close()
	cmd, tail, r, err := proc.StartReading("camera command", s.Command)
	if err != nil {
		return err
	}
	s.cmd, s.out, s.got, s.stderr = cmd, r, false, tail
	s.frames = make(chan []byte, 1)
	s.eof = make(chan struct{})
	s.exited = make(chan struct{})
	s.rerr, s.werr = nil, nil
	go s.wait(cmd, s.exited)
	go s.read(r, s.frames, s.eof)
	return nil
}

func (s *Source) wait(cmd *exec.Cmd, exited chan struct{}) {
	err := cmd.Wait()
	s.errMu.Lock()
	s.werr = err
	s.errMu.Unlock()
	close(exited)
}

// read splits the program's stdout into frames, keeping the newest.
func (s *Source) read(r io.Reader, frames chan []byte, eof chan struct{}) {
	defer close(eof)
	limit := s.MaxFrame
	if limit <= 0 {
		limit = DefaultMaxFrame
	}
	log := s.log()
	warned := map[error]bool{}
	buf := make([]byte, 0, 2*readSize)
	// tail: an oversize frame was dropped; the rest of it arrives as
	// bytes before the next start of an image, and is not counted again.
	tail := false
	for {
		for {
			adv, frame, err := Split(buf, limit)
			if adv == 0 {
				break
			}
			if err == ErrNotJPEG && tail {
				buf = buf[:copy(buf, buf[adv:])]
				continue
			}
			tail = err == ErrTooBig
			if err != nil {
				kind := badKind(err)
				if s.OnBad != nil {
					s.OnBad(kind)
				}
				if !warned[err] {
					warned[err] = true
					log.Warn("camera command: dropped part of the stream (said once per start)",
						"program", s.Command[0], "kind", kind, "bytes", adv, "cap", limit)
				}
			} else if frame != nil {
				s.offer(frames, bytes.Clone(frame))
			}
			buf = buf[:copy(buf, buf[adv:])]
		}
		if cap(buf)-len(buf) < readSize {
			buf = append(buf, make([]byte, readSize)...)[:len(buf)]
		}
		n, err := r.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if err != nil {
			s.errMu.Lock()
			s.rerr = err
			s.errMu.Unlock()
			return
		}
	}
}

func badKind(err error) string {
	switch err {
	case ErrTooBig:
		return "too_big"
	case ErrMalformed:
		return "malformed"
	}
	return "not_jpeg"
}

// offer replaces the frame waiting in frames, if any, with f.
func (s *Source) offer(frames chan []byte, f []byte) {
	for {
		select {
		case frames <- f:
			return
		default:
		}
		select {
		case <-frames:
		default:
		}
	}
}

// Read implements camera.Source: the newest frame the program wrote since
// the last Read, waiting for one.
func (s *Source) Read(ctx context.Context) (camera.Frame, error) {
	if s.cmd == nil {
		return camera.Frame{}, errors.New("camera command: not open")
	}
	wait := s.Stall
	if wait <= 0 {
		wait = DefaultStall
	}
	if !s.got {
		wait = s.FirstFrame
		if wait <= 0 {
			wait = DefaultFirstFrame
		}
	}
	t := time.NewTimer(wait)
	defer t.Stop()
	for {
		var data []byte
		select {
		case data = <-s.frames:
		case <-s.eof:
			select { // a last frame written before the end
			case data = <-s.frames:
			default:
				return camera.Frame{}, s.ended()
			}
		case <-t.C:
			return camera.Frame{}, fmt.Errorf("camera command %s: no frame for %v%s", s.Command[0], wait, s.stderr.Suffix())
		case <-ctx.Done():
			return camera.Frame{}, ctx.Err()
		}
		now := time.Now()
		cfg, err := jpeg.DecodeConfig(bytes.NewReader(data))
		if err != nil {
			if s.OnBad != nil {
				s.OnBad("malformed")
			}
			s.log().Debug("camera command: frame without a readable header", "program", s.Command[0], "err", err)
			continue
		}
		s.got = true
		return camera.Frame{JPEG: data, Width: cfg.Width, Height: cfg.Height, CapturedAt: now}, nil
	}
}

// ended says why the stream ended: the exit status, once the program is
// reaped, and its last stderr line.
func (s *Source) ended() error {
	return proc.Ended("camera command "+s.Command[0], s.exited, func() error {
		s.errMu.Lock()
		defer s.errMu.Unlock()
		return s.werr
	}, s.stderr)
}

// Close kills the program and its children and reaps it; idempotent.
func (s *Source) Close() error {
	if s.cmd == nil {
		return nil
	}
	proc.Reap(s.cmd, s.exited)
	s.out.Close() // unblocks the reader if a grandchild still holds the pipe
	<-s.eof
	s.cmd, s.out = nil, nil
	return nil
}

func (s *Source) log() *slog.Logger {
	if s.Log == nil {
		return slog.New(slog.DiscardHandler)
	}
	return s.Log
}
