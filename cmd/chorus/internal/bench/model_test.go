package bench

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chorus-robotics/chorus/runtime/brain"
	"github.com/chorus-robotics/chorus/runtime/brain/llm"
	"github.com/chorus-robotics/chorus/runtime/brain/openai"
	"github.com/chorus-robotics/chorus/runtime/protocol"
)

// serveModel runs ServeModel on a free loopback port at a quick pace and
// returns the base URL it printed; it stops at the test's end.
func serveModel(t *testing.T) string {
	ctx, cancel := context.WithCancel(context.Background())
	pr, pw := io.Pipe()
	done := make(chan error, 1)
	go func() { done <- ServeModel(ctx, pw, "127.0.0.1:0", 20*time.Millisecond, 600); pw.Close() }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	})
	lines := bufio.NewScanner(pr)
	if !lines.Scan() {
		t.Fatal("fakemodel printed nothing")
	}
	go io.Copy(io.Discard, pr) // the rest of what it prints
	m := regexp.MustCompile(`http://127\.0\.0\.1:\d+/v1`).FindString(lines.Text())
	if m == "" {
		t.Fatalf("fakemodel printed no URL: %q", lines.Text())
	}
	return m
}

// chatCount counts a Chatter's streamed pieces.
type chatCount struct {
	c      *openai.Chat
	pieces atomic.Int64
}

func (c *chatCount) Chat(ctx context.Context, r llm.Request) (llm.Response, error) {
	return c.c.Chat(ctx, r)
}

func (c *chatCount) ChatStream(ctx context.Context, r llm.Request, text func(string)) (llm.Response, error) {
	return c.c.ChatStream(ctx, r, func(p string) {
		c.pieces.Add(1)
		if text != nil {
			text(p)
		}
	})
}

// `chorus fakemodel` answers a real brain on the OpenAI-compatible client,
// streamed and whole, as a model would: a valid State with its vote's
// fields first and a two-sentence draft, in pieces when streamed; its
// repetition judge finds little said twice.
func TestFakeModelAnswersABrain(t *testing.T) {
	url := serveModel(t)
	ctx := context.Background()
	in := brain.Input{Card: brain.Card{ID: "kyoko", Name: "Kyoko", Language: "en"}, Present: []string{"kyoko", "hana"},
		Message: protocol.NewMessage(protocol.NewID(), "user", nil, "Hello everyone! What did you do today?", "")}
	for _, whole := range []bool{false, true} {
		chat := &chatCount{c: openai.New(openai.Config{BaseURL: url, Model: "any"})}
		b := &llm.Brain{Chat: chat, Draft: true, Whole: whole}
		th, err := b.Think(ctx, in)
		if err != nil {
			t.Fatalf("whole %t: %v", whole, err)
		}
		if err := th.Validate(); err != nil || th.State != protocol.Speak || th.Importance < 3 || th.Importance > 8 {
			t.Errorf("whole %t: %+v (%v)", whole, th, err)
		}
		if n := strings.Count(th.Draft, ". "); n < 1 || len(th.Draft) < 120 || len(th.Draft) > 260 {
			t.Errorf("whole %t: want two sentences of about 200 characters, got %d: %q", whole, len(th.Draft), th.Draft)
		}
		if got := chat.pieces.Load(); whole != (got == 0) || !whole && got < 20 {
			t.Errorf("whole %t: %d streamed pieces", whole, got)
		}
		score, err := b.JudgeRepetition(ctx, "en", []protocol.Message{in.Message, protocol.NewMessage("m2", "kyoko", nil, th.Draft, "")})
		if err != nil || score > 0.3 {
			t.Errorf("whole %t: the repetition judge: %v, %v", whole, score, err)
		}
	}
	// What is streamed: the vote's fields first, then the draft.
	chat := openai.New(openai.Config{BaseURL: url, Model: "any"})
	var pieces []string
	resp, err := chat.ChatStream(ctx, llm.Request{System: `You are "Hana" (id: hana), talking.`, Turns: []llm.Turn{{Role: llm.User, Text: "Hello"}},
		Schema: llm.StateSchema(true, "en"), SchemaName: "companion_state"}, func(p string) { pieces = append(pieces, p) })
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(pieces, "") != resp.Text || len(pieces) < 20 {
		t.Fatalf("%d pieces of %q", len(pieces), resp.Text)
	}
	var keys []string
	dec := json.NewDecoder(strings.NewReader(resp.Text))
	dec.Token()
	for dec.More() {
		k, _ := dec.Token()
		keys = append(keys, k.(string))
		var v json.RawMessage
		dec.Decode(&v)
	}
	if strings.Join(keys, ",") != "state,importance,closing,draft" { // selected is not asked for (brain.Addressed)
		t.Errorf("keys in the order %v", keys)
	}
	if n, ok := FirstWordsTokens(resp.Text); !ok || n*4 < len(`{"state":"speak","importance":3,"closing":"none","draft":{"emotion":"happy","to":[],"message":"Oh."`) {
		t.Errorf("the vote and the first sentence: %d tokens of %q", n, resp.Text)
	}
}

// The fake model speaks a Japanese card's language.
func TestTalkSpeaksTheCardsLanguage(t *testing.T) {
	for _, me := range []string{"kyoko", "hana", "aya"} {
		for turn := range 4 {
			imp, ja := Talk(me, "ja", turn)
			_, en := Talk(me, "en", turn)
			if !strings.Contains(ja, "。") || strings.Contains(en, "。") || imp < 3 || imp > 8 {
				t.Errorf("%s turn %d: %v %q %q", me, turn, imp, ja, en)
			}
		}
	}
	if _, a := Talk("kyoko", "en", 0); func() bool { _, b := Talk("hana", "en", 0); return a == b }() {
		t.Errorf("two companions say the same: %q", a)
	}
}

// ServeModel refuses to serve beyond loopback.
func TestFakeModelServesOnLoopbackOnly(t *testing.T) {
	if err := ServeModel(context.Background(), io.Discard, "0.0.0.0:0", 0, 60); err == nil || !strings.Contains(err.Error(), "loopback") {
		t.Fatalf("err = %v", err)
	}
}
