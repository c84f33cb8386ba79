package anthropic

import (
	"context"
	"encoding/json"
	"net/http"
	"regexp"
	"testing"

	"github.com/chorus-robotics/chorus/runtime/brain"
	"github.com/chorus-robotics/chorus/runtime/brain/llm"
	"github.com/chorus-robotics/chorus/runtime/protocol"
	"github.com/chorus-robotics/chorus/runtime/tool"
)

var toolName = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)

// The Messages API answers with text and tool_use blocks in one message:
// the state and draft as text, the gesture as a tool use.
func TestThinkTakesAnActionInTheDraftingResponse(t *testing.T) {
	s := newServer(t, func(w http.ResponseWriter, req map[string]any) {
		tools, _ := req["tools"].([]any)
		if len(tools) != 1 {
			t.Fatalf("tools %v", req["tools"])
		}
		tool := tools[0].(map[string]any)
		schema := tool["input_schema"].(map[string]any)
		if tool["name"] != "wave" || !toolName.MatchString(tool["name"].(string)) || tool["description"] != "Wave a hand." ||
			schema["type"] != "object" || schema["properties"].(map[string]any)["hand"] == nil {
			t.Errorf("the tool as the API takes it: %v", tool)
		}
		if req["output_config"] == nil {
			t.Error("the state's structured output is missing beside the tools")
		}
		reply("tool_use", text(goodState), toolUse("toolu_7", "wave", map[string]any{"hand": "left"}))(w, req)
	})
	b := &llm.Brain{Chat: New(Config{BaseURL: s.URL, APIKey: "sk-ant-test", Model: "claude-haiku-4-5"}), Draft: true}
	in := input()
	in.Tools = tool.Actions([]protocol.ActionDef{{Name: "wave", Description: "Wave a hand.",
		Schema: json.RawMessage(`{"type":"object","properties":{"hand":{"enum":["left","right"]}},"additionalProperties":false}`)}})
	th, err := b.Think(context.Background(), in)
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Reqs) != 1 {
		t.Fatalf("%d calls, want one", len(s.Reqs))
	}
	if th.Draft != "赤いコップが見えるよ！" || len(th.Actions) != 1 || th.Actions[0].Name != "wave" || string(th.Actions[0].Args) != `{"hand":"left"}` {
		t.Fatalf("thought %+v", th)
	}
}

// A tool use alone is answered with a tool_result in the next user turn
// (the API refuses a tool_use left unanswered), then the answer comes.
func TestThinkActionAloneIsAnsweredThenTheStateComes(t *testing.T) {
	s := newServer(t,
		reply("tool_use", toolUse("toolu_1", "wave", map[string]any{})),
		func(w http.ResponseWriter, req map[string]any) {
			msgs := req["messages"].([]any)
			last := msgs[len(msgs)-1].(map[string]any)
			res := last["content"].([]any)[0].(map[string]any)
			if last["role"] != "user" || res["type"] != "tool_result" || res["tool_use_id"] != "toolu_1" {
				t.Errorf("tool result turn %v", last)
			}
			reply("end_turn", text(goodState))(w, req)
		})
	b := &llm.Brain{Chat: New(Config{BaseURL: s.URL, APIKey: "k", Model: "claude-haiku-4-5"}), Draft: true}
	in := input()
	in.Tools = tool.Actions([]protocol.ActionDef{{Name: "wave", Description: "Wave.", Schema: json.RawMessage(`{"type":"object"}`)}})
	th, err := b.Think(context.Background(), in)
	if err != nil {
		t.Fatal(err)
	}
	if len(th.Actions) != 1 || th.Draft == "" {
		t.Fatalf("thought %+v", th)
	}
}

// In a realtime room the body's actions are offered in the call that
// writes the words: the words as text, the gesture as a tool use, in one
// response; LISTEN takes no action, and a tool use alone is answered and
// the words asked again.
func TestTalkTakesAnActionWithItsWords(t *testing.T) {
	wave := protocol.ActionDef{Name: "wave", Description: "Wave.", Schema: json.RawMessage(`{"type":"object"}`)}
	s := newServer(t,
		func(w http.ResponseWriter, req map[string]any) {
			tools, _ := req["tools"].([]any)
			if len(tools) != 1 || tools[0].(map[string]any)["name"] != "wave" {
				t.Errorf("tools offered with the talk: %v", req["tools"])
			}
			reply("tool_use", text("やあ、みんな！"), toolUse("toolu_1", "wave", map[string]any{}))(w, req)
		},
		reply("tool_use", text("LISTEN"), toolUse("toolu_2", "wave", map[string]any{})),
		reply("tool_use", toolUse("toolu_3", "wave", map[string]any{})),
		func(w http.ResponseWriter, req map[string]any) {
			msgs := req["messages"].([]any)
			last := msgs[len(msgs)-1].(map[string]any)
			if res := last["content"].([]any)[0].(map[string]any); res["type"] != "tool_result" || res["tool_use_id"] != "toolu_3" {
				t.Errorf("tool result turn %v", last)
			}
			reply("end_turn", text("こんにちは！"))(w, req)
		})
	b := &llm.Brain{Chat: New(Config{BaseURL: s.URL, APIKey: "k", Model: "claude-haiku-4-5"})}
	in := brain.TalkInput{Card: brain.Card{ID: "hana", Name: "Hana", Language: "ja"}, Remaining: 3, Members: []string{"hana", "kyoko"},
		Tools: tool.Actions([]protocol.ActionDef{wave})}
	for _, want := range []struct {
		text    string
		actions int
	}{{"やあ、みんな！", 1}, {protocol.TalkListen, 0}, {"こんにちは！", 1}} {
		u, err := b.Talk(context.Background(), in)
		if err != nil || u.Text != want.text || len(u.Actions) != want.actions || (want.actions == 1 && u.Actions[0].Name != "wave") {
			t.Fatalf("talk %+v %v, want %q with %d actions", u, err, want.text, want.actions)
		}
	}
}
