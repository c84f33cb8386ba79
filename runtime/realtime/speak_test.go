package realtime_test

import (
	"context"
	"encoding/json"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chorus-robotics/chorus/runtime/brain"
	"github.com/chorus-robotics/chorus/runtime/brain/llm"
	"github.com/chorus-robotics/chorus/runtime/brain/llm/llmtest"
	"github.com/chorus-robotics/chorus/runtime/brain/openai"
	"github.com/chorus-robotics/chorus/runtime/brain/rule"
	"github.com/chorus-robotics/chorus/runtime/metrics"
	"github.com/chorus-robotics/chorus/runtime/protocol"
	"github.com/chorus-robotics/chorus/runtime/query"
	"github.com/chorus-robotics/chorus/runtime/realtime"
	"github.com/chorus-robotics/chorus/runtime/room"
)

// spoken is a realtime room on the memory broker: a floor, and ann, an
// agent (the rule brain unless another is given) whose device answers
// speak and action queries.
type spoken struct {
	ctx    context.Context
	mk     func(id string) *room.Room
	m      *metrics.Metrics
	speaks chan protocol.SpeakRequest
	acts   chan protocol.ActionRequest
	ended  chan protocol.Speaking // ann's voice ends
}

func newSpoken(t *testing.T, talker realtime.Talker, actions []protocol.ActionDef) *spoken {
	if talker == nil {
		talker = rule.New(0, nil)
	}
	rr := newMemRoom(t)
	mem, s, m, ctx, run, mk := rr.mem, rr.s, rr.m, rr.ctx, rr.run, rr.mk
	l := limits
	l.RateLimit, l.PerAgent, l.PerDay = 50*time.Millisecond, 1, 1
	rr.runFloor(t, l)
	id := members[0]
	rm := mk(id)
	r := &spoken{ctx: ctx, mk: mk, m: m, speaks: make(chan protocol.SpeakRequest, 4), acts: make(chan protocol.ActionRequest, 4),
		ended: make(chan protocol.Speaking, 4)}
	srv := &query.Server{Bus: rm.Bus, Scheme: s, Device: id}
	srv.Handle(protocol.TypeSpeak, func(_ context.Context, _ string, b json.RawMessage) (any, error) {
		req, err := protocol.DecodeSpeakRequest(b, 0)
		if err != nil {
			return nil, err
		}
		r.speaks <- req
		return map[string]any{"durationMs": 120, "ok": true}, nil // an unknown field
	})
	srv.Handle(protocol.TypeAction, func(_ context.Context, _ string, b json.RawMessage) (any, error) {
		req, err := protocol.DecodeActionRequest(b, 0)
		if err != nil {
			return nil, err
		}
		r.acts <- req
		return protocol.ActionResult{Name: req.Name, Done: true}, nil
	})
	run(srv.Serve)
	a, err := realtime.NewAgent(realtime.AgentConfig{Room: rm, Card: brain.Card{ID: id, Name: id, SampleLines: []string{"I like tea."}, Language: "en"},
		Brain: talker, PollInterval: 20 * time.Millisecond, SpeakCooldown: 60 * time.Millisecond,
		Device: id, Queries: query.NewClient(rm.Bus, s, id, query.ClientOptions{Timeout: 5 * time.Second}),
		Actions: func() []protocol.ActionDef { return actions }})
	if err != nil {
		t.Fatal(err)
	}
	run(a.Run)
	obs := mk("observer")
	obs.OnSpeaking(ctx, func(e room.SpeakingEvent) {
		if e.ID == id && !e.Cleared && !e.Speaking.Speaking {
			r.ended <- e.Speaking
		}
	})
	mem.Settle()
	time.Sleep(50 * time.Millisecond)
	return r
}

// An agent speaks its accepted utterance through its device with the
// speak body runtime/protocol declares (the device decodes it strictly),
// and announces the end of its voice. A result the device answered but
// that does not decode (the agent ignored json.Unmarshal's error before
// issue 20) still ends the voice, and is counted.
func TestAgentSpeaksThroughItsDevice(t *testing.T) {
	r := newSpoken(t, nil, nil)
	if err := r.mk("user").SendMessage(r.ctx, protocol.NewMessage(protocol.NewID(), "user", nil, "Good morning!", "")); err != nil {
		t.Fatal(err)
	}
	asked, ended, m := r.speaks, r.ended, r.m
	var req protocol.SpeakRequest
	select {
	case req = <-asked:
	case <-time.After(10 * time.Second):
		t.Fatal("the device was never asked to speak")
	}
	select {
	case e := <-ended:
		if e.MessageID != req.MessageID || e.DurationMs != 0 {
			t.Fatalf("voice ended %+v for a speak of %q", e, req.MessageID)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the voice never ended")
	}
	if n := metrics.Value(m.BadInput.WithLabelValues("result", string(protocol.KindUnknownField))); n != 1 {
		t.Fatalf("bad speak results counted %v, want 1", n)
	}
}

// A realtime companion asked a question by name answers and nods (the rule
// brain's gesture, its body has a nod): the device is asked for the nod
// tied to the broadcast words it is asked to speak.
func TestAgentNodsWithItsWords(t *testing.T) {
	nod := protocol.ActionDef{Name: "nod", Description: "Nod.", Schema: json.RawMessage(`{"type":"object"}`)}
	r := newSpoken(t, nil, []protocol.ActionDef{nod})
	if err := r.mk("user").SendMessage(r.ctx, protocol.NewMessage(protocol.NewID(), "user", nil, "ann, do you like tea?", "")); err != nil {
		t.Fatal(err)
	}
	var said protocol.SpeakRequest
	select {
	case said = <-r.speaks:
	case <-time.After(10 * time.Second):
		t.Fatal("the device was never asked to speak")
	}
	select {
	case act := <-r.acts:
		if act.Name != "nod" || act.MessageID == "" || act.MessageID != said.MessageID {
			t.Fatalf("action %+v with the words %+v", act, said)
		}
	case <-time.After(5 * time.Second):
		t.Fatalf("no action with the words %q", said.Message)
	}
}

// failing is a brain whose every call fails, as a model that is down.
type failing struct{ calls atomic.Int32 }

func (f *failing) Talk(context.Context, brain.TalkInput) (brain.Utterance, error) {
	f.calls.Add(1)
	return brain.Utterance{}, errors.New("model down")
}

// A brain that keeps failing is not asked again every poll: the wait
// doubles from the speak cooldown (60 ms here: asked at about 0, 60, 180,
// 420 and 900 ms in a second, against 50 times at the 20 ms poll).
func TestAgentBacksOffAFailingBrain(t *testing.T) {
	f := &failing{}
	r := newSpoken(t, f, nil)
	if err := r.mk("user").SendMessage(r.ctx, protocol.NewMessage(protocol.NewID(), "user", nil, "Good morning!", "")); err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Second)
	if n := f.calls.Load(); n < 2 || n > 8 {
		t.Fatalf("the failing brain was asked %d times in a second", n)
	}
}

// Realtime rooms stream too (issue 28, item 6): the model's answer is
// streamed, the post leaves once the utterance is complete — the floor
// judges its length and quota on the whole — and the body is asked to
// speak the whole accepted words, which it plays sentence by sentence
// (device/speak), so the audio starts on the first sentence.
func TestAgentStreamsItsModelAndPostsTheWholeUtterance(t *testing.T) {
	fake := llmtest.New()
	defer fake.Close()
	fake.TokensPerSecond = 400
	line := "First I looked at the sky. Then I saw the rain coming over the hills."
	fake.Line = func(string, int) string { return line }
	r := newSpoken(t, &llm.Brain{Chat: openai.New(openai.Config{BaseURL: fake.BaseURL(), Model: "m"})}, nil)
	if err := r.mk("user").SendMessage(r.ctx, protocol.NewMessage(protocol.NewID(), "user", nil, "Good morning!", "")); err != nil {
		t.Fatal(err)
	}
	select {
	case req := <-r.speaks:
		if req.Message != line || req.More {
			t.Fatalf("asked to speak %q (more %v), want the whole utterance %q", req.Message, req.More, line)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the device was never asked to speak")
	}
	if fake.Streamed() == 0 || len(fake.Problems()) > 0 {
		t.Fatalf("%d of %d answers streamed; problems %v", fake.Streamed(), fake.Calls(), fake.Problems())
	}
}
