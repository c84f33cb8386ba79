// Package command is an audio Output that pipes each utterance, as raw
// mono signed 16-bit little-endian PCM, to the stdin of a program that
// plays it: `aplay -q -t raw -f S16_LE -r {rate} -c 1`, `pw-play`,
// `paplay`. It is the convention of Home Assistant's wyoming-satellite
// (--snd-command): one program run per utterance, "{rate}" in an argument
// replaced by the sample rate. Pure Go: no C library, so the cross-built
// chorusd has a speaker.
//
// The speak semantics are the other outputs' (drivers/audio): the start
// is when the program has taken the first audio; Drain closes the
// program's stdin and returns when it has exited (aplay exits once the
// sound card has played everything) and, in any case, not before the
// audio's duration has passed since the start, so a program that only
// stores the audio (`sh -c 'cat > FILE'`) still takes as long as the
// utterance. As on a sound card, a Write waits while more than 100 ms of
// audio is queued ahead of the clock (audio.Pacer), into a pipe grown to
// hold a long sentence: the first sentence is handed over at once, and a
// stop after the current sentence leaves no other one in the pipe. Abort
// kills the program: the speaker is silent at once. A program that exits
// mid-utterance (before its input ended, or leaving audio unread whatever
// its exit status), stops taking audio, or is missing is
// an error naming it, with the last line it wrote to stderr.
//
// # Concurrency
//
// One Stream is used by one goroutine (device/speak's); Close may be
// called from any goroutine and kills what plays.
package command

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/chorus-robotics/chorus/drivers/audio"
	"github.com/chorus-robotics/chorus/drivers/internal/proc"
)

// Defaults.
const (
	pipeSize = 1 << 20

	// DefaultMargin is how long past the audio's own duration a program
	// may take to take a chunk or to finish (a sound card's buffer, a
	// PipeWire stream starting).
	DefaultMargin = 5 * time.Second
)

// Output runs Command for each utterance.
type Output struct {
	// Command is the program and its arguments; "{rate}" in an argument
	// becomes the sample rate.
	Command []string
	// Rate, when set, is the rate the program is given: audio at another
	// rate is resampled, and the program starts at Begin, while the first
	// sentence is still being synthesized. 0 gives the program the rate
	// of the first chunk, and starts it then.
	Rate int
	// Margin is DefaultMargin when 0.
	Margin time.Duration

	mu     sync.Mutex
	active map[*stream]struct{}
	closed bool
}

var _ audio.Output = (*Output)(nil)

// Argv is Command with "{rate}" replaced by rate.
func Argv(command []string, rate int) []string {
	out := make([]string, len(command))
	for i, a := range command {
		out[i] = strings.ReplaceAll(a, "{rate}", strconv.Itoa(rate))
	}
	return out
}

// Begin implements audio.Output.
func (o *Output) Begin(ctx context.Context, name string) (audio.Stream, error) {
	if len(o.Command) == 0 || o.Command[0] == "" {
		return nil, errors.New("audio command: no program given")
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s := &stream{o: o}
	o.mu.Lock()
	if o.closed {
		o.mu.Unlock()
		return nil, errors.New("audio command: output closed")
	}
	if o.active == nil {
		o.active = map[*stream]struct{}{}
	}
	o.active[s] = struct{}{}
	o.mu.Unlock()
	if o.Rate > 0 {
		if err := s.start(o.Rate); err != nil {
			s.Abort()
			return nil, err
		}
	}
	return s, nil
}

// Close kills what plays; it is idempotent.
func (o *Output) Close() error {
	o.mu.Lock()
	o.closed = true
	streams := make([]*stream, 0, len(o.active))
	for s := range o.active {
		streams = append(streams, s)
	}
	o.mu.Unlock()
	for _, s := range streams {
		s.Abort()
	}
	return nil
}

func (o *Output) margin() time.Duration {
	if o.Margin > 0 {
		return o.Margin
	}
	return DefaultMargin
}

type stream struct {
	o      *Output
	prog   string
	cmd    *exec.Cmd
	in     *os.File // the program's stdin
	tail   *proc.Tail
	exited chan struct{} // closed when the program is reaped
	werr   error         // its exit status, once exited
	left   int           // bytes it left in its stdin when it exited, once exited

	rate int
	pace audio.Pacer // the audio's clock: how much is queued ahead of it

	mu   sync.Mutex
	done bool
}

// ErrEnded is returned by a write after Drain or Abort.
var ErrEnded = errors.New("audio command: utterance already ended")

func (s *stream) start(rate int) error {
	argv := Argv(s.o.Command, rate)
	s.prog = argv[0]
	r, w, err := os.Pipe()
	if err != nil {
		return fmt.Errorf("audio command: %w", err)
	}
	cmd, tail := proc.Command(argv)
	cmd.Stdin = r
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.done {
		r.Close()
		w.Close()
		return ErrEnded
	}
	if err := cmd.Start(); err != nil {
		r.Close()
		w.Close()
		return fmt.Errorf("audio command: start %s: %w", s.prog, err)
	}
	// The read end stays open here until the program is reaped, to count
	// what it left unread; then it is closed, so a write to a gone
	// program is a broken pipe.
	// A pipe that holds a long sentence: the first Write returns at once
	// (the start is real), and the pacer, not the pipe, keeps the rest
	// from running ahead.
	proc.GrowPipe(w, pipeSize)
	s.cmd, s.in, s.tail, s.rate = cmd, w, tail, rate
	s.exited = make(chan struct{})
	go func() {
		err := cmd.Wait()
		s.werr = err // read only after exited is closed
		s.left, _ = proc.Unread(r)
		r.Close()
		close(s.exited)
	}()
	return nil
}

func (s *stream) Write(ctx context.Context, c audio.PCM) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.mu.Lock()
	done, started := s.done, s.cmd != nil
	s.mu.Unlock()
	if done {
		return ErrEnded
	}
	if !started {
		if c.Rate <= 0 {
			return fmt.Errorf("audio command: a chunk without a sample rate")
		}
		if err := s.start(c.Rate); err != nil {
			return err
		}
	}
	c = audio.Resample(c, s.rate)
	if len(c.Samples) == 0 {
		return nil
	}
	b := make([]byte, 2*len(c.Samples))
	for i, x := range c.Samples {
		binary.LittleEndian.PutUint16(b[2*i:], uint16(x))
	}
	// As a sound card: wait while more than the pacer's buffer of
	// audio is queued ahead of the clock, so a stop after this sentence
	// leaves no other sentence in the pipe.
	if err := s.pace.Write(ctx, c.Duration()); err != nil {
		return err
	}
	// A program that stops taking audio is an error after the chunk's
	// own duration and the margin, not a hang; ctx ends the wait too.
	limit := c.Duration() + s.o.margin()
	s.in.SetWriteDeadline(time.Now().Add(limit))
	stop := context.AfterFunc(ctx, func() { s.in.SetWriteDeadline(time.Now()) })
	n, err := s.in.Write(b)
	stop()
	if err == nil {
		return nil
	}
	// What the program did not take was not played.
	s.pace.Abort()
	if n < len(b) && ctx.Err() != nil {
		return ctx.Err()
	}
	if errors.Is(err, os.ErrDeadlineExceeded) {
		return fmt.Errorf("audio command %s: took no audio for %v%s", s.prog, limit, s.tail.Suffix())
	}
	// The program is gone (a broken pipe): say how it ended.
	return fmt.Errorf("audio command %s: exited mid-utterance: %w", s.prog, s.exitErr(time.Second))
}

// exitErr waits up to d for the program to be reaped and describes how
// it ended.
func (s *stream) exitErr(d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-s.exited:
	default:
		select {
		case <-s.exited:
		case <-t.C:
			return fmt.Errorf("closed its input and runs on%s", s.tail.Suffix())
		}
	}
	if s.werr == nil {
		return fmt.Errorf("exit status 0%s", s.tail.Suffix())
	}
	return fmt.Errorf("%w%s", s.werr, s.tail.Suffix())
}

// Drain ends the input and waits until the program has played it all
// and the audio's duration has passed.
func (s *stream) Drain(ctx context.Context) (time.Duration, error) {
	s.mu.Lock()
	if s.done {
		s.mu.Unlock()
		return 0, ErrEnded
	}
	started := s.cmd != nil
	if !started {
		s.done = true
	}
	s.mu.Unlock()
	if !started { // nothing was written: nothing to play
		s.finish()
		return 0, nil
	}
	early := false // the program ended before its input did
	select {
	case <-s.exited:
		early = true
	default:
	}
	s.in.Close() // EOF: the program plays what it has and exits
	t := time.NewTimer(s.pace.Remaining() + s.o.margin())
	defer t.Stop()
	select {
	case <-s.exited:
	case <-ctx.Done():
		s.Abort()
		return 0, ctx.Err()
	case <-t.C:
		s.Abort()
		return 0, fmt.Errorf("audio command %s: still playing %v after the end of the audio%s", s.prog, s.o.margin(), s.tail.Suffix())
	}
	s.mu.Lock()
	s.done = true
	s.mu.Unlock()
	s.finish()
	switch {
	case early:
		return 0, fmt.Errorf("audio command %s: exited mid-utterance: %w", s.prog, s.exitErr(0))
	case s.werr != nil:
		return 0, fmt.Errorf("audio command %s: %w%s", s.prog, s.werr, s.tail.Suffix())
	case s.left > 0:
		// It exited without reading to the end: what it left was not
		// played, whatever its exit status.
		return 0, fmt.Errorf("audio command %s: exited mid-utterance: %w, leaving %v of the audio unread",
			s.prog, s.exitErr(0), (time.Duration(s.left/2) * time.Second / time.Duration(s.rate)).Round(time.Millisecond))
	}
	// A program that only stores the audio is done early: the utterance
	// still takes as long as it plays.
	return s.pace.Drain(ctx)
}

// Abort kills the program at once and reaps it; idempotent.
func (s *stream) Abort() {
	s.mu.Lock()
	s.done = true
	cmd := s.cmd
	s.mu.Unlock()
	s.pace.Abort()
	if cmd != nil {
		proc.Reap(cmd, s.exited)
		s.in.Close()
	}
	s.finish()
}

// finish forgets the stream in its Output.
func (s *stream) finish() {
	s.o.mu.Lock()
	delete(s.o.active, s)
	s.o.mu.Unlock()
}
