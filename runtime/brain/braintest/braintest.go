// Package braintest holds fakes of brain.Brain for tests.
package braintest

import (
	"context"
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
