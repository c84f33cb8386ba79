package query

import (
	"context"
	"encoding/json"
	"errors"
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

	res, err := Speak(ctx, c, "pi5", protocol.SpeakRequest{Message: "hello", Emotion: protocol.EmotionHappy, MessageID: "m1"}, 0)
	if err != nil || res.DurationMs != 500 || res.Engine != "happy" || !res.StartedAt.Equal(started) {
		t.Fatalf("speak: %+v %v", res, err)
	}
	if _, err := Speak(ctx, c, "pi5", protocol.SpeakRequest{Message: " "}, 0); protocol.KindOf(err) != protocol.KindMissing {
		t.Fatalf("speak with no words: %v, want it refused before it is sent", err)
	}
	badSpeak.Store(true)
	if res, err := Speak(ctx, c, "pi5", protocol.SpeakRequest{Message: "hello"}, 0); !errors.Is(err, ErrBadResult) || res != (protocol.SpeakResult{}) {
		t.Fatalf("a speak result that does not decode: %+v %v, want ErrBadResult", res, err)
	}
	if ok, err := SpeakStart(ctx, c, "pi5", "t1", 0); err != nil || !ok {
		t.Fatalf("speak.start: %v %v", ok, err)
	}
	if r, err := SpeakMore(ctx, c, "pi5", protocol.SpeakMore{MessageID: "m1", Seq: 1, Message: "And more.", More: true}, 0); err != nil || !r.Appended {
		t.Fatalf("speak.more: %+v %v", r, err)
	}
	if r, err := SpeakMore(ctx, c, "pi5", protocol.SpeakMore{MessageID: "m2", Seq: 2}, 0); err != nil || r.Appended {
		t.Fatalf("speak.more to a speak that ended: %+v %v", r, err)
	}
	if _, err := SpeakMore(ctx, c, "pi5", protocol.SpeakMore{MessageID: "m1", Seq: 0, Message: "x"}, 0); protocol.KindOf(err) != protocol.KindMissing {
		t.Fatalf("speak.more without a seq: %v, want it refused before it is sent", err)
	}
	if r, err := SpeakMore(ctx, c, "pi5", protocol.SpeakMore{MessageID: "m1", Seq: 9, Message: "x"}, 0); !errors.Is(err, ErrBadResult) || r.Appended {
		t.Fatalf("a speak.more result that does not decode: %+v %v, want ErrBadResult", r, err)
	}
	if ok, err := SpeakStop(ctx, c, "pi5", protocol.BargeInImmediate, 0); err != nil || !ok {
		t.Fatalf("speak.stop: %v %v", ok, err)
	}
	var re *RemoteError
	if _, err := SpeakStop(ctx, c, "pi5", protocol.BargeInOff, 0); !errors.As(err, &re) {
		t.Fatalf("speak.stop at off: %v, want the device's refusal", err)
	}
	if v, err := Look(ctx, c, "pi5", 0); err != nil || v.Image != "aGVsbG8=" {
		t.Fatalf("look: %+v %v", v, err)
	}
	if p, err := Phase(ctx, c, "pi5", protocol.PhaseCommand{Action: protocol.PhaseActionEnd, Channel: "wolves"}, 0); err != nil || p.Channel != "wolves" {
		t.Fatalf("phase: %+v %v", p, err)
	}
}

// Look's timeout 0 is LookTimeout, not the client's default.
func TestLookTimeout(t *testing.T) {
	var got time.Duration
	a := askerFunc(func(_ context.Context, _, typ string, _ any, timeout time.Duration, _ ...CallOption) (json.RawMessage, error) {
		got = timeout
		return json.RawMessage(`{"image":"aGVsbG8="}`), nil
	})
	if _, err := Look(context.Background(), a, "pi5", 0); err != nil || got != LookTimeout {
		t.Fatalf("timeout %v (%v), want %v", got, err, LookTimeout)
	}
}

type askerFunc func(ctx context.Context, device, typ string, body any, timeout time.Duration, opts ...CallOption) (json.RawMessage, error)

func (f askerFunc) Ask(ctx context.Context, device, typ string, body any, timeout time.Duration, opts ...CallOption) (json.RawMessage, error) {
	return f(ctx, device, typ, body, timeout, opts...)
}
