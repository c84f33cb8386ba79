package companion

import (
	"context"
	"encoding/json"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/chorus-robotics/chorus/runtime/brain"
	"github.com/chorus-robotics/chorus/runtime/clock"
	"github.com/chorus-robotics/chorus/runtime/metrics"
	"github.com/chorus-robotics/chorus/runtime/protocol"
	"github.com/chorus-robotics/chorus/runtime/query"
	"github.com/chorus-robotics/chorus/runtime/room"
)

// fakeHost is a turn's companion: it records what the turn tells it and
// hands delivered events to the test.
type fakeHost struct {
	audio     map[string]voice
	present   map[string]bool
	person    time.Time // until when a person's utterance holds the turn
	events    chan event
	published []protocol.Message
	statuses  []Status
	voiced    []bool              // each speaking status announced: speaking or not
	said      []*protocol.Message // what each end told
	over      bool
}

func newFakeHost() *fakeHost {
	return &fakeHost{audio: map[string]voice{}, present: map[string]bool{}, events: make(chan event, 16)}
}

func (h *fakeHost) deliver(_ context.Context, e event)   { h.events <- e }
func (h *fakeHost) status(s Status)                      { h.statuses = append(h.statuses, s) }
func (h *fakeHost) publish(_ string, m protocol.Message) { h.published = append(h.published, m) }
func (h *fakeHost) voices() map[string]voice             { return h.audio }
func (h *fakeHost) personSpeaking(time.Time) time.Time   { return h.person }
func (h *fakeHost) here(id string) bool                  { return h.present[id] || id == "me" }
func (h *fakeHost) announceVoice(_ string, s bool, _ time.Time, _ time.Duration) {
	h.voiced = append(h.voiced, s)
}
func (h *fakeHost) ended(_ *turn, said *protocol.Message) {
	h.over = true
	h.said = append(h.said, said)
}

var _ host = (*fakeHost)(nil)

func TestTurnStartTime(t *testing.T) {
	const pause = 200 * time.Millisecond
	t0 := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	speaking := func(until int) voice { return voice{msgID: "m0", speaking: true, until: at(until)} }
	ended := func(when int) voice { return voice{msgID: "m0", ended: at(when)} }
	cases := []struct {
		name      string
		now       int // ms after the answered message
		audio     map[string]voice
		present   []string
		fromVoice string
		person    int // ms: until when a person's utterance under way holds the turn (0: nobody speaks)
		want      time.Time
	}{
		{name: "nobody spoke: the pause after the message", want: at(200)},
		{name: "a person speaking holds the start until their utterance ends", now: 100, person: 4000, want: at(4000)},
		{name: "a person and a member speaking: the later", now: 100,
			audio: map[string]voice{"cat": speaking(3000)}, present: []string{"cat"}, person: 2000, want: at(3000)},
		{name: "a voice ended after the message: the pause after it", now: 500,
			audio: map[string]voice{"cat": ended(400)}, present: []string{"cat"}, want: at(600)},
		{name: "a voice ended before the message counts for nothing", now: 500,
			audio: map[string]voice{"cat": {msgID: "m0", ended: t0.Add(-time.Second)}}, present: []string{"cat"}, want: at(200)},
		{name: "a member still speaking holds the start to its bound", now: 100,
			audio: map[string]voice{"cat": speaking(3000)}, present: []string{"cat"}, want: at(3000)},
		{name: "this companion's own voice holds it too", now: 100,
			audio: map[string]voice{"me": speaking(900)}, want: at(900)},
		{name: "a speaker gone from the room: its bound stands for its end", now: 100,
			audio: map[string]voice{"cat": speaking(3000)}, want: at(3200)},
		{name: "a voice past its bound: the bound stands for its end", now: 4000,
			audio: map[string]voice{"cat": speaking(3000)}, present: []string{"cat"}, want: at(3200)},
		{name: "the latest end of several voices", now: 900,
			audio: map[string]voice{"cat": ended(300), "dog": ended(700)}, present: []string{"cat", "dog"}, want: at(900)},
		{name: "words being spoken whose status has not come: held for the grace", now: 100,
			present: []string{"cat"}, fromVoice: "cat", want: t0.Add(StatusGrace)},
		{name: "words being spoken, the grace passed: the pause", now: 2500,
			present: []string{"cat"}, fromVoice: "cat", want: at(200)},
		{name: "words being spoken by a robot gone: no grace", now: 100,
			fromVoice: "cat", want: at(200)},
		{name: "words being spoken, their status ended: the pause after it", now: 1500,
			audio: map[string]voice{"cat": {msgID: "grant", ended: at(1200)}}, present: []string{"cat"}, fromVoice: "cat", want: at(1400)},
		{name: "the status of other words does not end the grace", now: 100,
			audio: map[string]voice{"cat": ended(50)}, present: []string{"cat"}, fromVoice: "cat", want: t0.Add(StatusGrace)},
		{name: "the later of a voice's bound and the grace", now: 100,
			audio: map[string]voice{"dog": speaking(5000)}, present: []string{"cat", "dog"}, fromVoice: "cat", want: at(5000)},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := newFakeHost()
			for id, v := range tc.audio {
				h.audio[id] = v
			}
			for _, p := range tc.present {
				h.present[p] = true
			}
			if tc.person > 0 {
				h.person = at(tc.person)
			}
			tr := &turn{host: h, cfg: &Config{Pause: pause}, grant: "grant", after: t0, fromVoice: tc.fromVoice}
			if got := tr.startTime(at(tc.now)); !got.Equal(tc.want) {
				t.Errorf("startTime = %v after the message, want %v", got.Sub(t0), tc.want.Sub(t0))
			}
		})
	}
}

func TestTurnMessage(t *testing.T) {
	wave := []protocol.ActionRequest{{Name: "wave"}}
	cases := []struct {
		name    string
		device  string
		u       brain.Utterance
		to      []string
		cut     bool
		actions []any
	}{
		{name: "plain words", u: brain.Utterance{Text: "hi", Emotion: protocol.EmotionNeutral}},
		{name: "addressees that are no identity are dropped", u: brain.Utterance{Text: "hi", To: []string{"cat", "a/b", ""}}, to: []string{"cat"}},
		{name: "cut words say so", u: brain.Utterance{Text: "hi", Cut: true}, cut: true},
		{name: "actions are named with a body", device: "body", u: brain.Utterance{Text: "hi", Actions: wave}, actions: []any{"wave"}},
		{name: "actions without a body are not", u: brain.Utterance{Text: "hi", Actions: wave}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tr := &turn{cfg: &Config{Card: brain.Card{ID: "me"}, Device: tc.device}, msgID: "m1"}
			m := tr.message(tc.u)
			if m.Params.ID != "m1" || m.Params.From != "me" || m.Params.Message != tc.u.Text {
				t.Errorf("message = %+v, want m1 from me saying %q", m.Params, tc.u.Text)
			}
			if !slices.Equal(m.Params.To, tc.to) {
				t.Errorf("to = %q, want %q", m.Params.To, tc.to)
			}
			if cut, _ := m.Params.Metadata[protocol.MetaCut].(bool); cut != tc.cut {
				t.Errorf("cut = %v, want %v", cut, tc.cut)
			}
			acts, _ := m.Params.Metadata[protocol.MetaActions].([]any)
			if !slices.Equal(acts, tc.actions) {
				t.Errorf("actions = %v, want %v", acts, tc.actions)
			}
		})
	}
}

// TestTurnTextOnly runs a text-only turn from the grant to its Message,
// the companion's loop played by the test: overlapped, the Message goes
// out at the start once the pause after the voice before it has passed;
// sequential, after the pause that follows the grant.
func TestTurnTextOnly(t *testing.T) {
	for _, overlap := range []bool{true, false} {
		t.Run(map[bool]string{true: "overlapped", false: "sequential"}[overlap], func(t *testing.T) {
			clk := clock.NewFake(time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC))
			h := newFakeHost()
			var wg sync.WaitGroup
			cfg := &Config{Card: brain.Card{ID: "me", Language: "en"}, Pause: 200 * time.Millisecond, Clock: clk, Overlap: overlap}
			tr := &turn{host: h, cfg: cfg, log: slog.New(slog.DiscardHandler), wg: &wg, grant: "q", msgID: "a"}
			tf := thoughtFor{arrived: clk.Now(), thought: brain.Thought{State: protocol.Speak, Draft: "hello"}}
			ctx := context.Background()
			tr.begin(ctx, tf)
			if overlap {
				e := <-h.events // the words, prepared
				if e.kind != evPrepared || e.id != "q" || !e.whole || e.utter.Text != "hello" {
					t.Fatalf("event = %+v, want the whole words prepared for q", e)
				}
				tr.onPrepared(ctx, e.utter, e.whole)
			}
			if len(h.published) != 0 {
				t.Fatalf("published %v before the pause", h.published)
			}
			clk.Advance(200 * time.Millisecond)
			if overlap {
				if e := <-h.events; e.kind != evStartCheck {
					t.Fatalf("event = %+v, want the start looked at again", e)
				}
				tr.maybeStart(ctx)
			} else {
				if e := <-h.events; e.kind != evSpeak {
					t.Fatalf("event = %+v, want the pause over", e)
				}
				tr.speak(ctx, tf)
				e := <-h.events
				if e.kind != evSpoke || e.said == nil {
					t.Fatalf("event = %+v, want the words said", e)
				}
				tr.onSpoke(ctx, e)
			}
			wg.Wait()
			if len(h.published) != 1 || h.published[0].Params.ID != "a" || h.published[0].Params.Message != "hello" {
				t.Fatalf("published %+v, want message a saying hello", h.published)
			}
			if !h.over || len(h.said) != 1 || h.said[0] == nil || h.said[0].Params.ID != "a" {
				t.Errorf("ended = %v (over %v), want once with message a", h.said, h.over)
			}
			if !slices.Equal(h.statuses, []Status{Speaking}) {
				t.Errorf("statuses = %v, want speaking (listening is the companion's, at the end)", h.statuses)
			}
		})
	}
}

func TestTurnBargeIn(t *testing.T) {
	cases := []struct {
		name     string
		mode     protocol.BargeIn
		started  bool
		over     bool
		body     bool // a device to stop
		stopping bool
		asked    []string // the body's queries: type and barge-in mode
	}{
		{name: "a turn not yet started is given up", mode: protocol.BargeInSentence, over: true},
		{name: "barge-in off keeps it", mode: protocol.BargeInOff},
		{name: "barge-in off keeps words being said", mode: protocol.BargeInOff, started: true},
		{name: "words being said without a body go on", mode: protocol.BargeInImmediate, started: true},
		{name: "words being said are stopped after the sentence", mode: protocol.BargeInSentence, started: true, body: true,
			stopping: true, asked: []string{protocol.TypeSpeakStop + " " + string(protocol.BargeInSentence)}},
		{name: "words being said are stopped at once", mode: protocol.BargeInImmediate, started: true, body: true,
			stopping: true, asked: []string{protocol.TypeSpeakStop + " " + string(protocol.BargeInImmediate)}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := newFakeHost()
			cfg := &Config{BargeIn: tc.mode, Room: &room.Room{Metrics: metrics.New()}}
			a := &stopAsker{}
			if tc.body {
				cfg.Device, cfg.Queries = "body", a
			}
			var wg sync.WaitGroup
			tr := &turn{host: h, cfg: cfg, log: slog.New(slog.DiscardHandler), wg: &wg, grant: "q", started: tc.started, cancel: func() {}}
			tr.bargeIn()
			wg.Wait()
			if !slices.Equal(a.asked, tc.asked) {
				t.Errorf("asked the body %q, want %q", a.asked, tc.asked)
			}
			if h.over != tc.over || tr.stopping != tc.stopping {
				t.Errorf("over %v, stopping %v; want %v, %v", h.over, tr.stopping, tc.over, tc.stopping)
			}
			if tc.over && (len(h.said) != 1 || h.said[0] != nil) {
				t.Errorf("ended with %v, want nothing said", h.said)
			}
		})
	}
}

// stopAsker is a body that takes every speak.stop.
type stopAsker struct{ asked []string }

func (a *stopAsker) Ask(_ context.Context, _, typ string, body any, _ time.Duration, _ ...query.CallOption) (json.RawMessage, error) {
	a.asked = append(a.asked, typ+" "+string(body.(protocol.SpeakStop).At))
	return json.RawMessage(`{"stopped":true}`), nil
}
