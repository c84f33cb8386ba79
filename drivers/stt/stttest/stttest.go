// Package stttest is a fake stt.Engine for tests: it answers a configured
// transcript after a configured delay, honours ctx, and records what each
// session received. It is as unkind as a real engine: sessions run
// concurrently, Finish takes time, Abort may come at any moment (also
// during Finish), the buffer is bounded, and Start or Finish can be made
// to fail.
//
// # Usage
//
//	e := &stttest.Engine{Transcript: stt.Transcript{Text: "hello", Confidence: -1}, Delay: 200 * time.Millisecond}
//	// ... code under test uses e ...
//	s := e.Sessions()[0]
//	s.Samples(), s.Rate(), s.State()
//
// # Concurrency
//
// Engine's fields are set before use, or changed under Set; every method
// is safe for concurrent use.
package stttest

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/chorus-robotics/chorus/drivers/stt"
)

// DefaultDelay is how long Finish takes when Delay is 0: a fast real
// engine's time after the person stops.
const DefaultDelay = 200 * time.Millisecond

// DefaultMaxSamples bounds a session's buffer when MaxSamples is 0: 30 s
// at 16 kHz.
const DefaultMaxSamples = 30 * 16000

// Engine is the fake.
type Engine struct {
	mu         sync.Mutex
	Transcript stt.Transcript // what Finish answers; an empty Text answers stt.ErrEmpty
	Delay      time.Duration  // Finish's wait; default DefaultDelay, negative for none
	StartErr   error          // Start fails with it
	FinishErr  error          // Finish fails with it after Delay
	// WriteErrAfter, when above 0, makes every Write after that many fail
	// with WriteErr (a server that went away while the person spoke).
	WriteErrAfter int
	WriteErr      error
	MaxSamples    int // a session's bound; over it Finish fails with stt.ErrOverflow

	sessions []*Session
}

var _ stt.Engine = (*Engine)(nil)

// Set changes the engine's configuration under its lock, for tests that
// change it while sessions run.
func (e *Engine) Set(f func(e *Engine)) {
	e.mu.Lock()
	defer e.mu.Unlock()
	f(e)
}

// Name implements stt.Engine.
func (e *Engine) Name() string { return "fake" }

// Start implements stt.Engine.
func (e *Engine) Start(ctx context.Context, rate int) (stt.Session, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("stt fake: start: %w", err)
	}
	if err := stt.CheckRate(rate); err != nil {
		return nil, err
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.StartErr != nil {
		return nil, fmt.Errorf("stt fake: start: %w", e.StartErr)
	}
	max := e.MaxSamples
	if max <= 0 {
		max = DefaultMaxSamples
	}
	delay := e.Delay
	if delay == 0 {
		delay = DefaultDelay
	}
	s := &Session{rate: rate, max: max, delay: delay, tr: e.Transcript, err: e.FinishErr, aborted: make(chan struct{}),
		writeErrAfter: e.WriteErrAfter, writeErr: e.WriteErr}
	e.sessions = append(e.sessions, s)
	return s, nil
}

// Sessions returns every session started so far, oldest first.
func (e *Engine) Sessions() []*Session {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]*Session(nil), e.sessions...)
}

// State is where a session is.
type State string

// States.
const (
	Open     State = "open"
	Finished State = "finished" // Finish returned (with a transcript or an error)
	Aborted  State = "aborted"
)

// Session records what it received.
type Session struct {
	rate, max int
	delay     time.Duration
	tr        stt.Transcript
	err       error

	abortOnce sync.Once
	aborted   chan struct{}

	mu        sync.Mutex
	samples   []int16
	writes    int
	overflow  bool
	finishing bool
	state     State

	writeErrAfter int
	writeErr      error
}

var _ stt.Session = (*Session)(nil)

// Write implements stt.Session.
func (s *Session) Write(pcm []int16) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.state == Aborted:
		return stt.ErrAborted
	case s.finishing || s.state == Finished:
		return stt.ErrFinished
	}
	s.writes++
	if s.writeErrAfter > 0 && s.writes > s.writeErrAfter {
		return fmt.Errorf("stt fake: write: %w", s.writeErr)
	}
	if len(s.samples)+len(pcm) > s.max {
		s.overflow = true
		return nil // the real engines fail at Finish
	}
	s.samples = append(s.samples, pcm...)
	return nil
}

// Finish implements stt.Session.
func (s *Session) Finish(ctx context.Context) (stt.Transcript, error) {
	s.mu.Lock()
	switch {
	case s.state == Aborted:
		s.mu.Unlock()
		return stt.Transcript{}, stt.ErrAborted
	case s.finishing || s.state == Finished:
		s.mu.Unlock()
		return stt.Transcript{}, stt.ErrFinished
	}
	s.finishing = true
	overflow := s.overflow
	s.mu.Unlock()

	tr, err := s.wait(ctx, overflow)
	s.mu.Lock()
	if s.state != Aborted {
		s.state = Finished
	}
	s.mu.Unlock()
	return tr, err
}

func (s *Session) wait(ctx context.Context, overflow bool) (stt.Transcript, error) {
	if overflow {
		return stt.Transcript{}, fmt.Errorf("stt fake: more than %d samples: %w", s.max, stt.ErrOverflow)
	}
	if s.delay > 0 {
		t := time.NewTimer(s.delay)
		defer t.Stop()
		select {
		case <-t.C:
		case <-ctx.Done():
			return stt.Transcript{}, fmt.Errorf("stt fake: waiting for the transcript: %w", ctx.Err())
		case <-s.aborted:
			return stt.Transcript{}, stt.ErrAborted
		}
	}
	select {
	case <-s.aborted:
		return stt.Transcript{}, stt.ErrAborted
	default:
	}
	if s.err != nil {
		return stt.Transcript{}, fmt.Errorf("stt fake: %w", s.err)
	}
	if s.tr.Text == "" {
		return stt.Transcript{}, fmt.Errorf("stt fake: %w", stt.ErrEmpty)
	}
	return s.tr, nil
}

// Abort implements stt.Session.
func (s *Session) Abort() {
	s.abortOnce.Do(func() {
		s.mu.Lock()
		if s.state != Finished {
			s.state = Aborted
		}
		s.samples = nil
		s.mu.Unlock()
		close(s.aborted)
	})
}

// Rate is the rate given to Start.
func (s *Session) Rate() int { return s.rate }

// Samples is a copy of the audio received (nil once aborted).
func (s *Session) Samples() []int16 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]int16(nil), s.samples...)
}

// Writes counts the Write calls accepted.
func (s *Session) Writes() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.writes
}

// State says whether the session is open, finished or aborted.
func (s *Session) State() State {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.state == "" {
		return Open
	}
	return s.state
}
