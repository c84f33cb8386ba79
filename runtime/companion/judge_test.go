package companion_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chorus-robotics/chorus/runtime/metrics"

	"github.com/chorus-robotics/chorus/runtime/brain"
	"github.com/chorus-robotics/chorus/runtime/brain/anthropic"
	"github.com/chorus-robotics/chorus/runtime/brain/braintest"
	"github.com/chorus-robotics/chorus/runtime/brain/llm"
	"github.com/chorus-robotics/chorus/runtime/brain/llm/llmtest"
	"github.com/chorus-robotics/chorus/runtime/brain/openai"
	"github.com/chorus-robotics/chorus/runtime/companion"
	"github.com/chorus-robotics/chorus/runtime/protocol"
	"github.com/chorus-robotics/chorus/runtime/repetition"
	"github.com/chorus-robotics/chorus/runtime/room"
)

// loopCase is a conversation of five lines (hana and aya in turn) and what
// a model says about it: a real model reads meaning, so it hears a
// paraphrase or a thank-you loop as the repetition it is, which the local
// character-bigram score cannot.
type loopCase struct {
	name    string
	lang    string
	lines   []string
	repeats bool // the truth (what a model answers)
	// localMisses: the local score alone is below the threshold (the
	// defect: with LLM brains the closing instruction was never added).
	localMisses bool
}

var loopCases = []loopCase{
	{"paraphrase", "ja", []string{
		"今日の夕焼け、すごくきれいだったね。",
		"うん、空がオレンジ色に染まって見事だった。",
		"あの夕日は本当に美しかったよ。",
		"夕方の空、感動的な色だったよね。",
		"ほんと、沈む太陽が素敵だった。",
	}, true, true},
	{"paraphrase", "en", []string{
		"The sunset today was really beautiful.",
		"Yes, the sky turned such a lovely orange.",
		"That evening sky was truly gorgeous.",
		"I loved how the sun went down in those colours.",
		"Honestly, the dusk was stunning tonight.",
	}, true, true},
	{"thank-you loop", "ja", []string{
		"手伝ってくれてありがとう！",
		"こちらこそ、ありがとうね。",
		"いえいえ、本当に感謝してるよ。",
		"私のほうこそ、ありがとう！",
		"どういたしまして、こちらこそ感謝だよ。",
	}, true, true},
	{"thank-you loop", "en", []string{
		"Thank you so much for helping me!",
		"No, thank you, really!",
		"I'm so grateful, thanks again.",
		"Thanks to you too, truly.",
		"You're welcome, and thank you!",
	}, true, true},
	{"farewell loop", "ja", []string{
		"じゃあ、またね。",
		"うん、またあとでね！",
		"それじゃ、さようなら。",
		"バイバイ、また会おうね。",
		"またね、元気でね！",
	}, true, true},
	{"farewell loop", "en", []string{
		"Well, see you later!",
		"Bye for now!",
		"Take care, goodbye!",
		"See you soon, bye!",
		"Goodbye, take care of yourself!",
	}, true, true},
	{"lively", "ja", []string{
		"週末は山に登ったよ。",
		"いいね！頂上から何が見えた？",
		"遠くに海が見えたんだ。",
		"海といえば、来月は花火大会があるよ。",
		"浴衣を着て行こうかな。",
	}, false, true},
	{"lively", "en", []string{
		"I climbed a hill at the weekend.",
		"Nice! What could you see from the top?",
		"The sea, far away, shining.",
		"Speaking of the sea, there are fireworks next month.",
		"I might wear my new jacket for that.",
	}, false, true},
	{"verbatim", "ja", []string{
		"お茶が好きです。", "お茶が好きです！", "お茶が好きです。", "お茶が好きです！", "お茶が好きです。",
	}, true, false},
	{"verbatim", "en", []string{
		"I love tea so much.", "I love tea so much!", "I love tea so much.", "I love tea so much!", "I love tea so much.",
	}, true, false},
}

// oracle is the fake model's verdict: it knows each case's truth, found
// by the window the prompt quotes (every line of the case, in order).
func oracle(t *testing.T) func(lines []string) float64 {
	return func(lines []string) float64 {
		for _, c := range loopCases {
			if slices.Equal(lines, c.lines) {
				if c.repeats {
					return 0.9
				}
				return 0.1
			}
		}
		t.Errorf("the judge was asked about a window that is not a case: %q", lines)
		return 0
	}
}

// judgeRig is one companion (kyoko) whose brain records the inputs it gets,
// with hana and aya speaking lines to it.
type judgeRig struct {
	*roomRig
	mu     sync.Mutex
	inputs []brain.Input
}

func newJudgeRig(t *testing.T, lang string, mod func(*companion.Config)) *judgeRig {
	r := &judgeRig{roomRig: newRig(t)}
	b := &braintest.Func{ThinkFn: func(_ context.Context, in brain.Input) (brain.Thought, error) {
		r.mu.Lock()
		r.inputs = append(r.inputs, in)
		r.mu.Unlock()
		return brain.Thought{State: protocol.Listen, Closing: protocol.ClosingNone}, nil
	}}
	card := brain.Card{ID: "kyoko", Name: "Kyoko", Language: lang}
	r.startCompanion(card, b, mod)
	waitPresent(t, r.roomRig, 1)
	return r
}

// say sends text as from and waits until the companion has thought about
// it: about this Message, not an earlier one with the same words (a
// verbatim loop says the same line again).
func (r *judgeRig) say(from, text string) brain.Input {
	r.t.Helper()
	id := protocol.NewID()
	rm := room.New(r.dial(from, nil, nil), r.s, "lr", nil, nil)
	if err := rm.SendMessage(r.ctx, protocol.NewMessage(id, from, nil, text, "")); err != nil {
		r.t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		r.mu.Lock()
		for _, in := range r.inputs {
			if in.Message.Params.ID == id {
				r.mu.Unlock()
				return in
			}
		}
		r.mu.Unlock()
		time.Sleep(5 * time.Millisecond)
	}
	r.t.Fatalf("kyoko never thought about %q", text)
	return brain.Input{}
}

// conversation says the case's lines, then waits for the judge's verdict
// (asked after the fifth line) and says one line more, whose input shows
// whether the closing instruction was added.
func (r *judgeRig) conversation(c loopCase, judged func() int) brain.Input {
	for i, l := range c.lines {
		r.say([]string{"hana", "aya"}[i%2], l)
	}
	deadline := time.Now().Add(10 * time.Second)
	for judged() < 1 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	time.Sleep(200 * time.Millisecond) // the verdict's way back to the companion's loop
	probe := "…"
	return r.say("hana", probe)
}

func jsonLines(prompt string) []string {
	var out []string
	for _, l := range strings.Split(prompt, "\n") {
		var q struct{ From, Text string }
		if strings.HasPrefix(l, `{"from":`) && json.Unmarshal([]byte(l), &q) == nil {
			out = append(out, q.Text)
		}
	}
	return out
}

// anthropicFake is Anthropic's Messages API as strict as the real one on
// what the judge sends: the version and key headers, a model and
// max_tokens, text content blocks, a json_schema output format without
// numeric bounds (which the API refuses), and the real response shape.
func anthropicFake(t *testing.T, verdict func([]string) float64) (*httptest.Server, func() int) {
	var mu sync.Mutex
	n := 0
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fail := func(format string, args ...any) {
			t.Errorf("anthropic fake: "+format, args...)
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusBadRequest)
			fmt.Fprintf(w, `{"type":"error","error":{"type":"invalid_request_error","message":%q}}`, fmt.Sprintf(format, args...))
		}
		if r.Method != http.MethodPost || r.URL.Path != "/v1/messages" {
			fail("%s %s", r.Method, r.URL.Path)
			return
		}
		if r.Header.Get("Anthropic-Version") == "" || r.Header.Get("X-Api-Key") == "" {
			fail("anthropic-version or x-api-key header missing")
			return
		}
		body, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
		var req struct {
			Model     string `json:"model"`
			MaxTokens int    `json:"max_tokens"`
			Messages  []struct {
				Role    string `json:"role"`
				Content []struct {
					Type string `json:"type"`
					Text string `json:"text"`
				} `json:"content"`
			} `json:"messages"`
			OutputConfig *struct {
				Format struct {
					Type   string         `json:"type"`
					Schema map[string]any `json:"schema"`
				} `json:"format"`
			} `json:"output_config"`
		}
		if err := json.Unmarshal(body, &req); err != nil {
			fail("body: %v", err)
			return
		}
		switch {
		case req.Model == "" || req.MaxTokens <= 0:
			fail("model and max_tokens are required")
			return
		case len(req.Messages) == 0 || req.Messages[0].Role != "user":
			fail("messages must start with a user turn")
			return
		case req.OutputConfig == nil || req.OutputConfig.Format.Type != "json_schema":
			fail("the judge asks for no json_schema output")
			return
		case strings.Contains(string(body), `"maximum"`) || strings.Contains(string(body), `"minimum"`):
			fail("output_config.format.schema: numeric bounds are not supported")
			return
		}
		var prompt string
		for _, b := range req.Messages[0].Content {
			if b.Type != "text" {
				fail("content block type %q", b.Type)
				return
			}
			prompt += b.Text
		}
		mu.Lock()
		n++
		mu.Unlock()
		score, _ := json.Marshal(map[string]any{"score": verdict(jsonLines(prompt))})
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{
			"id": "msg_013Zva2CMHLNnXjNJJKqJ2EF", "type": "message", "role": "assistant", "model": req.Model,
			"content": []any{map[string]any{"type": "text", "text": string(score)}}, "stop_reason": "end_turn", "stop_sequence": nil,
			"usage": map[string]any{"input_tokens": 210, "output_tokens": 9},
		})
	}))
	t.Cleanup(s.Close)
	return s, func() int { mu.Lock(); defer mu.Unlock(); return n }
}

// The model's repetition judge closes the loops a character-bigram score
// misses (paraphrase, thank-you and farewell loops, ja and en), leaves a
// lively conversation alone, and the local score still catches verbatim
// repeats — through both providers' real API formats (issue 18, defect 5).
// Before, only the local score judged: none of the loops was closed.
func TestModelRepetitionJudgeClosesParaphrasedLoops(t *testing.T) {
	local := repetition.Judge{Window: 5}
	for _, provider := range []string{"openai", "anthropic"} {
		for _, c := range loopCases {
			t.Run(provider+"/"+c.name+"/"+c.lang, func(t *testing.T) {
				if s := local.Score(c.lines); (s > repetition.DefaultThreshold) == c.localMisses {
					t.Fatalf("local score %.2f: the case does not show what it is meant to", s)
				}
				var judge brain.RepetitionJudge
				var judged func() int
				var windows func() [][]string
				switch provider {
				case "openai":
					fake := llmtest.New()
					t.Cleanup(fake.Close)
					fake.Judge = oracle(t)
					judge = &llm.Brain{Chat: openai.New(openai.Config{BaseURL: fake.BaseURL(), Model: "qwen2.5-7b-instruct"})}
					judged = func() int { return len(fake.Judged()) }
					windows = fake.Judged
				case "anthropic":
					srv, n := anthropicFake(t, oracle(t))
					judge = &llm.Brain{Chat: anthropic.New(anthropic.Config{BaseURL: srv.URL, APIKey: "sk-ant-test", Model: "claude-haiku-4-5", MaxRetries: -1})}
					judged = n
				}
				r := newJudgeRig(t, c.lang, func(cfg *companion.Config) {
					cfg.Judge, cfg.JudgeEvery, cfg.Window = judge, 5, 5
				})
				in := r.conversation(c, judged)
				if judged() != 1 {
					t.Fatalf("the judge was asked %d times about six messages, want once (every 5)", judged())
				}
				if windows != nil && !slices.Equal(windows()[0], c.lines) {
					t.Errorf("the judge saw %q, want the last five lines", windows()[0])
				}
				want := ""
				if c.repeats {
					want = brain.ClosingInstruction(c.lang)
				}
				if in.ClosingInstruction != want {
					t.Fatalf("closing instruction %q, want %q", in.ClosingInstruction, want)
				}
			})
		}
	}
}

// A slow or failing judge holds nothing up and leaves the local score to
// decide: verbatim repeats are still closed, paraphrases are not (nobody
// can tell), and the failure is counted. The judge asked at most once per
// JudgeEvery messages, and "off" turns judging off altogether.
func TestRepetitionJudgeFallbackAndSwitch(t *testing.T) {
	verbatim, paraphrase := loopCases[9], loopCases[1]
	tests := []struct {
		name    string
		c       loopCase
		slow    bool
		fails   bool
		off     bool
		want    bool // closing instruction added
		failure string
	}{
		{"slow model, verbatim", verbatim, true, false, false, true, "judge_timeout"},
		{"failing model, verbatim", verbatim, false, true, false, true, "judge_error"},
		{"failing model, paraphrase", paraphrase, false, true, false, false, "judge_error"},
		{"judge off, verbatim", verbatim, false, false, true, false, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fake := llmtest.New()
			t.Cleanup(fake.Close)
			fake.Judge = oracle(t)
			fake.JudgeFails = tt.fails
			if tt.slow {
				fake.JudgeLatency = 3 * time.Second
			}
			var r *judgeRig
			r = newJudgeRig(t, tt.c.lang, func(cfg *companion.Config) {
				cfg.Judge = &llm.Brain{Chat: openai.New(openai.Config{BaseURL: fake.BaseURL(), Model: "m", MaxRetries: -1})}
				cfg.JudgeEvery, cfg.JudgeTimeout, cfg.NoRepetition = 5, 500*time.Millisecond, tt.off
			})
			for i, l := range tt.c.lines {
				r.say([]string{"hana", "aya"}[i%2], l)
			}
			// While the judge thinks (3 s for the slow one), the companion
			// goes on thinking about every message at once.
			start := time.Now()
			in := r.say("hana", "…")
			if d := time.Since(start); d > 2*time.Second {
				t.Fatalf("a message took %v to be thought about while the judge was out", d)
			}
			if got := in.ClosingInstruction != ""; got != tt.want {
				t.Fatalf("closing instruction %q, want added %v", in.ClosingInstruction, tt.want)
			}
			if tt.off && len(fake.Judged()) != 0 {
				t.Fatal("the judge was asked although judging is off")
			}
			if tt.failure != "" {
				deadline := time.Now().Add(5 * time.Second)
				for metrics.Value(r.m.BrainFailures.WithLabelValues(tt.failure)) == 0 && time.Now().Before(deadline) {
					time.Sleep(10 * time.Millisecond)
				}
				if metrics.Value(r.m.BrainFailures.WithLabelValues(tt.failure)) != 1 {
					t.Fatalf("%s not counted once", tt.failure)
				}
			}
		})
	}
}
