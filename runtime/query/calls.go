package query

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/chorus-robotics/chorus/runtime/metrics"
	"github.com/chorus-robotics/chorus/runtime/protocol"
)

// Asker sends a query to a device and waits for its result: a *Client, or
// whatever a test puts in its place. Call asks any query Type over any
// Asker.
type Asker interface {
	Ask(ctx context.Context, device, typ string, body any, timeout time.Duration, opts ...CallOption) (json.RawMessage, error)
}

var _ Asker = (*Client)(nil)

// CallOption changes one Ask.
type CallOption func(*callOptions)

type callOptions struct {
	cancelOnGiveUp bool
}

// CancelOnGiveUp makes the client send query.cancel for the query when it
// stops waiting for it (its timeout, or its context's end): the device stops
// what nobody wants any more (a speak cut off by a user's barge-in).
func CancelOnGiveUp() CallOption { return func(o *callOptions) { o.cancelOnGiveUp = true } }

// ErrBadResult wraps a result body that does not decode as its type's
// result: the device answered, success, but with something else.
var ErrBadResult = errors.New("query: result body is not what its type answers")

func badResult(device, typ string, err error) error {
	return fmt.Errorf("%w: %s from %s: %w", ErrBadResult, typ, device, err)
}

// Type is a query type as a caller asks it: its name, its result's
// decoder, its default timeout, whether a call given up is cancelled on
// the device, and what of a result is a refusal. A new query type is one
// declaration; Call asks any of them.
type Type[Req, Res any] struct {
	Name    string
	Decode  func([]byte, int) (Res, error)
	Timeout time.Duration // a call's timeout 0: this; 0 here too: the Asker's own
	Cancel  bool          // a call given up (its timeout, its context's end) is cancelled on the device
	// Refused is why a result is a refusal ("" when it is not): the
	// device answered, and said no.
	Refused func(Res) string
	// Silent is what a person is told when the device did not answer in
	// time ("" : the client's error alone).
	Silent string
}

// The query types (docs/protocol.md, "Query types").
var (
	// Speak says the words and answers when their audio has drained.
	Speak = Type[protocol.SpeakRequest, protocol.SpeakResult]{Name: protocol.TypeSpeak, Decode: protocol.DecodeSpeakResult, Cancel: true}
	// SpeakStart starts the speak held with a token (Started: one was).
	SpeakStart = Type[protocol.SpeakStart, protocol.SpeakStartResult]{Name: protocol.TypeSpeakStart, Decode: protocol.DecodeSpeakStartResult}
	// SpeakMore appends words to a speak still being said (Appended:
	// taken); only a device that serves speak.more is sent it.
	SpeakMore = Type[protocol.SpeakMore, protocol.SpeakMoreResult]{Name: protocol.TypeSpeakMore, Decode: protocol.DecodeSpeakMoreResult}
	// SpeakStop stops what is said, after the sentence or at once
	// (Stopped: something was).
	SpeakStop = Type[protocol.SpeakStop, protocol.SpeakStopResult]{Name: protocol.TypeSpeakStop, Decode: protocol.DecodeSpeakStopResult}
	// Vision is the newest frame of the device's camera.
	Vision = Type[protocol.VisionRequest, protocol.VisionResult]{Name: protocol.TypeVision, Decode: protocol.DecodeVisionResult, Timeout: LookTimeout}
	// Phase opens or ends a realtime phase on the device of the room's
	// active floor, and answers what the floor did.
	Phase = Type[protocol.PhaseCommand, protocol.PhaseCommand]{Name: protocol.TypePhase, Decode: protocol.DecodePhaseCommand}
	// Action does one of the body's actions (docs/actions.md) and answers
	// at its end.
	Action = Type[protocol.ActionRequest, protocol.ActionResult]{Name: protocol.TypeAction, Decode: protocol.DecodeActionResult, Timeout: ActionTimeout, Cancel: true}
	// Knowledge answers a knowledge tool the body declared.
	Knowledge = Type[protocol.KnowledgeRequest, protocol.KnowledgeResult]{Name: protocol.TypeKnowledge, Decode: protocol.DecodeKnowledgeResult, Cancel: true}
	// Memory asks about the companion's memory: ask it through a Private
	// client, whose answers only its identity reads (the device takes the
	// request as that identity's). An answer with Error is a refusal.
	Memory = Type[protocol.MemoryRequest, protocol.MemoryAnswer]{Name: protocol.TypeMemory, Timeout: MemoryTimeout,
		Decode: func(b []byte, _ int) (protocol.MemoryAnswer, error) {
			return protocol.DecodeMemoryAnswer(b, protocol.MaxMemoryFacts*1024)
		},
		Refused: func(a protocol.MemoryAnswer) string { return a.Error },
		Silent:  "is it online, with memory on?"}
)

// Bounds of the calls that have their own (Type.Timeout).
const (
	LookTimeout   = 10 * time.Second // one look through a device's camera
	ActionTimeout = 30 * time.Second // one action: a gesture, a light, a short program
	MemoryTimeout = 10 * time.Second // one memory request
)

// Call asks device the query t with r and decodes its result: the one
// typed call every query type goes through. r is checked first when it
// has a Validate method (an error naming the type and the device); a
// result that does not decode returns the zero Res and an error wrapping
// ErrBadResult; a refusal (t.Refused) is an error naming the device, with
// the result. timeout 0 means t's, then the Asker's own.
func Call[Req, Res any](ctx context.Context, a Asker, device string, t Type[Req, Res], r Req, timeout time.Duration) (Res, error) {
	var zero Res
	if v, ok := any(r).(interface{ Validate() error }); ok {
		if err := v.Validate(); err != nil {
			return zero, fmt.Errorf("query: %s to %s: %w", t.Name, device, err)
		}
	}
	if timeout <= 0 {
		timeout = t.Timeout
	}
	var opts []CallOption
	if t.Cancel {
		opts = append(opts, CancelOnGiveUp())
	}
	raw, err := a.Ask(ctx, device, t.Name, r, timeout, opts...)
	if errors.Is(err, ErrTimeout) && t.Silent != "" {
		return zero, fmt.Errorf("%s of %s: no answer within %v (%s): %w", t.Name, device, timeout, t.Silent, err)
	}
	if err != nil {
		return zero, err
	}
	res, err := t.Decode(raw, 0)
	if err != nil {
		return zero, badResult(device, t.Name, err)
	}
	if t.Refused != nil {
		if why := t.Refused(res); why != "" {
			return res, fmt.Errorf("%s of %s: %s", t.Name, device, why)
		}
	}
	return res, nil
}

// Acts asks device for each of acts, the actions that go with the words
// msgID (which ties them to the words' first audio): each on its own
// goroutine counted in wg, so its owner waits for it and no caller waits
// on the network. A failure is counted in m and logged on log.
func Acts(ctx context.Context, wg *sync.WaitGroup, a Asker, device, msgID string, acts []protocol.ActionRequest, timeout time.Duration,
	m *metrics.Metrics, log *slog.Logger) {
	for _, r := range acts {
		r.MessageID = msgID
		wg.Add(1)
		go func() {
			defer wg.Done()
			res, err := Call(ctx, a, device, Action, r, timeout)
			if err != nil {
				m.QueryErrors.WithLabelValues(protocol.TypeAction, "failed").Inc()
				level := slog.LevelWarn
				if ctx.Err() != nil {
					level = slog.LevelDebug // shutdown, or the turn was cut: not the body's fault
				}
				// "body", not "device": the asker's logger names its own device.
				log.Log(ctx, level, "the body did not do an action", "action", r.Name, "body", device, "err", err)
				return
			}
			log.Debug("action done", "action", r.Name, "done", res.Done, "replaced", res.Replaced, "ms", res.DurationMs, "detail", res.Detail)
		}()
	}
}
