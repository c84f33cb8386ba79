package anthropic

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

// ev is one event of the Messages API's stream, as the API writes it:
// its name, and its data with the same type.
func ev(name string, data map[string]any) string {
	data["type"] = name
	b, _ := json.Marshal(data)
	return "event: " + name + "\ndata: " + string(b)
}

func start() string {
	return ev("message_start", map[string]any{"message": map[string]any{"id": "msg_1", "type": "message", "role": "assistant",
		"content": []any{}, "model": "claude-x", "stop_reason": nil, "usage": map[string]any{"input_tokens": 25, "output_tokens": 1}}})
}

func blockStart(i int, block map[string]any) string {
	return ev("content_block_start", map[string]any{"index": i, "content_block": block})
}

func textDelta(i int, s string) string {
	return ev("content_block_delta", map[string]any{"index": i, "delta": map[string]any{"type": "text_delta", "text": s}})
}

func stop(reason string) []string {
	return []string{ev("message_delta", map[string]any{"delta": map[string]any{"stop_reason": reason, "stop_sequence": nil}, "usage": map[string]any{"output_tokens": 15}}),
		ev("message_stop", map[string]any{})}
}

func streamChat(s *server, log *logtest.Buffer) *Chat {
	cfg := Config{BaseURL: s.URL, Model: "claude-x", APIKey: "sk-ant-test"}
	if log != nil {
		cfg.Log = slog.New(slog.NewTextHandler(log, nil))
	}
	return New(cfg)
}

func ask() llm.Request {
	return llm.Request{System: "s", Turns: []llm.Turn{{Role: llm.User, Text: "hi"}}}
}

// The text streams in its deltas, heard as they come, between pings; a
// tool use's input arrives in partial JSON pieces.
func TestChatStreamTextAndToolUse(t *testing.T) {
	events := []string{start(), blockStart(0, map[string]any{"type": "text", "text": ""}), ev("ping", map[string]any{}),
		textDelta(0, `{"state":"speak",`), textDelta(0, `"importance":7}`), ev("content_block_stop", map[string]any{"index": 0}),
		blockStart(1, map[string]any{"type": "tool_use", "id": "toolu_1", "name": "look", "input": map[string]any{}}),
		ev("content_block_delta", map[string]any{"index": 1, "delta": map[string]any{"type": "input_json_delta", "partial_json": `{"dir":`}}),
		ev("content_block_delta", map[string]any{"index": 1, "delta": map[string]any{"type": "input_json_delta", "partial_json": `"left"}`}}),
		ev("content_block_stop", map[string]any{"index": 1})}
	s := newServer(t, llmtest.Events(t, append(events, stop("tool_use")...)...))
	var pieces []string
	out, err := streamChat(s, nil).ChatStream(context.Background(), ask(), func(p string) { pieces = append(pieces, p) })
	if err != nil || out.Text != `{"state":"speak","importance":7}` || len(out.ToolCalls) != 1 || out.ToolCalls[0].Name != "look" ||
		string(out.ToolCalls[0].Args) != `{"dir":"left"}` {
		t.Fatalf("out %+v, err %v", out, err)
	}
	if strings.Join(pieces, "|") != `{"state":"speak",|"importance":7}` {
		t.Fatalf("pieces %q", pieces)
	}
	if h := s.Headers[0]; h.Get("Accept") != "text/event-stream" || h.Get("X-Api-Key") != "sk-ant-test" || h.Get("Anthropic-Version") == "" {
		t.Fatalf("headers %v", h)
	}
}

// An answer is complete at message_stop, though the server holds the
// connection open after it.
func TestChatStreamCompleteAtMessageStop(t *testing.T) {
	held := make(chan struct{})
	events := append([]string{start(), blockStart(0, map[string]any{"type": "text", "text": ""}), textDelta(0, "Hi.")}, stop("end_turn")...)
	s := newServer(t, llmtest.HeldEvents(t, held, events...))
	t.Cleanup(func() { close(held) }) // before the server closes
	c := New(Config{BaseURL: s.URL, Model: "claude-x", StreamIdle: time.Minute})
	if out, err := c.ChatStream(context.Background(), ask(), nil); err != nil || out.Text != "Hi." {
		t.Fatalf("out %+v, err %v", out, err)
	}
}

// A stream cut before message_stop, an error event (overloaded), or
// events out of order are errors; what was heard was heard.
func TestChatStreamCutOrFailed(t *testing.T) {
	begun := []string{start(), blockStart(0, map[string]any{"type": "text", "text": ""}), textDelta(0, "Hello.")}
	for _, tc := range []struct {
		name   string
		events []string
		want   string
	}{
		{"cut", begun, "ended before the answer did"},
		{"overloaded", append(append([]string{}, begun...), ev("error", map[string]any{"error": map[string]any{"type": "overloaded_error", "message": "Overloaded"}})), "Overloaded"},
		{"delta before its block", []string{start(), textDelta(0, "x")}, "a delta for no content block"},
		{"no message_start", []string{blockStart(0, map[string]any{"type": "text"})}, "before message_start"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newServer(t, llmtest.Events(t, tc.events...))
			_, err := streamChat(s, nil).ChatStream(context.Background(), ask(), nil)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err %v, want %q", err, tc.want)
			}
		})
	}
}

// A server that refuses stream (a 400 naming it) is asked again whole,
// and from then on only whole, said once.
func TestChatStreamFallsBackOnceAndRemembers(t *testing.T) {
	refuse := func(w http.ResponseWriter, req map[string]any) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		json.NewEncoder(w).Encode(map[string]any{"type": "error", "error": map[string]any{"type": "invalid_request_error", "message": "stream: Extra inputs are not permitted"}})
	}
	whole := reply("end_turn", text("Hello there."))
	s := newServer(t, refuse, whole, whole)
	var log logtest.Buffer
	c := streamChat(s, &log)
	for i := range 2 {
		heard := ""
		out, err := c.ChatStream(context.Background(), ask(), func(p string) { heard += p })
		if err != nil || out.Text != "Hello there." || heard != "Hello there." {
			t.Fatalf("call %d: out %+v, heard %q, err %v", i, out, heard, err)
		}
	}
	if reqs := s.Requests(); len(reqs) != 3 || reqs[0]["stream"] != true || reqs[2]["stream"] != nil {
		t.Fatalf("requests %d; stream %v then %v", len(reqs), reqs[0]["stream"], reqs[len(reqs)-1]["stream"])
	}
	if n := strings.Count(log.String(), "asking it for whole answers"); n != 1 {
		t.Fatalf("said %d times:\n%s", n, log.String())
	}
}

// FuzzAssembler: no stream of events makes the assembler panic; what it
// accepts names every tool call. Each line of the input is an event.
func FuzzAssembler(f *testing.F) {
	data := func(e string) string { _, d, _ := strings.Cut(e, "\ndata: "); return d }
	f.Add([]byte(strings.Join([]string{data(start()), data(blockStart(0, map[string]any{"type": "tool_use", "id": "t", "name": "n"})), data(stop("end_turn")[1])}, "\n")))
	f.Add([]byte(strings.Join([]string{data(start()), data(textDelta(0, "x")), `{"type":"error","error":"x"}`}, "\n")))
	f.Add([]byte(strings.Join([]string{`{"type":"message_stop"}`, `{"type":"ping"}`, `{}`}, "\n")))
	f.Fuzz(func(t *testing.T, b []byte) {
		var a Assembler
		llmtest.CheckDecoded(t, llmtest.Streamed(a.Add, a.Response), b)
	})
}
