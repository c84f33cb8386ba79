package openai

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/chorus-robotics/chorus/runtime/brain"
	"github.com/chorus-robotics/chorus/runtime/brain/llm"
	"github.com/chorus-robotics/chorus/runtime/brain/llm/llmtest"
	"github.com/chorus-robotics/chorus/runtime/metrics"
	"github.com/chorus-robotics/chorus/runtime/protocol"
)

// server is an OpenAI-compatible endpoint that answers /chat/completions
// with scripted replies and keeps every request for the test to check.
type server = llmtest.Scripted

// imageProblem finds an image_url part the real API refuses (no or a
// wrong media type, bad base64, bytes not of the type named).
func imageProblem(req map[string]any) string {
	for _, pm := range llmtest.Parts(req, "image_url") {
		iu, _ := pm["image_url"].(map[string]any)
		url, _ := iu["url"].(string)
		if why := llmtest.DataURLProblem(url); why != "" {
			return why
		}
		if _, data, _ := strings.Cut(url, ","); len(data)/4*3 > 20<<20 { // 20 MB per image (llm.NewImage refuses more)
			return "image too large: over 20 MB"
		}
	}
	return ""
}

func newServer(t *testing.T, replies ...llmtest.Reply) *server {
	return llmtest.NewScripted(t, "/v1/chat/completions", imageProblem, func(w http.ResponseWriter, why string) {
		json.NewEncoder(w).Encode(map[string]any{"error": map[string]any{"message": why, "type": "invalid_request_error", "param": nil, "code": nil}})
	}, replies...)
}

// completion writes a chat.completion the way OpenAI and llama.cpp do.
func completion(content string, finish string, toolCalls ...map[string]any) func(http.ResponseWriter, map[string]any) {
	return func(w http.ResponseWriter, req map[string]any) {
		msg := map[string]any{"role": "assistant", "content": content, "refusal": nil}
		if len(toolCalls) > 0 {
			msg["content"] = nil
			msg["tool_calls"] = toolCalls
		}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{
			"id": "chatcmpl-abc123", "object": "chat.completion", "created": 1763770000, "model": req["model"],
			"choices": []any{map[string]any{"index": 0, "message": msg, "logprobs": nil, "finish_reason": finish}},
			"usage":   map[string]any{"prompt_tokens": 412, "completion_tokens": 58, "total_tokens": 470},
		})
	}
}

func scriptedToolCall(id, name, args string) map[string]any {
	return map[string]any{"id": id, "type": "function", "function": map[string]any{"name": name, "arguments": args}}
}

func input() brain.Input {
	return brain.Input{
		Card:    brain.Card{ID: "kyoko", Name: "Kyoko", Personality: "cheerful", Language: "en"},
		Message: protocol.NewMessage("m1", "user", []string{"kyoko"}, "Kyoko, what do you see?", ""),
		Present: []string{"kyoko", "hana"}, Remaining: -1,
	}
}

func brainFor(s *server, look llm.Looker, draft bool, log *slog.Logger) *llm.Brain {
	return &llm.Brain{Chat: New(Config{BaseURL: s.URL + "/v1", APIKey: "sk-test-123", Model: "qwen2.5-7b-instruct", MaxRetries: 2}),
		Look: look, Draft: draft, Log: log}
}

const goodState = `{"state":"speak","importance":8,"selected":true,"closing":"none","draft":{"message":"I see a red cup on the table!","to":["user"],"emotion":"happy"}}`

func TestThinkOneCallWithSchema(t *testing.T) {
	s := newServer(t, completion(goodState, "stop"))
	th, err := brainFor(s, nil, true, nil).Think(context.Background(), input())
	if err != nil {
		t.Fatal(err)
	}
	if th.State != protocol.Speak || th.Importance != 8 || !th.Selected || th.Draft != "I see a red cup on the table!" || th.Emotion != protocol.EmotionHappy {
		t.Fatalf("thought %+v", th)
	}
	req := s.Requests()[0]
	if req["model"] != "qwen2.5-7b-instruct" {
		t.Errorf("model %v", req["model"])
	}
	if h := s.Headers[0].Get("Authorization"); h != "Bearer sk-test-123" {
		t.Errorf("Authorization %q", h)
	}
	rf := req["response_format"].(map[string]any)
	js := rf["json_schema"].(map[string]any)
	if rf["type"] != "json_schema" || js["name"] != "companion_state" || js["strict"] != true {
		t.Errorf("response_format %v", rf)
	}
	props := js["schema"].(map[string]any)["properties"].(map[string]any)
	for _, f := range []string{"state", "importance", "closing", "draft"} {
		if props[f] == nil {
			t.Errorf("schema lacks %s", f)
		}
	}
	if props["selected"] != nil { // brain.Addressed decides it: the vote is shorter (issue 40)
		t.Errorf("the schema asks the model for selected")
	}
	msgs := req["messages"].([]any)
	if msgs[0].(map[string]any)["role"] != "system" || !strings.Contains(msgs[1].(map[string]any)["content"].(string), "Kyoko, what do you see?") {
		t.Errorf("messages %v", msgs)
	}
	if req["tools"] != nil {
		t.Errorf("tools offered without a camera: %v", req["tools"])
	}
}

func TestVisionToolSendsTheImage(t *testing.T) {
	var sawImage string
	s := newServer(t,
		completion("", "tool_calls", scriptedToolCall("call_1", "vision", "{}")),
		func(w http.ResponseWriter, req map[string]any) {
			msgs := req["messages"].([]any)
			parts := msgs[len(msgs)-1].(map[string]any)["content"].([]any)
			for _, p := range parts {
				pm := p.(map[string]any)
				if pm["type"] == "image_url" {
					sawImage = pm["image_url"].(map[string]any)["url"].(string)
				}
			}
			completion("A red cup on a wooden table.", "stop")(w, req)
		},
		func(w http.ResponseWriter, req map[string]any) {
			msgs := req["messages"].([]any)
			last := msgs[len(msgs)-1].(map[string]any)
			if last["role"] != "tool" || last["tool_call_id"] != "call_1" || last["content"] != "A red cup on a wooden table." {
				t.Errorf("tool result %v", last)
			}
			if msgs[len(msgs)-2].(map[string]any)["tool_calls"] == nil {
				t.Errorf("the assistant's tool call was not sent back")
			}
			completion(goodState, "stop")(w, req)
		},
	)
	look := func(context.Context) (llm.Image, error) {
		// what aikyo's client answers: {image}, no type
		return llm.NewImage("/9j/4AAQ", "")
	}
	th, err := brainFor(s, look, true, nil).Think(context.Background(), input())
	if err != nil {
		t.Fatal(err)
	}
	if sawImage != "data:image/jpeg;base64,/9j/4AAQ" || th.Draft == "" || len(s.Refused) > 0 {
		t.Fatalf("image part %q, thought %+v", sawImage, th)
	}
	tools := s.Requests()[0]["tools"].([]any)
	if tools[0].(map[string]any)["function"].(map[string]any)["name"] != "vision" {
		t.Errorf("tools %v", tools)
	}
}

func TestModelWithoutImagesGoesOnWithoutVision(t *testing.T) {
	s := newServer(t,
		completion("", "tool_calls", scriptedToolCall("call_1", "vision", "{}")),
		func(w http.ResponseWriter, req map[string]any) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(400)
			io.WriteString(w, `{"error":{"message":"image input is not supported by this model","type":"invalid_request_error","code":null}}`)
		},
		func(w http.ResponseWriter, req map[string]any) {
			msgs := req["messages"].([]any)
			if c := msgs[len(msgs)-1].(map[string]any)["content"].(string); !strings.Contains(c, "not available") {
				t.Errorf("tool result %q", c)
			}
			completion(goodState, "stop")(w, req)
		},
	)
	var logs bytes.Buffer
	look := func(context.Context) (llm.Image, error) { return llm.Image{MIME: "image/jpeg", Base64: "AAAA"}, nil }
	if _, err := brainFor(s, look, true, slog.New(slog.NewTextHandler(&logs, nil))).Think(context.Background(), input()); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(logs.String(), "does not accept images") {
		t.Fatalf("no clear log line:\n%s", logs.String())
	}
}

func TestRetriesA429ThenSucceeds(t *testing.T) {
	s := newServer(t,
		func(w http.ResponseWriter, req map[string]any) {
			w.Header().Set("Retry-After-Ms", "10")
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(429)
			io.WriteString(w, `{"error":{"message":"Rate limit reached","type":"requests","code":"rate_limit_exceeded"}}`)
		},
		completion(goodState, "stop"),
	)
	if _, err := brainFor(s, nil, true, nil).Think(context.Background(), input()); err != nil {
		t.Fatal(err)
	}
	if n := len(s.Requests()); n != 2 {
		t.Fatalf("%d requests", n)
	}
}

func TestBadAnswersAreErrors(t *testing.T) {
	tests := []struct {
		name  string
		reply func(http.ResponseWriter, map[string]any)
		want  string
	}{
		{"refusal", func(w http.ResponseWriter, req map[string]any) {
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, `{"id":"x","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":null,"refusal":"I can't help with that."},"finish_reason":"stop"}]}`)
		}, "refused"},
		{"truncated JSON", completion(`{"state":"speak","importance":`, "length"), "cut off"},
		{"invalid JSON", completion(`Sure! Here is my state: speak`, "stop"), "not the JSON"},
		{"importance out of range", completion(`{"state":"speak","importance":11,"selected":false,"closing":"none","draft":{"message":"hi","to":[],"emotion":"happy"}}`, "stop"), "outside 0..10"},
		{"unknown enum", completion(`{"state":"shout","importance":1,"selected":false,"closing":"none","draft":{"message":"hi","to":[],"emotion":"happy"}}`, "stop"), "not speak or listen"},
		{"empty utterance", completion(`{"state":"speak","importance":5,"selected":false,"closing":"none","draft":{"message":"  ","to":[],"emotion":"neutral"}}`, "stop"), "empty utterance"},
		{"server error", func(w http.ResponseWriter, _ map[string]any) { http.Error(w, "boom", 500) }, "500"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			replies := []llmtest.Reply{tt.reply, tt.reply, tt.reply}
			s := newServer(t, replies...)
			_, err := brainFor(s, nil, true, nil).Think(context.Background(), input())
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want %q", err, tt.want)
			}
		})
	}
}

func TestTimeout(t *testing.T) {
	release := make(chan struct{})
	defer close(release)
	s := newServer(t, func(w http.ResponseWriter, req map[string]any) { <-release })
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := brainFor(s, nil, true, nil).Think(ctx, input())
	if !errors.Is(err, context.DeadlineExceeded) || time.Since(start) > time.Second {
		t.Fatalf("err = %v after %v", err, time.Since(start))
	}
}

func TestUtterTwoCallPathUsesSpeak(t *testing.T) {
	s := newServer(t, completion("", "tool_calls", scriptedToolCall("call_9", "speak", `{"message":"Hello, Hana!","to":["hana"],"emotion":"happy"}`)))
	u, err := brainFor(s, nil, false, nil).Utter(context.Background(), input())
	if err != nil {
		t.Fatal(err)
	}
	if u.Text != "Hello, Hana!" || u.Emotion != protocol.EmotionHappy || len(u.To) != 1 {
		t.Fatalf("utterance %+v", u)
	}
	req := s.Requests()[0]
	tc := req["tool_choice"].(map[string]any)
	if tc["type"] != "function" || tc["function"].(map[string]any)["name"] != "speak" {
		t.Errorf("tool_choice %v", tc)
	}
	params := req["tools"].([]any)[0].(map[string]any)["function"].(map[string]any)["parameters"].(map[string]any)
	if params["properties"].(map[string]any)["emotion"] == nil {
		t.Errorf("speak parameters %v", params)
	}
}

func TestJSONModeFallback(t *testing.T) {
	s := newServer(t, completion("```json\n"+goodState+"\n```", "stop"))
	b := &llm.Brain{Chat: New(Config{BaseURL: s.URL + "/v1", Model: "llama3", JSONMode: true}), Draft: true}
	if _, err := b.Think(context.Background(), input()); err != nil {
		t.Fatal(err)
	}
	req := s.Requests()[0]
	if req["response_format"].(map[string]any)["type"] != "json_object" {
		t.Errorf("response_format %v", req["response_format"])
	}
	sys := req["messages"].([]any)[0].(map[string]any)["content"].(string)
	if !strings.Contains(sys, `"additionalProperties":false`) {
		t.Errorf("the schema is not in the prompt:\n%s", sys)
	}
}

// A rate limit whose Retry-After is longer than the brain's deadline ends
// the call at once with a clear error (issue 15, defect 4); before, the SDK
// slept until the deadline and said only "context deadline exceeded".
func TestRateLimitPastTheDeadlineFailsAtOnce(t *testing.T) {
	s := newServer(t, func(w http.ResponseWriter, req map[string]any) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Retry-After", "30")
		w.WriteHeader(429)
		io.WriteString(w, `{"error":{"message":"Rate limit reached","type":"requests","code":"rate_limit_exceeded"}}`)
	})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	start := time.Now()
	_, err := brainFor(s, nil, true, nil).Think(ctx, input())
	if err == nil || !strings.Contains(err.Error(), "rate limited") || !strings.Contains(err.Error(), "30s") {
		t.Fatalf("err = %v, want a rate limit naming the 30 s asked", err)
	}
	if d := time.Since(start); d > 500*time.Millisecond {
		t.Fatalf("returned after %v, slept toward the deadline", d)
	}
}

// A model's draft of any length is cut where it is parsed, at a sentence
// boundary, to brain.max_utterance, and counted (issue 15, defect 2): a
// 10,000-character draft and a 5 MB one alike.
func TestLongDraftsAreCutAtASentenceBoundary(t *testing.T) {
	for name, n := range map[string]int{"10k characters": 10_000, "5 MB": 5 << 20} {
		t.Run(name, func(t *testing.T) {
			long := strings.Repeat("This is a sentence. ", n/20)
			state, _ := json.Marshal(map[string]any{"state": "speak", "importance": 5, "selected": false, "closing": "none",
				"draft": map[string]any{"message": long, "to": []string{}, "emotion": "happy"}})
			s := newServer(t, completion(string(state), "stop"))
			m := metrics.New()
			b := brainFor(s, nil, true, nil)
			b.MaxUtterance, b.Metrics = 120, m
			th, err := b.Think(context.Background(), input())
			if err != nil {
				t.Fatal(err)
			}
			if n := utf8.RuneCountInString(th.Draft); n > 120 || n < 100 || !strings.HasSuffix(th.Draft, ".") {
				t.Fatalf("draft of %d characters, ending %q", n, th.Draft[max(0, len(th.Draft)-10):])
			}
			if c := metrics.Value(m.Clipped); c != 1 {
				t.Fatalf("clipped = %v", c)
			}
		})
	}
}

// Whom the model addresses is kept to the room: its members and who spoke
// (issue 15, defect 3). The JSON schema bounds importance (defect 5).
func TestAddresseesKeptToTheRoomAndImportanceBounded(t *testing.T) {
	s := newServer(t, completion(`{"state":"speak","importance":5,"selected":false,"closing":"none","draft":{"message":"Hi!","to":["hana","mallory","kyoko","user","hana"],"emotion":"happy"}}`, "stop"))
	in := input()
	in.Members = []string{"kyoko", "hana"}
	th, err := brainFor(s, nil, true, nil).Think(context.Background(), in)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(th.To, ",") != "hana,user" {
		t.Fatalf("to = %v, want hana and the user who spoke (not mallory, not itself, once each)", th.To)
	}
	imp := s.Requests()[0]["response_format"].(map[string]any)["json_schema"].(map[string]any)["schema"].(map[string]any)["properties"].(map[string]any)["importance"].(map[string]any)
	if imp["minimum"] != 0.0 || imp["maximum"] != 10.0 {
		t.Fatalf("importance schema %v, want minimum 0 and maximum 10", imp)
	}
}

// The realtime talk (issue 12): the seed's talk_realtime prompt in the
// card's language, free text (no schema, no tools), and the three answers
// read as the model writes them.
func TestTalkRealtimePrompt(t *testing.T) {
	history := []protocol.Talk{{Idx: 0, Agent: "user", Text: "Good morning!"}, {Idx: 1, Agent: "hana", Text: "Kyoko, did you sleep well?"}}
	for _, tt := range []struct {
		lang, answer, want string
		prompt             []string
	}{
		{"en", "I slept like a log, hana!", "I slept like a log, hana!", []string{"realtime group chat", "Utterances you have left in this phase: 7",
			`{"idx":1,"agent":"hana","text":"Kyoko, did you sleep well?"}`, "answer with only LISTEN", "answer with only Over"}},
		{"en", "  LISTEN.  ", protocol.TalkListen, nil},
		{"en", "Kyoko: Over", protocol.PostOver, nil},
		{"ja", "「LISTEN」", protocol.TalkListen, []string{"リアルタイムのグループチャット", "残り発言回数: 7回", "「LISTEN」とだけ", "「Over」とだけ",
			`{"idx":0,"agent":"user","text":"Good morning!"}`}},
		{"ja", "よく眠れたよ、hana！", "よく眠れたよ、hana！", nil},
	} {
		s := newServer(t, completion(tt.answer, "stop"))
		in := brain.TalkInput{Card: brain.Card{ID: "kyoko", Name: "Kyoko", Language: tt.lang}, Remaining: 7, History: history,
			Members: []string{"kyoko", "hana"}}
		got, err := brainFor(s, nil, true, nil).Talk(context.Background(), in)
		if err != nil || got.Text != tt.want {
			t.Fatalf("%s %q: got %q, %v; want %q", tt.lang, tt.answer, got.Text, err, tt.want)
		}
		req := s.Requests()[0]
		if req["response_format"] != nil || req["tools"] != nil {
			t.Errorf("a realtime talk asked for structure: %v %v", req["response_format"], req["tools"])
		}
		msgs := req["messages"].([]any)
		user := msgs[1].(map[string]any)["content"].(string)
		for _, want := range tt.prompt {
			if !strings.Contains(user, want) {
				t.Errorf("%s prompt lacks %q:\n%s", tt.lang, want, user)
			}
		}
	}
	s := newServer(t, completion("   ", "stop"))
	if _, err := brainFor(s, nil, true, nil).Talk(context.Background(), brain.TalkInput{Card: brain.Card{ID: "kyoko", Name: "Kyoko", Language: "en"}}); err == nil {
		t.Fatal("an empty answer was accepted")
	}
}

// The fake refuses what the API refuses: an untyped picture (what Chorus
// sent before it typed them) is a 400, and the turn goes on without it.
func TestServerRefusesAnUntypedImage(t *testing.T) {
	for _, img := range []llm.Image{{MIME: "", Base64: "/9j/4AAQ"}, {MIME: "image/png", Base64: "/9j/4AAQ"}, {MIME: "image/jpeg", Base64: "not base64!"}} {
		s := newServer(t,
			completion("", "tool_calls", scriptedToolCall("call_1", "vision", "{}")),
			completion("never asked", "stop"),
			completion(goodState, "stop"),
		)
		look := func(context.Context) (llm.Image, error) { return img, nil }
		if _, err := brainFor(s, look, true, nil).Think(context.Background(), input()); err != nil {
			t.Fatal(err)
		}
		if len(s.Refused) != 1 {
			t.Fatalf("%s %q: refused %v, want once", img.MIME, img.Base64, s.Refused)
		}
	}
}
