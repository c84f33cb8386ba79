// Package command is a microphone Source that runs a program writing raw
// mono signed 16-bit little-endian PCM to its stdout: `arecord -q -r
// {rate} -c 1 -f S16_LE -t raw`, `pw-record --rate {rate} --channels 1
// --format s16 -`. It is the convention of Home Assistant's
// wyoming-satellite (--mic-command), "{rate}" in an argument replaced by
// the sample rate. Pure Go: no C library, so the cross-built chorusd
// hears.
//
// Whatever the program writes is PCM (garbage is garbage audio). A program
// that exits, or writes nothing for ReadTimeout, is an error naming it,
// with its exit status and the last line it wrote to stderr; mic.Capture
// restarts it with backoff. An odd byte is kept for the next read; one
// left at the end is dropped.
//
// # Concurrency
//
// One goroutine (mic.Capture's) calls Open, Read and Close. Open starts
// the program and one goroutine that reaps it; Close kills the program's
// process group (a `sh -c` wrapper's children too) and waits for both.
package command

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"time"

	audiocmd "github.com/chorus-robotics/chorus/drivers/audio/command"
	"github.com/chorus-robotics/chorus/drivers/internal/proc"
	"github.com/chorus-robotics/chorus/drivers/mic"
)

// DefaultReadTimeout bounds the wait for audio.
const DefaultReadTimeout = 5 * time.Second

// Source runs Command and reads the PCM it writes.
type Source struct {
	// Command is the program and its arguments; "{rate}" in an argument
	// becomes SampleRate.
	Command []string
	// SampleRate is what the program writes (default mic.DefaultRate).
	SampleRate int
	// ReadTimeout is how long the program may write nothing (default
	// DefaultReadTimeout).
	ReadTimeout time.Duration

	prog   string
	cmd    *exec.Cmd
	out    *os.File // read end of the program's stdout
	tail   *proc.Tail
	exited chan struct{} // closed when the program is reaped
	werr   error         // its exit status, read after exited is closed
	buf    []byte
	odd    []byte // a byte of a sample whose other byte has not come
}

var _ mic.Source = (*Source)(nil)

// Name implements mic.Source.
func (s *Source) Name() string { return proc.Name(s.Command) }

// Rate implements mic.Source.
func (s *Source) Rate() int { return mic.RateOr(s.SampleRate) }

// Open starts the program.
func (s *Source) Open(ctx context.Context) error {
	if err := proc.Startable(ctx, "mic command", s.Command); err != nil {
		return err
	}
	s.Close()
	argv := audiocmd.Argv(s.Command, s.Rate())
	cmd, tail, r, err := proc.StartReading("mic command", argv)
	if err != nil {
		return err
	}
	s.prog, s.cmd, s.out, s.tail, s.odd = argv[0], cmd, r, tail, s.odd[:0]
	exited := make(chan struct{})
	s.exited = exited
	go func() {
		err := cmd.Wait()
		s.werr = err
		close(exited)
	}()
	return nil
}

// Read implements mic.Source.
func (s *Source) Read(ctx context.Context, buf []int16) (int, error) {
	if s.cmd == nil {
		return 0, errors.New("mic command: not open")
	}
	if len(buf) == 0 {
		return 0, nil
	}
	if cap(s.buf) < 2*len(buf) {
		s.buf = make([]byte, 2*len(buf))
	}
	b := s.buf[:2*len(buf)]
	timeout := s.ReadTimeout
	if timeout <= 0 {
		timeout = DefaultReadTimeout
	}
	// The wake-up may run after Read returns and Close clears s.out: it
	// holds the file itself (a deadline on a closed file is an error,
	// ignored).
	out := s.out
	out.SetReadDeadline(time.Now().Add(timeout))
	stop := context.AfterFunc(ctx, func() { out.SetReadDeadline(time.Now()) })
	defer stop()
	for {
		k := copy(b, s.odd)
		n, err := out.Read(b[k:])
		n += k
		s.odd = append(s.odd[:0], b[n&^1:n]...)
		if samples := n / 2; samples > 0 {
			for i := range samples {
				buf[i] = int16(binary.LittleEndian.Uint16(b[2*i:]))
			}
			return samples, nil
		}
		switch {
		case err == nil:
			continue // one byte: wait for its other half
		case ctx.Err() != nil:
			return 0, ctx.Err()
		case errors.Is(err, os.ErrDeadlineExceeded):
			return 0, fmt.Errorf("mic command %s: no audio for %v%s", s.prog, timeout, s.tail.Suffix())
		case errors.Is(err, io.EOF):
			return 0, s.ended()
		}
		return 0, fmt.Errorf("mic command %s: read: %w", s.prog, err)
	}
}

// ended says how the program ended: its exit status once reaped, and its
// last stderr line.
func (s *Source) ended() error {
	return proc.Ended("mic command "+s.prog, s.exited, func() error { return s.werr }, s.tail)
}

// Close kills the program and its children and reaps it; idempotent.
func (s *Source) Close() error {
	if s.cmd == nil {
		return nil
	}
	proc.Reap(s.cmd, s.exited)
	s.out.Close()
	s.cmd, s.out = nil, nil
	return nil
}
