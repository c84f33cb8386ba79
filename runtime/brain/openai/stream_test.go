package openai

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/chorus-robotics/chorus/runtime/brain/llm"
	"github.com/chorus-robotics/chorus/runtime/brain/llm/llmtest"
	"github.com/chorus-robotics/chorus/runtime/logtest"
)

// delta is one chat.completion.chunk event, as OpenAI and llama.cpp
// write them.
func delta(d map[string]any, finish any) string {
	b, _ := json.Marshal(map[string]any{"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1763770000, "model": "m",
		"choices": []any{map[string]any{"index": 0, "delta": d, "logprobs": nil, "finish_reason": finish}}})
	return "data: " + string(b)
}

func streamChat(s *server, log *logtest.Buffer) *Chat {
	cfg := Config{BaseURL: s.URL + "/v1", Model: "m", APIKey: "sk-test"}
	if log != nil {
		cfg.Log = slog.New(slog.NewTextHandler(log, nil))
	}
	return New(cfg)
}

// The text streams in pieces heard as they come; a usage chunk without
// choices is skipped; the answer is whole at [DONE].
func TestChatStreamText(t *testing.T) {
	s := newServer(t, llmtest.Events(t,
		delta(map[string]any{"role": "assistant", "content": ""}, nil),
		delta(map[string]any{"content": `{"state":"speak",`}, nil),
		delta(map[string]any{"content": `"importance":7}`}, nil),
		delta(map[string]any{}, "stop"),
		`data: {"id":"chatcmpl-1","object":"chat.completion.chunk","choices":[],"usage":{"prompt_tokens":9,"completion_tokens":4}}`,
		"data: [DONE]"))
	var pieces []string
	out, err := streamChat(s, nil).ChatStream(context.Background(), llm.Request{System: "s", Turns: []llm.Turn{{Role: llm.User, Text: "hi"}}},
		func(p string) { pieces = append(pieces, p) })
	if err != nil || out.Text != `{"state":"speak","importance":7}` || out.Truncated {
		t.Fatalf("out %+v, err %v", out, err)
	}
	if strings.Join(pieces, "|") != `{"state":"speak",|"importance":7}` {
		t.Fatalf("pieces %q", pieces)
	}
	if h := s.Headers[0]; h.Get("Accept") != "text/event-stream" || h.Get("Authorization") != "Bearer sk-test" {
		t.Fatalf("headers %v", h)
	}
}

// An answer is complete at [DONE], though the server holds the
// connection open after it (a stall would cut it after the idle limit).
func TestChatStreamCompleteAtDone(t *testing.T) {
	held := make(chan struct{})
	s := newServer(t, llmtest.HeldEvents(t, held, delta(map[string]any{"content": "Hi."}, nil), delta(map[string]any{}, "stop"), "data: [DONE]"))
	t.Cleanup(func() { close(held) }) // before the server closes
	c := New(Config{BaseURL: s.URL + "/v1", Model: "m", StreamIdle: time.Minute})
	if out, err := c.ChatStream(context.Background(), llm.Request{System: "s", Turns: []llm.Turn{{Role: llm.User, Text: "hi"}}}, nil); err != nil || out.Text != "Hi." {
		t.Fatalf("out %+v, err %v", out, err)
	}
}

// Tool calls stream too: the id and the name first, the arguments in
// pieces, two calls told apart by their index.
func TestChatStreamToolCalls(t *testing.T) {
	call := func(i int, id, name, args string) map[string]any {
		f := map[string]any{"arguments": args}
		if name != "" {
			f["name"] = name
		}
		c := map[string]any{"index": i, "function": f}
		if id != "" {
			c["id"], c["type"] = id, "function"
		}
		return map[string]any{"tool_calls": []any{c}}
	}
	s := newServer(t, llmtest.Events(t,
		delta(call(0, "call_1", "look", ""), nil),
		delta(call(0, "", "", `{"dir`), nil),
		delta(call(0, "", "", `":"left"}`), nil),
		delta(call(1, "call_2", "nod", "{}"), nil),
		delta(map[string]any{}, "tool_calls"),
		"data: [DONE]"))
	out, err := streamChat(s, nil).ChatStream(context.Background(), llm.Request{System: "s", Turns: []llm.Turn{{Role: llm.User, Text: "hi"}}}, nil)
	if err != nil || len(out.ToolCalls) != 2 || out.ToolCalls[0].ID != "call_1" || out.ToolCalls[0].Name != "look" ||
		string(out.ToolCalls[0].Args) != `{"dir":"left"}` || out.ToolCalls[1].Name != "nod" {
		t.Fatalf("out %+v, err %v", out, err)
	}
}

// A stream cut before its finish, or failing mid-answer, is an error;
// what was heard was heard.
func TestChatStreamCutOrFailed(t *testing.T) {
	for _, tc := range []struct {
		name   string
		events []string
		want   string
	}{
		{"cut", []string{delta(map[string]any{"content": "Hello. I"}, nil)}, "ended before the answer did"},
		{"error event", []string{delta(map[string]any{"content": "Hello."}, nil), `data: {"error":{"message":"the model crashed","type":"server_error"}}`}, "the model crashed"},
		{"not a chunk", []string{"data: nonsense"}, "not a chat.completion.chunk"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newServer(t, llmtest.Events(t, tc.events...))
			heard := ""
			_, err := streamChat(s, nil).ChatStream(context.Background(), llm.Request{System: "s", Turns: []llm.Turn{{Role: llm.User, Text: "hi"}}},
				func(p string) { heard += p })
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err %v, want %q", err, tc.want)
			}
			if tc.name != "not a chunk" && !strings.HasPrefix(heard, "Hello.") {
				t.Fatalf("heard %q", heard)
			}
		})
	}
}

// A server that refuses stream (a 400 naming it) is asked again for the
// whole answer, and from then on only for whole answers, said once in
// the log; so is one that answers a stream request whole.
func TestChatStreamFallsBackOnceAndRemembers(t *testing.T) {
	refuse := func(w http.ResponseWriter, req map[string]any) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		json.NewEncoder(w).Encode(map[string]any{"error": map[string]any{"message": "Unsupported parameter: 'stream'", "type": "invalid_request_error"}})
	}
	whole := completion("Hello there.", "stop")
	for _, tc := range []struct {
		name    string
		replies []llmtest.Reply
	}{
		{"refused", []llmtest.Reply{refuse, whole, whole}},
		{"answered whole", []llmtest.Reply{whole, whole}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newServer(t, tc.replies...)
			var log logtest.Buffer
			c := streamChat(s, &log)
			r := llm.Request{System: "s", Turns: []llm.Turn{{Role: llm.User, Text: "hi"}}}
			for i := range 2 {
				heard := ""
				out, err := c.ChatStream(context.Background(), r, func(p string) { heard += p })
				if err != nil || out.Text != "Hello there." || heard != "Hello there." {
					t.Fatalf("call %d: out %+v, heard %q, err %v", i, out, heard, err)
				}
			}
			reqs := s.Requests()
			if len(reqs) != len(tc.replies) || reqs[len(reqs)-1]["stream"] != nil {
				t.Fatalf("%d requests, the last with stream %v", len(reqs), reqs[len(reqs)-1]["stream"])
			}
			if n := strings.Count(log.String(), "asking it for whole answers"); n != 1 {
				t.Fatalf("said %d times:\n%s", n, log.String())
			}
		})
	}
}

// FuzzAssembler: no stream of events makes the assembler panic; what it
// accepts names every tool call. Each line of the input is an event.
func FuzzAssembler(f *testing.F) {
	f.Add([]byte(strings.Join([]string{delta(map[string]any{"content": "hi"}, nil)[6:], delta(map[string]any{}, "stop")[6:], "[DONE]"}, "\n")))
	f.Add([]byte(strings.Join([]string{`{"choices":[{"delta":{"tool_calls":[{"index":0,"id":"c","function":{"name":"n","arguments":"{"}}]}}]}`, `{"choices":[{"delta":{"tool_calls":[{"index":0,"function":{"arguments":"}"}}]},"finish_reason":"tool_calls"}]}`, "[DONE]"}, "\n")))
	f.Add([]byte(strings.Join([]string{`{"choices":[{"delta":{"tool_calls":[{"index":5}]}}]}`, `{"error":"x"}`, ""}, "\n")))
	f.Fuzz(func(t *testing.T, b []byte) {
		var a Assembler
		llmtest.CheckDecoded(t, llmtest.Streamed(a.Add, a.Response), b)
	})
}
