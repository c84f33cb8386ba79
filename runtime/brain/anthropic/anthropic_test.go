package anthropic

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/chorus-robotics/chorus/runtime/brain"
	"github.com/chorus-robotics/chorus/runtime/brain/llm"
	"github.com/chorus-robotics/chorus/runtime/brain/llm/llmtest"
	"github.com/chorus-robotics/chorus/runtime/metrics"
	"github.com/chorus-robotics/chorus/runtime/protocol"
)

type server = llmtest.Scripted

// imageProblem finds an image block the real API refuses: a source that
// is not base64, no or a wrong media_type, bad base64, bytes not of the
// type named.
func imageProblem(req map[string]any) string {
	for _, bm := range llmtest.Parts(req, "image") {
		src, _ := bm["source"].(map[string]any)
		mt, _ := src["media_type"].(string)
		data, _ := src["data"].(string)
		if src["type"] != "base64" {
			return "image.source.type: Input should be 'base64'"
		}
		if len(data) > 5<<20 { // measured on the base64 text
			return fmt.Sprintf("image.source.base64: image exceeds 5 MB maximum: %d bytes > %d bytes", len(data), 5<<20)
		}
		if why := llmtest.ImageProblem(mt, data); why != "" {
			return "image.source: " + why
		}
	}
	return ""
}

// newServer answers POST /v1/messages with the scripted replies, in order.
func newServer(t *testing.T, replies ...llmtest.Reply) *server {
	return llmtest.NewScripted(t, "/v1/messages", imageProblem, func(w http.ResponseWriter, why string) {
		json.NewEncoder(w).Encode(map[string]any{"type": "error", "error": map[string]any{"type": "invalid_request_error", "message": why}})
	}, replies...)
}

func reply(stop string, content ...map[string]any) func(http.ResponseWriter, map[string]any) {
	return func(w http.ResponseWriter, req map[string]any) {
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{
			"id": "msg_01XFDUDYJgAACzvnptvVoYEL", "type": "message", "role": "assistant", "model": req["model"],
			"content": content, "stop_reason": stop, "stop_sequence": nil,
			"usage": map[string]any{"input_tokens": 380, "output_tokens": 61},
		})
	}
}

func text(s string) map[string]any { return map[string]any{"type": "text", "text": s} }
func toolUse(id, name string, input map[string]any) map[string]any {
	return map[string]any{"type": "tool_use", "id": id, "name": name, "input": input}
}

func input() brain.Input {
	return brain.Input{Card: brain.Card{ID: "hana", Name: "Hana", Language: "ja"},
		Message: protocol.NewMessage("m1", "user", nil, "ハナ、何が見える？", ""), Present: []string{"hana"}, Remaining: -1}
}

const goodState = `{"state":"speak","importance":7,"selected":true,"closing":"none","draft":{"message":"赤いコップが見えるよ！","to":["user"],"emotion":"happy"}}`

func TestThinkWithStructuredOutputAndVision(t *testing.T) {
	s := newServer(t,
		reply("tool_use", text("見てみるね。"), toolUse("toolu_01", "vision", map[string]any{})),
		func(w http.ResponseWriter, req map[string]any) {
			msgs := req["messages"].([]any)
			blocks := msgs[0].(map[string]any)["content"].([]any)
			img := blocks[0].(map[string]any)
			src := img["source"].(map[string]any)
			if img["type"] != "image" || src["type"] != "base64" || src["media_type"] != "image/jpeg" || src["data"] != "/9j/AAAA" {
				t.Errorf("image block %v", img)
			}
			reply("end_turn", text("テーブルの上に赤いコップ。"))(w, req)
		},
		func(w http.ResponseWriter, req map[string]any) {
			msgs := req["messages"].([]any)
			last := msgs[len(msgs)-1].(map[string]any)
			res := last["content"].([]any)[0].(map[string]any)
			if last["role"] != "user" || res["type"] != "tool_result" || res["tool_use_id"] != "toolu_01" {
				t.Errorf("tool result turn %v", last)
			}
			reply("end_turn", text(goodState))(w, req)
		},
	)
	b := &llm.Brain{Chat: New(Config{BaseURL: s.URL, APIKey: "sk-ant-test", Model: "claude-haiku-4-5"}), Draft: true,
		Look: func(context.Context) (llm.Image, error) {
			return llm.NewImage("data:image/jpeg;base64,/9j/AAAA", "") // a body that sends a data: URL
		}}
	th, err := b.Think(context.Background(), input())
	if err != nil {
		t.Fatal(err)
	}
	if th.Draft != "赤いコップが見えるよ！" || !th.Selected || len(s.Refused) > 0 {
		t.Fatalf("thought %+v", th)
	}
	h := s.Headers[0]
	if h.Get("X-Api-Key") != "sk-ant-test" || h.Get("Anthropic-Version") == "" {
		t.Errorf("headers: key %q version %q", h.Get("X-Api-Key"), h.Get("Anthropic-Version"))
	}
	req := s.Reqs[0]
	if req["model"] != "claude-haiku-4-5" || req["max_tokens"] != 1024.0 {
		t.Errorf("model %v max_tokens %v", req["model"], req["max_tokens"])
	}
	format := req["output_config"].(map[string]any)["format"].(map[string]any)
	if format["type"] != "json_schema" || format["schema"].(map[string]any)["properties"].(map[string]any)["draft"] == nil {
		t.Errorf("output_config %v", req["output_config"])
	}
	sys := req["system"].([]any)[0].(map[string]any)["text"].(string)
	if !strings.Contains(sys, "Hana") {
		t.Errorf("system %q", sys)
	}
	if !strings.Contains(req["messages"].([]any)[0].(map[string]any)["content"].([]any)[0].(map[string]any)["text"].(string), "以下のメッセージに対するあなたの状態を判断してください。") {
		t.Error("the Japanese state prompt was not sent")
	}
	tool := req["tools"].([]any)[0].(map[string]any)
	if tool["name"] != "vision" || tool["input_schema"].(map[string]any)["type"] != "object" {
		t.Errorf("tools %v", req["tools"])
	}
}

// The fake refuses what the API refuses: an image with no media_type
// (what Chorus sent for aikyo's client before it typed pictures), one
// whose bytes are not of its type, one that is not base64.
func TestServerRefusesABadImage(t *testing.T) {
	for _, img := range []llm.Image{{MIME: "", Base64: "/9j/AAAA"}, {MIME: "image/gif", Base64: "/9j/AAAA"}, {MIME: "image/jpeg", Base64: "%%%"}} {
		s := newServer(t,
			reply("tool_use", toolUse("toolu_01", "vision", map[string]any{})),
			reply("end_turn", text("never asked")),
			reply("end_turn", text(goodState)),
		)
		b := &llm.Brain{Chat: New(Config{BaseURL: s.URL, APIKey: "k", Model: "m"}), Draft: true,
			Look: func(context.Context) (llm.Image, error) { return img, nil }}
		if _, err := b.Think(context.Background(), input()); err != nil {
			t.Fatal(err)
		}
		if len(s.Refused) != 1 {
			t.Fatalf("%q %q: refused %v, want once", img.MIME, img.Base64, s.Refused)
		}
	}
}

func TestUtterForcesSpeak(t *testing.T) {
	s := newServer(t, reply("tool_use", toolUse("toolu_02", "speak", map[string]any{"message": "またね！", "to": []any{"user"}, "emotion": "happy"})))
	b := &llm.Brain{Chat: New(Config{BaseURL: s.URL, APIKey: "k", Model: "claude-haiku-4-5"})}
	u, err := b.Utter(context.Background(), input())
	if err != nil || u.Text != "またね！" {
		t.Fatalf("%+v %v", u, err)
	}
	tc := s.Reqs[0]["tool_choice"].(map[string]any)
	if tc["type"] != "tool" || tc["name"] != "speak" {
		t.Errorf("tool_choice %v", tc)
	}
}

func TestRefusalTruncationAndOverload(t *testing.T) {
	for name, tc := range map[string]struct {
		replies []llmtest.Reply
		want    string
	}{
		"refusal":   {[]llmtest.Reply{reply("refusal", text("I can't continue this."))}, "refused"},
		"truncated": {[]llmtest.Reply{reply("max_tokens", text(`{"state":"spe`))}, "cut off"},
		"overloaded then ok": {[]llmtest.Reply{
			func(w http.ResponseWriter, _ map[string]any) {
				w.Header().Set("Content-Type", "application/json")
				w.Header().Set("Retry-After-Ms", "10")
				w.WriteHeader(529)
				io.WriteString(w, `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`)
			},
			reply("end_turn", text(goodState)),
		}, ""},
	} {
		t.Run(name, func(t *testing.T) {
			s := newServer(t, tc.replies...)
			b := &llm.Brain{Chat: New(Config{BaseURL: s.URL, APIKey: "k", Model: "m"}), Draft: true}
			_, err := b.Think(context.Background(), input())
			if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
				t.Fatalf("err = %v, want %q", err, tc.want)
			}
		})
	}
}

// Structured outputs refuse numeric bounds: they go into the description.
func TestSchemaBoundsMoveIntoTheDescription(t *testing.T) {
	s := newServer(t, reply("end_turn", text(goodState)))
	b := &llm.Brain{Chat: New(Config{BaseURL: s.URL, APIKey: "k", Model: "m"}), Draft: true}
	if _, err := b.Think(context.Background(), input()); err != nil {
		t.Fatal(err)
	}
	imp := s.Reqs[0]["output_config"].(map[string]any)["format"].(map[string]any)["schema"].(map[string]any)["properties"].(map[string]any)["importance"].(map[string]any)
	if _, ok := imp["minimum"]; ok {
		t.Fatalf("importance %v still has minimum", imp)
	}
	if d, _ := imp["description"].(string); !strings.Contains(d, "minimum 0") || !strings.Contains(d, "maximum 10") {
		t.Fatalf("importance description %q", d)
	}
}

// The realtime talk on the Messages API (issue 12): the Japanese
// talk_realtime prompt as the user turn, the persona as system, free text
// back.
func TestTalkRealtimePrompt(t *testing.T) {
	s := newServer(t, reply("end_turn", text("Over")), reply("end_turn", text("うん、元気だよ！")))
	b := &llm.Brain{Chat: New(Config{BaseURL: s.URL, APIKey: "k", Model: "claude-haiku-4-5"})}
	in := brain.TalkInput{Card: brain.Card{ID: "hana", Name: "Hana", Language: "ja"}, Remaining: 2,
		History: []protocol.Talk{{Idx: 3, Agent: "kyoko", Text: "ハナ、元気？"}}, Members: []string{"hana", "kyoko"}}
	if got, err := b.Talk(context.Background(), in); err != nil || got.Text != protocol.PostOver || got.Actions != nil {
		t.Fatalf("%+v %v", got, err)
	}
	if got, err := b.Talk(context.Background(), in); err != nil || got.Text != "うん、元気だよ！" {
		t.Fatalf("%+v %v", got, err)
	}
	req := s.Reqs[0]
	if req["tools"] != nil || req["output_format"] != nil {
		t.Errorf("structure asked for: %v", req)
	}
	msgs := req["messages"].([]any)
	user, _ := json.Marshal(msgs[0])
	for _, want := range []string{"リアルタイムのグループチャット", "残り発言回数: 2回", `\"agent\":\"kyoko\"`, "「Over」とだけ"} {
		if !strings.Contains(string(user), want) {
			t.Errorf("the prompt lacks %q: %s", want, user)
		}
	}
	if sys, _ := json.Marshal(req["system"]); !strings.Contains(string(sys), "Hana") {
		t.Errorf("system %s", sys)
	}
}

// bigJPEG is a picture whose base64 text is n bytes (n a multiple of 4).
func bigJPEG(n int) string {
	raw := make([]byte, n/4*3)
	copy(raw, []byte{0xff, 0xd8, 0xff, 0xe0})
	return base64.StdEncoding.EncodeToString(raw)
}

// The fake refuses an image over 5 MB of base64 as the API does, and takes
// one of exactly 5 MB.
func TestServerRefusesAnImageOver5MB(t *testing.T) {
	for _, tc := range []struct {
		size   int
		status int
	}{{5 << 20, http.StatusOK}, {5<<20 + 4, http.StatusBadRequest}} {
		s := newServer(t, reply("end_turn", text("a cup")))
		body, _ := json.Marshal(map[string]any{"model": "m", "max_tokens": 10, "messages": []any{map[string]any{"role": "user", "content": []any{
			map[string]any{"type": "image", "source": map[string]any{"type": "base64", "media_type": "image/jpeg", "data": bigJPEG(tc.size)}}}}}})
		resp, err := http.Post(s.URL+"/v1/messages", "application/json", bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		msg, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != tc.status {
			t.Errorf("%d bytes: status %d (%s), want %d", tc.size, resp.StatusCode, msg, tc.status)
		}
	}
}

// A frame a body may send (up to 8 MiB) but the API refuses (over 5 MB of
// base64) is not sent: the vision tool answers an error naming its size
// and the limit, counted, and the turn goes on.
func TestImageOver5MBIsNotSent(t *testing.T) {
	img := bigJPEG(6 << 20)
	var toolText string
	s := newServer(t,
		reply("tool_use", toolUse("toolu_01", "vision", map[string]any{})),
		func(w http.ResponseWriter, req map[string]any) {
			msgs := req["messages"].([]any)
			last := msgs[len(msgs)-1].(map[string]any)
			toolText, _ = last["content"].([]any)[0].(map[string]any)["content"].(string)
			reply("end_turn", text(goodState))(w, req)
		},
	)
	m := metrics.New()
	b := &llm.Brain{Chat: New(Config{BaseURL: s.URL, APIKey: "k", Model: "m", Metrics: m}), Draft: true,
		Look: func(context.Context) (llm.Image, error) { return llm.NewImage(img, "image/jpeg") }}
	if _, err := b.Think(context.Background(), input()); err != nil {
		t.Fatal(err)
	}
	if len(s.Refused) > 0 || len(s.Reqs) != 2 {
		t.Fatalf("requests %d, refused %v: the image was sent", len(s.Reqs), s.Refused)
	}
	if !strings.Contains(toolText, fmt.Sprint(len(img))) || !strings.Contains(toolText, fmt.Sprint(MaxImageBytes)) {
		t.Errorf("the vision tool answered %q: want the size and the limit", toolText)
	}
	if n := metrics.Value(m.BadInput.WithLabelValues("image", "oversize")); n != 1 {
		t.Errorf("counted %v, want 1", n)
	}
}
