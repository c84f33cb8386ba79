// Package braintest holds fakes of brain.Brain for tests.
package braintest

import (
	"context"
	"errors"
	"strings"
	"sync"

	"github.com/chorus-robotics/chorus/runtime/brain"
)

// Func is a Brain made of two functions; a nil function fails the call.
type Func struct {
	ThinkFn func(ctx context.Context, in brain.Input) (brain.Thought, error)
	UtterFn func(ctx context.Context, in brain.Input) (brain.Utterance, error)

	mu     sync.Mutex
	thinks int
	utters int
}

var _ brain.Brain = (*Func)(nil)

func (f *Func) Think(ctx context.Context, in brain.Input) (brain.Thought, error) {
	f.mu.Lock()
	f.thinks++
	f.mu.Unlock()
	return f.ThinkFn(ctx, in)
}

func (f *Func) Utter(ctx context.Context, in brain.Input) (brain.Utterance, error) {
	f.mu.Lock()
	f.utters++
	f.mu.Unlock()
	return f.UtterFn(ctx, in)
}

// Calls reports how often Think and Utter were called.
func (f *Func) Calls() (thinks, utters int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.thinks, f.utters
}

// Stream is a brain.Streamer that writes its Thought as a model streams
// one: the vote, then the draft's Sentences one by one, then the end —
// the emotion with it, as a model writes it after the words (issue 40).
// Before each sentence after the first, and before the end, it waits for
// a value on Gate (nil: it never waits), so a test sees what a companion
// does while the draft is still being written. Think, the path of a
// brain that does not stream, waits for every gate and returns the whole.
type Stream struct {
	Thought   brain.Thought // its Draft is ignored: the Sentences are the draft
	Sentences []string
	// CutAfter > 0 stops the answer after that many sentences: the
	// Thought is what was complete, marked Cut (as runtime/brain/llm's).
	CutAfter int
	// FailAfterVote stops the answer before its first sentence: an error
	// after the vote was heard.
	FailAfterVote bool
	Gate          chan struct{}
	// Cancelled, when set, is closed the first time a think is cancelled
	// while it waits at the Gate (its model request would be closed).
	Cancelled chan struct{}
	once      sync.Once
}

var _ brain.Streamer = (*Stream)(nil)

func (s *Stream) wait(ctx context.Context) error {
	if s.Gate == nil {
		return nil
	}
	select {
	case <-s.Gate:
		return nil
	case <-ctx.Done():
		if s.Cancelled != nil {
			s.once.Do(func() { close(s.Cancelled) })
		}
		return ctx.Err()
	}
}

// ThinkStream implements brain.Streamer.
func (s *Stream) ThinkStream(ctx context.Context, in brain.Input, h brain.Heard) (brain.Thought, error) {
	t := s.Thought
	if h.Vote != nil {
		h.Vote(t.Vote())
	}
	if s.FailAfterVote {
		return brain.Thought{}, errors.New("braintest: the stream stopped before the draft")
	}
	said := ""
	for i, sentence := range s.Sentences {
		if i > 0 {
			if err := s.wait(ctx); err != nil {
				return brain.Thought{}, err
			}
		}
		if s.CutAfter > 0 && i == s.CutAfter {
			t.Draft, t.Cut = said, true
			return t, nil
		}
		said = strings.TrimSpace(said + " " + sentence)
		if h.Said != nil {
			h.Said(said, "") // the emotion is written after the words
		}
	}
	if err := s.wait(ctx); err != nil {
		return brain.Thought{}, err
	}
	t.Draft = said
	return t, nil
}

// Think implements brain.Brain: the whole thought, once it is written.
func (s *Stream) Think(ctx context.Context, in brain.Input) (brain.Thought, error) {
	return s.ThinkStream(ctx, in, brain.Heard{})
}

// Utter implements brain.Brain; the one-call path never asks it.
func (s *Stream) Utter(context.Context, brain.Input) (brain.Utterance, error) {
	return brain.Utterance{}, errors.New("braintest: Stream has no second call")
}
