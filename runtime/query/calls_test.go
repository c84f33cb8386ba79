package query

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chorus-robotics/chorus/runtime/bus/bustest"
	"github.com/chorus-robotics/chorus/runtime/protocol"
	"github.com/chorus-robotics/chorus/runtime/topic"
)

// The typed calls send the body their type's decoder accepts and decode the
// result strictly: a device that answers with something else is an error
// wrapping ErrBadResult, never a zero value passed off as an answer.
func TestTypedCalls(t *testing.T) {
	mem := bustest.NewMemory(t)
	started := time.Date(2026, 11, 22, 8, 0, 0, 0, time.UTC)
	var badSpeak atomic.Bool
	serve(t, mem.Conn(nil, nil), "pi5", map[string]Handler{
		protocol.TypeSpeak: func(_ context.Context, _ string, b json.RawMessage) (any, error) {
			r, err := protocol.DecodeSpeakRequest(b, 0)
			if err != nil {
				return nil, err
			}
			if badSpeak.Load() {
				return map[string]any{"durationMs": "long"}, nil
			}
			return protocol.SpeakResult{DurationMs: int64(len(r.Message)) * 100, Sentences: 1, Engine: string(r.Emotion), StartedAt: started}, nil
		},
		protocol.TypeSpeakStart: func(_ context.Context, _ string, b json.RawMessage) (any, error) {
			s, err := protocol.DecodeSpeakStart(b, 0)
			return protocol.SpeakStartResult{Started: s.Hold == "t1"}, err
		},
		protocol.TypeSpeakStop: func(_ context.Context, _ string, b json.RawMessage) (any, error) {
			s, err := protocol.DecodeSpeakStop(b, 0)
			return protocol.SpeakStopResult{Stopped: s.At == protocol.BargeInImmediate}, err
		},
		protocol.TypeSpeakMore: func(_ context.Context, _ string, b json.RawMessage) (any, error) {
			m, err := protocol.DecodeSpeakMore(b, 0)
			if err != nil {
				return nil, err
			}
			if m.Seq == 9 {
				return map[string]any{"appended": "yes"}, nil
			}
			return protocol.SpeakMoreResult{Appended: m.MessageID == "m1"}, nil
		},
		protocol.TypeVision: func(_ context.Context, _ string, b json.RawMessage) (any, error) {
			if _, err := protocol.DecodeVisionRequest(b, 0); err != nil {
				return nil, err
			}
			return map[string]any{"image": "aGVsbG8="}, nil // an aikyo body: the image only
		},
		protocol.TypePhase: func(_ context.Context, _ string, b json.RawMessage) (any, error) {
			return protocol.DecodePhaseCommand(b, 0)
		},
	})
	time.Sleep(10 * time.Millisecond)
	c := NewClient(mem.Conn(nil, nil), topic.New(""), "kyoko", ClientOptions{Timeout: 2 * time.Second})
	defer c.Close()
	ctx := context.Background()

	res, err := Call(ctx, c, "pi5", Speak, protocol.SpeakRequest{Message: "hello", Emotion: protocol.EmotionHappy, MessageID: "m1"}, 0)
	if err != nil || res.DurationMs != 500 || res.Engine != "happy" || !res.StartedAt.Equal(started) {
		t.Fatalf("speak: %+v %v", res, err)
	}
	if _, err := Call(ctx, c, "pi5", Speak, protocol.SpeakRequest{Message: " "}, 0); protocol.KindOf(err) != protocol.KindMissing {
		t.Fatalf("speak with no words: %v, want it refused before it is sent", err)
	}
	badSpeak.Store(true)
	if res, err := Call(ctx, c, "pi5", Speak, protocol.SpeakRequest{Message: "hello"}, 0); !errors.Is(err, ErrBadResult) || res != (protocol.SpeakResult{}) {
		t.Fatalf("a speak result that does not decode: %+v %v, want ErrBadResult", res, err)
	}
	if r, err := Call(ctx, c, "pi5", SpeakStart, protocol.SpeakStart{Hold: "t1"}, 0); err != nil || !r.Started {
		t.Fatalf("speak.start: %+v %v", r, err)
	}
	if r, err := Call(ctx, c, "pi5", SpeakMore, protocol.SpeakMore{MessageID: "m1", Seq: 1, Message: "And more.", More: true}, 0); err != nil || !r.Appended {
		t.Fatalf("speak.more: %+v %v", r, err)
	}
	if r, err := Call(ctx, c, "pi5", SpeakMore, protocol.SpeakMore{MessageID: "m2", Seq: 2}, 0); err != nil || r.Appended {
		t.Fatalf("speak.more to a speak that ended: %+v %v", r, err)
	}
	if _, err := Call(ctx, c, "pi5", SpeakMore, protocol.SpeakMore{MessageID: "m1", Seq: 0, Message: "x"}, 0); protocol.KindOf(err) != protocol.KindMissing {
		t.Fatalf("speak.more without a seq: %v, want it refused before it is sent", err)
	}
	if r, err := Call(ctx, c, "pi5", SpeakMore, protocol.SpeakMore{MessageID: "m1", Seq: 9, Message: "x"}, 0); !errors.Is(err, ErrBadResult) || r.Appended {
		t.Fatalf("a speak.more result that does not decode: %+v %v, want ErrBadResult", r, err)
	}
	if r, err := Call(ctx, c, "pi5", SpeakStop, protocol.SpeakStop{At: protocol.BargeInImmediate}, 0); err != nil || !r.Stopped {
		t.Fatalf("speak.stop: %+v %v", r, err)
	}
	var re *RemoteError
	if _, err := Call(ctx, c, "pi5", SpeakStop, protocol.SpeakStop{At: protocol.BargeInOff}, 0); !errors.As(err, &re) {
		t.Fatalf("speak.stop at off: %v, want the device's refusal", err)
	}
	if v, err := Call(ctx, c, "pi5", Vision, protocol.VisionRequest{}, 0); err != nil || v.Image != "aGVsbG8=" {
		t.Fatalf("look: %+v %v", v, err)
	}
	if p, err := Call(ctx, c, "pi5", Phase, protocol.PhaseCommand{Action: protocol.PhaseActionEnd, Channel: "wolves"}, 0); err != nil || p.Channel != "wolves" {
		t.Fatalf("phase: %+v %v", p, err)
	}
}

// A call's timeout 0 is its type's (a look: LookTimeout), not the
// client's default; a type that cancels what is given up asks so; a
// refusal in a result is an error that keeps the result.
func TestCallTakesItsTypesWays(t *testing.T) {
	var got time.Duration
	var cancels bool
	answer := `{"image":"aGVsbG8="}`
	a := askerFunc(func(_ context.Context, _, typ string, _ any, timeout time.Duration, opts ...CallOption) (json.RawMessage, error) {
		var o callOptions
		for _, opt := range opts {
			opt(&o)
		}
		got, cancels = timeout, o.cancelOnGiveUp
		return json.RawMessage(answer), nil
	})
	ctx := context.Background()
	if _, err := Call(ctx, a, "pi5", Vision, protocol.VisionRequest{}, 0); err != nil || got != LookTimeout || cancels {
		t.Fatalf("vision: timeout %v, cancels %v (%v), want %v and no cancel", got, cancels, err, LookTimeout)
	}
	if _, err := Call(ctx, a, "pi5", Vision, protocol.VisionRequest{}, time.Second); err != nil || got != time.Second {
		t.Fatalf("vision with its own timeout: %v (%v)", got, err)
	}
	answer = `{"name":"nod","done":true,"durationMs":5}`
	if _, err := Call(ctx, a, "pi5", Action, protocol.ActionRequest{Name: "nod", Args: json.RawMessage(`{}`)}, 0); err != nil || got != ActionTimeout || !cancels {
		t.Fatalf("action: timeout %v, cancels %v (%v)", got, cancels, err)
	}
	answer = `{"id":"r1","error":"alice may not see or forget what is remembered about bob"}`
	ans, err := Call(ctx, a, "pi5", Memory, protocol.MemoryRequest{ID: "r1", Op: protocol.MemoryList, Person: "bob"}, 0)
	if err == nil || ans.Error == "" || !strings.Contains(err.Error(), "memory of pi5: alice may not") || got != MemoryTimeout {
		t.Fatalf("a refused memory request: %+v %v (timeout %v)", ans, err, got)
	}
	silent := askerFunc(func(context.Context, string, string, any, time.Duration, ...CallOption) (json.RawMessage, error) {
		return nil, fmt.Errorf("%w: memory on pi5", ErrTimeout)
	})
	if _, err := Call(ctx, silent, "pi5", Memory, protocol.MemoryRequest{ID: "r2", Op: protocol.MemoryList}, 0); !errors.Is(err, ErrTimeout) ||
		!strings.Contains(err.Error(), "memory of pi5: no answer within 10s (is it online, with memory on?)") {
		t.Fatalf("a memory request nobody answered: %v", err)
	}
}

type askerFunc func(ctx context.Context, device, typ string, body any, timeout time.Duration, opts ...CallOption) (json.RawMessage, error)

func (f askerFunc) Ask(ctx context.Context, device, typ string, body any, timeout time.Duration, opts ...CallOption) (json.RawMessage, error) {
	return f(ctx, device, typ, body, timeout, opts...)
}
