package tool

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"
)

// Bounds of a registry.
const (
	MaxTools = 512 // tools a registry lists; the rest are left out
	maxTold  = 1024
)

// Reserved names no registration may take: speak is the brain's own.
var Reserved = []string{"speak"}

// ErrUnknown is a call of a tool the registry does not have (for its use).
var ErrUnknown = errors.New("tool: no such tool")

// Registry is a robot's tools: fixed ones (Add) and lists that change
// (Source: the body's actions and declared knowledge, an MCP server's
// tools), fixed ones first, each in the order registered. For each use
// (Tools), a name is one tool's, whatever its case: the first tool of
// that use keeps it, a later one is left out and told to Clash once per
// name and source. (An agents' camera, look, does not hide a body action
// look from the model.)
//
// # Concurrency
//
// Safe for concurrent use. A source is called on each Tools, so it must
// be quick and must not block (a list held in memory).
type Registry struct {
	// Clash hears a tool left out: its name taken, or not a valid name;
	// nil hears nothing.
	Clash func(name, source, why string)

	mu      sync.Mutex
	fixed   []Tool
	sources []func() []Tool
	told    map[string]bool
}

// Add registers t. A bad name, a taken or reserved one, or a tool that
// is run with no Call is an error naming it.
func (r *Registry) Add(t Tool) error {
	if err := check(t); err != nil {
		return err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, f := range r.fixed {
		if strings.EqualFold(f.Name, t.Name) {
			return fmt.Errorf("tool %s: the name is taken", t.Name)
		}
	}
	r.fixed = append(r.fixed, t)
	return nil
}

// Source registers a list of tools that changes (read again at each
// Tools), after what is registered so far.
func (r *Registry) Source(list func() []Tool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.sources = append(r.sources, list)
}

func check(t Tool) error {
	switch {
	case !ValidName(t.Name):
		return fmt.Errorf("tool %q: not a tool name (letters, digits, _ and -, up to 64)", t.Name)
	case isReserved(t.Name):
		return fmt.Errorf("tool %s: the name is reserved", t.Name)
	case t.Kind != WithWords && t.Call == nil:
		return fmt.Errorf("tool %s: nothing runs it", t.Name)
	}
	return nil
}

func isReserved(name string) bool {
	for _, n := range Reserved {
		if strings.EqualFold(n, name) {
			return true
		}
	}
	return false
}

// Tools are the registry's tools that u may call, at most MaxTools.
func (r *Registry) Tools(u Use) []Tool {
	if r == nil {
		return nil
	}
	r.mu.Lock()
	fixed, sources := r.fixed, r.sources
	r.mu.Unlock()
	var out []Tool
	taken := map[string]bool{}
	take := func(t Tool) {
		key := strings.ToLower(t.Name)
		switch {
		case !t.For(u):
		case taken[key]:
			r.tell(t, "its name is another tool's")
		case len(out) >= MaxTools:
			r.tell(t, fmt.Sprintf("more than %d tools", MaxTools))
		default:
			taken[key] = true
			out = append(out, t)
		}
	}
	for _, t := range fixed {
		take(t)
	}
	for _, list := range sources {
		for _, t := range list() {
			if err := check(t); err != nil {
				r.tell(t, err.Error())
				continue
			}
			take(t)
		}
	}
	return out
}

// tell says once per name and source why t was left out; past maxTold
// names it says no more (a source of thousands of bad tools is not a log
// line per listing).
func (r *Registry) tell(t Tool, why string) {
	if r.Clash == nil {
		return
	}
	key := t.Source + "\x00" + t.Name
	r.mu.Lock()
	say := !r.told[key] && len(r.told) < maxTold
	if say {
		if r.told == nil {
			r.told = map[string]bool{}
		}
		r.told[key] = true
	}
	r.mu.Unlock()
	if say {
		r.Clash(t.Name, t.Source, why)
	}
}

// Run runs c with the tool of its name that u may call (Run).
func (r *Registry) Run(ctx context.Context, u Use, c Call, def time.Duration) (Result, error) {
	t, ok := Find(r.Tools(u), c.Name)
	if !ok {
		return Result{}, fmt.Errorf("%w: %q", ErrUnknown, c.Name)
	}
	return Run(ctx, t, c, def)
}

// Run runs c with t, bounded by t's timeout (def when it has none; no
// bound of its own when both are 0: ctx's).
func Run(ctx context.Context, t Tool, c Call, def time.Duration) (Result, error) {
	if t.Call == nil {
		return Result{}, fmt.Errorf("tool %s: nothing runs it here (the body does it with the words)", t.Name)
	}
	timeout := t.Timeout
	if timeout <= 0 {
		timeout = def
	}
	if timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}
	return t.Call(ctx, c)
}
