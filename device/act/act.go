// Package act is the body's side of actions (docs/actions.md):
// it answers "action" queries by running the named action on its part —
// a servo head, a face, a light, a pin, a program — after checking the
// arguments against the action's JSON Schema, and it shows the emotion of
// every utterance while it is spoken.
//
// One action runs per part at a time: a newer one replaces the older (the
// older ends early, its result says replaced). Each part has one lane,
// whatever drives it (a servo head, a face, a strip, a pin, a program):
// the newest request cancels every older one, and starts only once the
// part is free — once the action that held it has returned, however long
// its driver takes to let go. A request replaced while it waited never
// runs. An action tied to an
// utterance (ActionRequest.MessageID) starts when that utterance's first
// audio plays, so the gesture goes with the words: the speaker tells the
// body through Voice. Actions never hold speech up: they run on the query
// server's workers, beside the speaker.
package act

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/chorus-robotics/chorus/runtime/metrics"
	"github.com/chorus-robotics/chorus/runtime/protocol"
	"github.com/chorus-robotics/chorus/runtime/schema"
)

// Doer does one action with its arguments (checked against the action's
// schema already). It must end soon after ctx ends: a newer action of its
// part is waiting. Its string is the result's detail.
type Doer func(ctx context.Context, args json.RawMessage) (string, error)

// Action is one action the body can do.
type Action struct {
	Def  protocol.ActionDef
	Part string // the part it moves: actions of one part replace each other
	Do   Doer
}

// Shower shows an utterance's emotion while it is spoken: Show is called
// when its audio starts (on a part's turn, like an action), and ctx ends
// when the audio does. Nil parts show nothing.
type Shower struct {
	Part string
	Show func(ctx context.Context, e protocol.Emotion) error
}

// unnamed is the metrics label of a request whose name is not an action
// of the body: never the name itself (labels stay bounded), and never an
// action's name (those start with a letter).
const unnamed = "(unknown)"

// DefaultCueWait bounds how long an action tied to an utterance waits for
// that utterance's audio; then it runs anyway.
const DefaultCueWait = 5 * time.Second

// maxCues bounds the utterances remembered for the actions tied to them.
const maxCues = 64

// Body runs actions.
type Body struct {
	Log     *slog.Logger
	Metrics *metrics.Metrics
	CueWait time.Duration // default DefaultCueWait
	// LateAfter drops an action that comes this long after its words
	// ended (default DefaultLateAfter).
	LateAfter time.Duration
	// Emotion shows each utterance's emotion while it is spoken (the face,
	// the light); empty: none.
	Emotion []Shower

	actions map[string]*action
	defs    []protocol.ActionDef

	mu     sync.Mutex
	lanes  map[string]*lane   // each part's lane, made on its first action
	cues   map[string]*cue    // utterances by message id
	order  []string           // cues' ids, oldest first
	voice  context.CancelFunc // ends the emotion shown and Speech's context
	speech context.Context
	wg     sync.WaitGroup
	done   bool
}

type action struct {
	Action
	schema *schema.Schema
}

// lane is one part's: one action holds the part at a time, the newest
// request is the one that gets it next.
type lane struct {
	free   chan struct{} // holds a token while no action holds the part
	newest *run          // the newest request, running or waiting; under Body.mu
}

// run is one request for a part.
type run struct {
	cancel   context.CancelFunc
	replaced bool // set under Body.mu
}

// cue is an utterance's audio: started is closed when it starts.
type cue struct {
	started chan struct{}
	at      time.Time
	ended   time.Time       // when its audio ended (zero: not yet)
	parts   map[string]bool // parts whose actions wait for it: the emotion leaves them alone
}

// DefaultLateAfter is how long after its words have ended an action tied
// to them is still done: one that comes later (queued behind actions
// that hang) is dropped, not done with other words or in silence.
const DefaultLateAfter = 2 * time.Second

// New returns a Body with actions, each schema compiled; a bad one is an
// error naming the action.
func New(actions []Action) (*Body, error) {
	b := &Body{actions: map[string]*action{}, lanes: map[string]*lane{}, cues: map[string]*cue{}}
	for _, a := range actions {
		if err := a.Def.Validate(); err != nil {
			return nil, fmt.Errorf("action %q: %w", a.Def.Name, err)
		}
		s, err := schema.Compile(a.Def.Schema)
		if err != nil {
			return nil, fmt.Errorf("action %q: %w", a.Def.Name, err)
		}
		if _, dup := b.actions[a.Def.Name]; dup {
			return nil, fmt.Errorf("action %q: declared twice", a.Def.Name)
		}
		if a.Part == "" {
			a.Part = a.Def.Name
		}
		b.actions[a.Def.Name] = &action{Action: a, schema: s}
		b.defs = append(b.defs, a.Def)
	}
	if err := protocol.ValidateActionDefs(b.defs); err != nil {
		return nil, err
	}
	return b, nil
}

// Defs are the body's actions as the brain and the wire see them.
func (b *Body) Defs() []protocol.ActionDef { return slices.Clone(b.defs) }

func (b *Body) log() *slog.Logger {
	if b.Log == nil {
		return slog.New(slog.DiscardHandler)
	}
	return b.Log
}

func (b *Body) count(name, outcome string) {
	metrics.OrNew(b.Metrics).Actions.WithLabelValues(name, outcome).Inc()
}

// Handle answers an action query (a query.Handler).
func (b *Body) Handle(ctx context.Context, from string, body json.RawMessage) (any, error) {
	req, err := protocol.DecodeActionRequest(body, 0)
	if err != nil {
		b.count(unnamed, "bad_request")
		return nil, err
	}
	return b.Do(ctx, req)
}

// Do runs req: on its part, once its utterance's audio has started when
// it names one.
func (b *Body) Do(ctx context.Context, req protocol.ActionRequest) (protocol.ActionResult, error) {
	a, ok := b.actions[req.Name]
	if !ok {
		b.count(unnamed, "unknown")
		return protocol.ActionResult{}, fmt.Errorf("action: no action %q on this body (it has: %s)", clip(req.Name), strings.Join(b.names(), ", "))
	}
	args := req.Args
	if len(args) == 0 {
		args = json.RawMessage("{}")
	}
	if err := a.schema.Validate(args); err != nil {
		b.count(a.Def.Name, "bad_args")
		return protocol.ActionResult{}, fmt.Errorf("action %s: the arguments do not follow its schema: %v", a.Def.Name, err)
	}
	if req.MessageID != "" {
		if err := b.await(ctx, req.MessageID, a.Part); err != nil {
			return protocol.ActionResult{}, fmt.Errorf("action %s: %w", a.Def.Name, err)
		}
		late := b.LateAfter
		if late <= 0 {
			late = DefaultLateAfter
		}
		if ago := b.endedAgo(req.MessageID); ago > late {
			b.count(a.Def.Name, "late")
			b.log().Info("an action came after its words had ended; not done", "action", a.Def.Name, "message", req.MessageID, "ended", ago.Round(time.Millisecond))
			return protocol.ActionResult{Name: a.Def.Name, Detail: fmt.Sprintf("not done: its words ended %v before it could start", ago.Round(time.Millisecond))}, nil
		}
	}
	start := time.Now()
	detail, replaced, err := b.onPart(ctx, a.Part, func(ctx context.Context) (string, error) { return a.Do(ctx, args) })
	d := time.Since(start)
	metrics.OrNew(b.Metrics).ActionDuration.WithLabelValues(a.Def.Name).Observe(d.Seconds())
	res := protocol.ActionResult{Name: a.Def.Name, Done: err == nil && !replaced, Replaced: replaced, DurationMs: d.Milliseconds(), Detail: clipDetail(detail)}
	switch {
	case replaced:
		b.count(a.Def.Name, "replaced")
		return res, nil
	case err != nil && errors.Is(ctx.Err(), context.Canceled):
		// Shutdown (or the asker gone) cut it short: nothing to warn of.
		b.count(a.Def.Name, "failed")
		b.log().Debug("action cut short", "action", a.Def.Name, "err", err)
		return protocol.ActionResult{}, fmt.Errorf("action %s: %w", a.Def.Name, err)
	case err != nil:
		b.count(a.Def.Name, "failed")
		b.log().Warn("action failed", "action", a.Def.Name, "err", err)
		return protocol.ActionResult{}, fmt.Errorf("action %s: %w", a.Def.Name, err)
	}
	b.count(a.Def.Name, "done")
	return res, nil
}

func (b *Body) names() []string {
	out := make([]string, 0, len(b.defs))
	for _, d := range b.defs {
		out = append(out, d.Name)
	}
	return out
}

// onPart runs f as part's one action, in the part's lane: every older
// request for the part is cancelled (replaced), and f starts only once
// the part is free, that is once the action holding it has returned; f's
// context ends when a newer request comes. A request replaced before the
// part was free returns replaced without running f.
func (b *Body) onPart(ctx context.Context, part string, f func(context.Context) (string, error)) (string, bool, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	me := &run{cancel: cancel}
	b.mu.Lock()
	if b.done {
		b.mu.Unlock()
		return "", false, errors.New("the body is stopping")
	}
	ln := b.lanes[part]
	if ln == nil {
		ln = &lane{free: make(chan struct{}, 1)}
		ln.free <- struct{}{}
		b.lanes[part] = ln
	}
	if prev := ln.newest; prev != nil {
		prev.replaced = true
		prev.cancel()
	}
	ln.newest = me
	b.mu.Unlock()

	var detail string
	var err error
	select {
	case <-ln.free: // the part is ours until f returns
		if ctx.Err() == nil {
			detail, err = f(ctx)
		}
		ln.free <- struct{}{}
	case <-ctx.Done(): // replaced, or the caller gave up, before the part was free
	}
	b.mu.Lock()
	replaced := me.replaced
	if ln.newest == me {
		ln.newest = nil
	}
	b.mu.Unlock()
	if replaced {
		return detail, true, nil
	}
	if err == nil && ctx.Err() != nil {
		err = ctx.Err()
	}
	return detail, false, err
}

// await waits for the audio of utterance id to start, at most CueWait
// (then the action runs anyway) or until ctx ends.
func (b *Body) await(ctx context.Context, id, part string) error {
	c := b.cue(id)
	if c == nil {
		return nil
	}
	b.mu.Lock()
	c.parts[part] = true
	b.mu.Unlock()
	wait := b.CueWait
	if wait <= 0 {
		wait = DefaultCueWait
	}
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-c.started:
		return nil
	case <-t.C:
		b.log().Info("an action's utterance did not start in time; the action runs without it", "message", id, "waited", wait)
		return nil
	case <-ctx.Done():
		return fmt.Errorf("waiting for the audio of %s: %w", id, ctx.Err())
	}
}

// endedAgo is how long ago utterance id's audio ended (0: it has not, or
// is not known).
func (b *Body) endedAgo(id string) time.Duration {
	b.mu.Lock()
	defer b.mu.Unlock()
	if c := b.cues[id]; c != nil && !c.ended.IsZero() {
		return time.Since(c.ended)
	}
	return 0
}

// cue returns utterance id's cue, made when new (nil when stopping).
func (b *Body) cue(id string) *cue {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.done {
		return nil
	}
	if c, ok := b.cues[id]; ok {
		return c
	}
	c := &cue{started: make(chan struct{}), parts: map[string]bool{}}
	b.cues[id] = c
	b.order = append(b.order, id)
	if len(b.order) > maxCues {
		old := b.order[0]
		b.order = b.order[1:]
		if oc := b.cues[old]; oc != nil && oc.at.IsZero() {
			close(oc.started) // whoever still waits for it runs now
		}
		delete(b.cues, old)
	}
	return c
}

// Voice is the speaker telling the body about an utterance's audio: it
// started (its actions run, its emotion shows) or ended.
func (b *Body) Voice(messageID string, e protocol.Emotion, speaking bool) {
	b.mu.Lock()
	stop := b.voice
	b.voice, b.speech = nil, nil
	b.mu.Unlock()
	if stop != nil {
		stop()
	}
	if !speaking {
		b.mu.Lock()
		if c := b.cues[messageID]; c != nil && messageID != "" && c.ended.IsZero() {
			c.ended = time.Now()
		}
		b.mu.Unlock()
		return
	}
	if e == "" {
		e = protocol.EmotionNeutral
	}
	ctx, cancel := context.WithCancel(context.Background())
	b.mu.Lock()
	if b.done {
		b.mu.Unlock()
		cancel()
		return
	}
	b.voice, b.speech = cancel, ctx
	var c *cue
	if messageID != "" {
		c = b.cues[messageID]
		if c == nil {
			b.mu.Unlock()
			c = b.cue(messageID)
			b.mu.Lock()
		}
	}
	// The emotion shows on the parts no action of this utterance waits
	// for: a tool call the model made for these words wins.
	var shows []Shower
	for _, s := range b.Emotion {
		if c == nil || !c.parts[s.Part] {
			shows = append(shows, s)
		}
	}
	b.wg.Add(len(shows))
	if c != nil && c.at.IsZero() {
		c.at = time.Now()
		close(c.started)
	}
	b.mu.Unlock()
	for _, s := range shows {
		go func() {
			defer b.wg.Done()
			_, _, err := b.onPart(ctx, s.Part, func(ctx context.Context) (string, error) { return "", s.Show(ctx, e) })
			if err != nil && !errors.Is(err, context.Canceled) {
				b.log().Warn("the body could not show an emotion", "part", s.Part, "emotion", e, "err", err)
			}
		}()
	}
}

// Speech is a context that ends when the utterance playing now ends (it
// has ended already when none plays): a face's mouth moves while it
// lasts.
func (b *Body) Speech() context.Context {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.speech != nil {
		return b.speech
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	return ctx
}

// Close ends every action and waits for the emotion shows to end.
func (b *Body) Close() {
	b.mu.Lock()
	b.done = true
	for _, ln := range b.lanes {
		if ln.newest != nil {
			ln.newest.cancel()
		}
	}
	stop := b.voice
	b.voice = nil
	for _, c := range b.cues {
		if c.at.IsZero() {
			c.at = time.Now()
			close(c.started)
		}
	}
	b.mu.Unlock()
	if stop != nil {
		stop()
	}
	b.wg.Wait()
}

func clip(s string) string {
	if len(s) > 64 {
		return s[:64] + "…"
	}
	return s
}

// clipDetail keeps a detail within the wire's bound, on a rune boundary.
func clipDetail(s string) string {
	if len(s) <= protocol.MaxActionDetail {
		return s
	}
	cut := protocol.MaxActionDetail - len("…")
	for cut > 0 && !utf8RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

func utf8RuneStart(b byte) bool { return b&0xC0 != 0x80 }
