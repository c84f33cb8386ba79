// A thought heard as the model writes it (issue 28): the vote leaves when
// its fields are complete, the draft's sentences as each one ends.

package llm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"unicode/utf8"

	"github.com/chorus-robotics/chorus/runtime/brain"
	"github.com/chorus-robotics/chorus/runtime/metrics"
	"github.com/chorus-robotics/chorus/runtime/protocol"
	"github.com/chorus-robotics/chorus/runtime/sentence"
	"github.com/chorus-robotics/chorus/runtime/tool"
)

var _ brain.Streamer = (*Brain)(nil)

// errBound is why a stream is closed once its draft passes
// brain.max_utterance: a model that writes on and on is cut at the bound.
// errBroken, once a vote field is written with a value the answer cannot
// have: the think fails then, not when the model has written the rest.
var (
	errBound  = errors.New("llm: the draft reached brain.max_utterance")
	errBroken = errors.New("llm: bad state answer: a vote field has a value out of range or of the wrong type")
)

// ThinkStream implements brain.Streamer: Think's one call, read as it
// streams. h.Vote hears the State's fields once they are complete and
// valid; h.Said the draft's complete sentences, bounded by MaxUtterance
// (past it the stream is closed and the draft is what fit). After the
// vote was heard, a stream that fails mid-draft is not an error: its
// Thought is the vote with the sentences complete so far, marked Cut (a
// listen vote needs no draft). Before the vote, a failure is an error, as
// Think's.
func (b *Brain) ThinkStream(ctx context.Context, in brain.Input, h brain.Heard) (brain.Thought, error) {
	sctx, stop := context.WithCancelCause(ctx)
	defer stop(nil)
	r := &ran{voting: true}
	l := &listener{h: h, draft: b.Draft, max: b.maxUtterance(), stop: stop, ran: r,
		// A model offered a tool that acts may call it after writing its
		// draft, in the same answer: none of the draft is said before the
		// answer is whole (the words may be the tool's to write).
		hold: slices.ContainsFunc(in.Tools, func(t tool.Tool) bool { return t.Kind == tool.Acts && t.Call != nil })}
	var listen func() func(string)
	if (h.Vote != nil || h.Said != nil) && !in.Card.Events.Executes() {
		// A card whose conditions run tools is heard whole: which holds,
		// and so whether the words wait for the tools, is known at the end.
		listen = l.round
	}
	req, tools := b.stateRequest(in)
	resp, err := b.run(sctx, in, req, tools, listen, r)
	acts := r.acts
	if err == nil {
		var t brain.Thought
		var raw json.RawMessage
		if t, raw, err = parseState(resp.Text, b.Draft); err == nil {
			var calls []tool.Call
			t.Events, t.Instruction, calls = b.events(in, raw)
			u := b.bound(brain.Utterance{Text: t.Draft, Emotion: t.Emotion, To: t.To}, in)
			t.Draft, t.To = u.Text, u.To
			if l.voted { // the vote the room has is the one that stands
				t.State, t.Importance, t.Selected, t.Closing = l.vote.State, l.vote.Importance, l.vote.Selected, l.vote.Closing
			}
			if t.State == protocol.Speak {
				t.Actions = acts
			}
			if t.State == protocol.Speak && len(r.deferred)+len(calls) > 0 {
				// The words come from the tools' results, once granted.
				t.Deferred, t.Draft, t.Emotion, t.To, t.Actions = append(r.deferred, calls...), "", protocol.EmotionNeutral, nil, nil
			}
			return t, nil
		}
	}
	if l.broken != "" {
		return brain.Thought{}, fmt.Errorf("%w: %s (the stream was closed there)", errBroken, l.broken)
	}
	t, err := b.heardThought(l, err)
	if err == nil && t.State == protocol.Speak && len(r.deferred) > 0 {
		t.Deferred, t.Draft, t.Cut = r.deferred, "", false
	}
	if err == nil { // the events were not heard: what is known decides
		t.Events, t.Instruction, _ = b.events(in, nil)
	}
	return t, err
}

// events are a state answer's events (raw, as the model wrote them)
// checked against the card's params — what does not fit is dropped and
// counted (chorus_brain_failures_total{reason="bad_events"}), never
// failing the turn — merged with the values the runtime knows (which
// win), and the instruction and the tool calls their conditions choose
// (brain.Events).
func (b *Brain) events(in brain.Input, raw json.RawMessage) (map[string]any, string, []tool.Call) {
	e := in.Card.Events
	var model map[string]any
	bad := 0
	if len(raw) > 0 && string(raw) != "null" {
		switch err := json.Unmarshal(raw, &model); {
		case !e.Has():
			bad, model = 1, nil
		case err != nil:
			bad, model = 1, nil
		default:
			model, bad = e.Check(model)
		}
	}
	if bad > 0 {
		metrics.OrNew(b.Metrics).BrainFailures.WithLabelValues("bad_events").Add(float64(bad))
		b.log().Info("the model's events do not fit the card's params; dropped", "dropped", bad)
	}
	values := brain.Merge(model, in.Events)
	if len(e.Conditions) == 0 {
		return values, "", nil
	}
	i := e.Fired(values)
	if i < 0 {
		b.log().Debug("card events: no condition holds", "model", model, "known", in.Events)
		return values, "", nil
	}
	c := e.Conditions[i]
	b.log().Debug("card events: a condition holds", "condition", i, "expression", c.Expression, "model", model, "known", in.Events)
	return values, c.Instruction, c.Calls(values)
}

// heardThought is the Thought of a stream that failed (err): what was
// heard of it, when that is a vote and what it needs.
func (b *Brain) heardThought(l *listener, err error) (brain.Thought, error) {
	t := l.vote
	t.Draft, t.Emotion = l.said, l.emotion
	if t.Emotion == "" {
		t.Emotion = protocol.EmotionNeutral
	}
	switch {
	case !l.voted:
		return brain.Thought{}, err
	case l.bounded:
		metrics.OrNew(b.Metrics).Clipped.Inc()
		b.log().Info("the model's draft was longer than brain.max_utterance; its stream was closed at a sentence boundary",
			"max", l.max, "kept", utf8.RuneCountInString(t.Draft))
		return t, nil
	case t.State == protocol.Listen:
		t.Draft, t.Emotion = "", protocol.EmotionNeutral
		return t, nil
	case t.Draft == "":
		return brain.Thought{}, fmt.Errorf("llm: the answer stopped before the draft's first sentence ended: %w", err)
	}
	t.Cut = true
	metrics.OrNew(b.Metrics).BrainFailures.WithLabelValues("cut").Inc()
	b.log().Warn("the model's answer stopped mid-draft; the companion says what was complete and no more",
		"kept", utf8.RuneCountInString(t.Draft), "err", err)
	return t, nil
}

// listener reads a state answer's rounds as they stream and tells h.
type listener struct {
	h     brain.Heard
	draft bool
	max   int
	stop  context.CancelCauseFunc
	ran   *ran // the tools the rounds so far asked for
	hold  bool // say no sentence as it is written (tools that act are offered)

	p       *Partial
	voted   bool
	vote    brain.Thought
	said    string
	emotion protocol.Emotion
	bounded bool
	broken  string // the vote field written broken
}

// round starts reading a new round's answer (a tool round's text is not
// the answer's).
func (l *listener) round() func(string) {
	l.p = NewPartial(l.draft)
	return l.piece
}

func (l *listener) piece(s string) {
	if l.bounded || l.broken != "" {
		return
	}
	l.p.Add(s)
	if !l.voted {
		v, ok := l.p.Vote()
		if !ok {
			if l.broken = l.p.Broken(); l.broken != "" {
				l.stop(errBroken)
			}
			return
		}
		v.Deferred = slices.Clone(l.ran.deferred)
		l.voted, l.vote = true, v
		if l.h.Vote != nil {
			l.h.Vote(v)
		}
	}
	if !l.draft || l.hold || l.vote.State != protocol.Speak || len(l.vote.Deferred) > 0 {
		return // no draft, or one written before the tools it needs have run
	}
	text, e, _ := l.p.Said()
	if utf8.RuneCountInString(text) > l.max {
		text, _ = sentence.Clip(text, l.max)
		l.bounded = true
		l.stop(errBound)
	}
	if text == "" || (text == l.said && e == l.emotion) {
		return
	}
	l.said, l.emotion = text, e
	if l.h.Said != nil {
		l.h.Said(text, e)
	}
}
