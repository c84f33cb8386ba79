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
// whatever a test puts in its place. The typed calls (Speak, SpeakStart,
// SpeakStop, Look, Phase) work over any Asker.
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

// LookTimeout bounds one look through a device's camera (Look's timeout 0).
const LookTimeout = 10 * time.Second

// ErrBadResult wraps a result body that does not decode as its type's
// result: the device answered, success, but with something else.
var ErrBadResult = errors.New("query: result body is not what its type answers")

func badResult(device, typ string, err error) error {
	return fmt.Errorf("%w: %s from %s: %w", ErrBadResult, typ, device, err)
}

// Call asks device the query typ with body and decodes its result with
// decode (the protocol's decoder of typ's result): the one typed call
// every query type's goes through. A result that does not decode returns
// the zero R and an error wrapping ErrBadResult.
func Call[R any](ctx context.Context, a Asker, device, typ string, body any, timeout time.Duration,
	decode func([]byte, int) (R, error), opts ...CallOption) (R, error) {
	var zero R
	raw, err := a.Ask(ctx, device, typ, body, timeout, opts...)
	if err != nil {
		return zero, err
	}
	res, err := decode(raw, 0)
	if err != nil {
		return zero, badResult(device, typ, err)
	}
	return res, nil
}

// Speak asks device to say r and waits for the end of its audio. A speak
// given up (timeout, or ctx ended) is cancelled on the device. A result that
// does not decode returns the zero SpeakResult and an error wrapping
// ErrBadResult: the device did say the words.
func Speak(ctx context.Context, a Asker, device string, r protocol.SpeakRequest, timeout time.Duration) (protocol.SpeakResult, error) {
	if err := r.Validate(); err != nil {
		return protocol.SpeakResult{}, fmt.Errorf("query: speak to %s: %w", device, err)
	}
	return Call(ctx, a, device, protocol.TypeSpeak, r, timeout, protocol.DecodeSpeakResult, CancelOnGiveUp())
}

// SpeakStart starts the speak held on device with token; it reports
// whether one was waiting there.
func SpeakStart(ctx context.Context, a Asker, device, token string, timeout time.Duration) (bool, error) {
	res, err := Call(ctx, a, device, protocol.TypeSpeakStart, protocol.SpeakStart{Hold: token}, timeout, protocol.DecodeSpeakStartResult)
	return res.Started, err
}

// SpeakMore appends r's words to the speak with r.MessageID that device
// is still saying (a speak sent with More); it reports whether the device
// took them (false: that speak has ended). Only a device that serves
// speak.more is sent it.
func SpeakMore(ctx context.Context, a Asker, device string, r protocol.SpeakMore, timeout time.Duration) (protocol.SpeakMoreResult, error) {
	if err := r.Validate(); err != nil {
		return protocol.SpeakMoreResult{}, fmt.Errorf("query: speak.more to %s: %w", device, err)
	}
	return Call(ctx, a, device, protocol.TypeSpeakMore, r, timeout, protocol.DecodeSpeakMoreResult)
}

// SpeakStop stops what device is saying, after the current sentence
// (protocol.BargeInSentence) or at once (protocol.BargeInImmediate); it
// reports whether something was playing.
func SpeakStop(ctx context.Context, a Asker, device string, at protocol.BargeIn, timeout time.Duration) (bool, error) {
	res, err := Call(ctx, a, device, protocol.TypeSpeakStop, protocol.SpeakStop{At: at}, timeout, protocol.DecodeSpeakStopResult)
	return res.Stopped, err
}

// Look asks device for the newest frame of its camera; timeout 0 means
// LookTimeout.
func Look(ctx context.Context, a Asker, device string, timeout time.Duration) (protocol.VisionResult, error) {
	if timeout <= 0 {
		timeout = LookTimeout
	}
	return Call(ctx, a, device, protocol.TypeVision, nil, timeout, protocol.DecodeVisionResult)
}

// Phase asks the floor running on device to open or end a realtime phase
// (of the room, or of cmd.Channel's whisper channel); it returns what the
// floor did.
func Phase(ctx context.Context, a Asker, device string, cmd protocol.PhaseCommand, timeout time.Duration) (protocol.PhaseCommand, error) {
	return Call(ctx, a, device, protocol.TypePhase, cmd, timeout, protocol.DecodePhaseCommand)
}

// ActionTimeout bounds one action (Action's timeout 0): a gesture, a
// light, a short program.
const ActionTimeout = 30 * time.Second

// Action asks device to do r (docs/actions.md) and waits for
// its end; timeout 0 means ActionTimeout. An action given up is cancelled
// on the device.
func Action(ctx context.Context, a Asker, device string, r protocol.ActionRequest, timeout time.Duration) (protocol.ActionResult, error) {
	if err := r.Validate(); err != nil {
		return protocol.ActionResult{}, fmt.Errorf("query: action to %s: %w", device, err)
	}
	if timeout <= 0 {
		timeout = ActionTimeout
	}
	return Call(ctx, a, device, protocol.TypeAction, r, timeout, protocol.DecodeActionResult, CancelOnGiveUp())
}

// Know asks device for the answer of a knowledge tool its body declared
// (protocol.TypeKnowledge) and waits for it, bounded by ctx (a brain's
// knowledge call has its own deadline) and timeout (0: the Asker's own).
// A knowledge query given up is cancelled on the device.
func Know(ctx context.Context, a Asker, device string, r protocol.KnowledgeRequest, timeout time.Duration) (protocol.KnowledgeResult, error) {
	if err := r.Validate(); err != nil {
		return protocol.KnowledgeResult{}, fmt.Errorf("query: knowledge to %s: %w", device, err)
	}
	return Call(ctx, a, device, protocol.TypeKnowledge, r, timeout, protocol.DecodeKnowledgeResult, CancelOnGiveUp())
}

// MemoryTimeout bounds one memory request (Memory's timeout 0).
const MemoryTimeout = 10 * time.Second

// Memory asks device about its companion's memory (protocol.TypeMemory)
// and waits for the answer; timeout 0 means MemoryTimeout. Ask it through
// a Private client, whose answers only its identity reads: the device
// takes the request as that identity's (an operator's, or a person's
// about themselves). An answer that refuses (its Error) is an error
// naming the device, with the answer.
func Memory(ctx context.Context, a Asker, device string, r protocol.MemoryRequest, timeout time.Duration) (protocol.MemoryAnswer, error) {
	if r.ID == "" {
		r.ID = protocol.NewID()
	}
	if timeout <= 0 {
		timeout = MemoryTimeout
	}
	ans, err := Call(ctx, a, device, protocol.TypeMemory, r, timeout, decodeMemoryAnswer)
	if err == nil && ans.Error != "" {
		err = fmt.Errorf("memory of %s: %s", device, ans.Error)
	}
	return ans, err
}

func decodeMemoryAnswer(b []byte, _ int) (protocol.MemoryAnswer, error) {
	return protocol.DecodeMemoryAnswer(b, protocol.MaxMemoryFacts*1024)
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
			res, err := Action(ctx, a, device, r, timeout)
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
