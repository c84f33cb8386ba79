package openai

import (
	"context"
	"encoding/json"
	"net/http"
	"regexp"
	"strings"
	"testing"

	"github.com/chorus-robotics/chorus/runtime/brain"
	"github.com/chorus-robotics/chorus/runtime/brain/llm"
	"github.com/chorus-robotics/chorus/runtime/protocol"
	"github.com/chorus-robotics/chorus/runtime/tool"
)

var nodDef = protocol.ActionDef{Name: "nod", Description: "Nod your head.", Schema: json.RawMessage(`{"type":"object","properties":{},"additionalProperties":false}`)}
var lookDef = protocol.ActionDef{Name: "look", Description: "Turn your head.", Schema: json.RawMessage(`{"type":"object","properties":{"angle":{"type":"number","minimum":-60,"maximum":60}},"required":["angle"],"additionalProperties":false}`)}

// toolName is what the API takes as a function name.
var toolName = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)

// checkTools fails unless req offers exactly names, each as the API
// defines a function tool (a valid name, a description, an object schema).
func checkTools(t *testing.T, req map[string]any, names ...string) map[string]map[string]any {
	t.Helper()
	tools, _ := req["tools"].([]any)
	got := map[string]map[string]any{}
	for _, raw := range tools {
		tool := raw.(map[string]any)
		fn := tool["function"].(map[string]any)
		name, _ := fn["name"].(string)
		params, _ := fn["parameters"].(map[string]any)
		if tool["type"] != "function" || !toolName.MatchString(name) || params["type"] != "object" {
			t.Errorf("a tool the API refuses: %v", tool)
		}
		got[name] = fn
	}
	if len(got) != len(names) {
		t.Errorf("tools %v, want %v", got, names)
	}
	for _, n := range names {
		if got[n] == nil {
			t.Errorf("tool %s not offered (got %v)", n, tools)
		}
	}
	return got
}

// The model calls the body's action in the very response that carries its
// state and draft: one call, the action goes with the words.
func TestThinkOffersActionsAndTakesThemWithTheDraft(t *testing.T) {
	s := newServer(t, func(w http.ResponseWriter, req map[string]any) {
		fns := checkTools(t, req, "nod", "look")
		if fns["look"]["description"] != "Turn your head." {
			t.Errorf("look's description: %v", fns["look"]["description"])
		}
		params := fns["look"]["parameters"].(map[string]any)
		if params["required"].([]any)[0] != "angle" || params["properties"].(map[string]any)["angle"] == nil {
			t.Errorf("look's schema as declared: %v", params)
		}
		// content and tool_calls in one message, as the API answers
		msg := map[string]any{"role": "assistant", "content": goodState, "refusal": nil, "tool_calls": []any{
			scriptedToolCall("call_1", "nod", "{}"), scriptedToolCall("call_2", "look", `{"angle":20}`)}}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{"id": "chatcmpl-1", "object": "chat.completion", "model": req["model"],
			"choices": []any{map[string]any{"index": 0, "message": msg, "finish_reason": "tool_calls"}}})
	})
	in := input()
	in.Tools = tool.Actions([]protocol.ActionDef{nodDef, lookDef})
	th, err := brainFor(s, nil, true, nil).Think(context.Background(), in)
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Requests()) != 1 {
		t.Fatalf("%d model calls, want the one that drafts", len(s.Requests()))
	}
	if th.Draft != "I see a red cup on the table!" || len(th.Actions) != 2 || th.Actions[0].Name != "nod" ||
		th.Actions[1].Name != "look" || string(th.Actions[1].Args) != `{"angle":20}` {
		t.Fatalf("thought %+v", th)
	}
}

// A model that calls the action first and answers after is told the action
// will go with its words, and asked again; the action is kept.
func TestThinkActionFirstThenTheAnswer(t *testing.T) {
	s := newServer(t,
		completion("", "tool_calls", scriptedToolCall("call_9", "nod", "{}")),
		func(w http.ResponseWriter, req map[string]any) {
			msgs := req["messages"].([]any)
			asst := msgs[len(msgs)-2].(map[string]any)
			tool := msgs[len(msgs)-1].(map[string]any)
			if asst["role"] != "assistant" || asst["tool_calls"] == nil || tool["role"] != "tool" || tool["tool_call_id"] != "call_9" {
				t.Errorf("the tool call and its answer: %v / %v", asst, tool)
			}
			completion(goodState, "stop")(w, req)
		})
	in := input()
	in.Tools = tool.Actions([]protocol.ActionDef{nodDef})
	th, err := brainFor(s, nil, true, nil).Think(context.Background(), in)
	if err != nil {
		t.Fatal(err)
	}
	if len(th.Actions) != 1 || th.Actions[0].Name != "nod" || th.Draft == "" {
		t.Fatalf("thought %+v", th)
	}
}

// Actions the model invents, or calls with arguments that are not an
// object, are not done; a listening companion takes no action.
func TestThinkActionsBadCalls(t *testing.T) {
	listen := `{"state":"listen","importance":1,"selected":false,"closing":"none","draft":{"message":"hm","to":[],"emotion":"neutral"}}`
	cases := []struct {
		name    string
		content string
		calls   []map[string]any
		wantErr bool
		want    int
	}{
		{"args not an object", goodState, []map[string]any{scriptedToolCall("c1", "look", `[20]`)}, false, 0},
		{"an action not offered", goodState, []map[string]any{scriptedToolCall("c1", "dance", `{}`)}, true, 0},
		{"listening takes none", listen, []map[string]any{scriptedToolCall("c1", "nod", `{}`)}, false, 0},
		{"at most four", goodState, []map[string]any{scriptedToolCall("a", "nod", `{}`), scriptedToolCall("b", "look", `{"angle":1}`),
			scriptedToolCall("c", "wave", `{}`), scriptedToolCall("d", "shake", `{}`), scriptedToolCall("e", "blink", `{}`)}, false, 4},
		{"the same action twice: the last call", goodState, []map[string]any{scriptedToolCall("a", "look", `{"angle":-30}`),
			scriptedToolCall("b", "nod", `{}`), scriptedToolCall("c", "look", `{"angle":30}`)}, false, 2},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := newServer(t, func(w http.ResponseWriter, req map[string]any) {
				calls := []any{}
				for _, tc := range c.calls {
					calls = append(calls, tc)
				}
				msg := map[string]any{"role": "assistant", "content": c.content, "tool_calls": calls}
				w.Header().Set("Content-Type", "application/json")
				json.NewEncoder(w).Encode(map[string]any{"choices": []any{map[string]any{"message": msg, "finish_reason": "tool_calls"}}})
			})
			in := input()
			in.Tools = tool.Actions([]protocol.ActionDef{nodDef, lookDef})
			for _, n := range []string{"wave", "shake", "blink"} {
				in.Tools = append(in.Tools, tool.Actions([]protocol.ActionDef{protocol.ActionDef{Name: n, Description: n, Schema: nodDef.Schema}})...)
			}
			th, err := brainFor(s, nil, true, nil).Think(context.Background(), in)
			if (err != nil) != c.wantErr {
				t.Fatalf("err %v", err)
			}
			if len(th.Actions) != c.want {
				t.Fatalf("actions %+v, want %d", th.Actions, c.want)
			}
			if c.name == "the same action twice: the last call" && (th.Actions[0].Name != "look" || string(th.Actions[0].Args) != `{"angle":30}`) {
				t.Fatalf("actions %+v, want look 30 first (where look was first called)", th.Actions)
			}
		})
	}
}

// The two-call path offers the actions beside speak and takes them with
// the speak call.
func TestUtterTakesActionsWithSpeak(t *testing.T) {
	s := newServer(t, func(w http.ResponseWriter, req map[string]any) {
		checkTools(t, req, "speak", "nod")
		if req["tool_choice"] != nil {
			t.Errorf("speak forced while actions are offered: %v", req["tool_choice"])
		}
		completion("", "tool_calls", scriptedToolCall("c1", "nod", "{}"),
			scriptedToolCall("c2", "speak", `{"message":"Yes!","to":["user"],"emotion":"happy"}`))(w, req)
	})
	in := input()
	in.Tools = tool.Actions([]protocol.ActionDef{nodDef})
	u, err := brainFor(s, nil, false, nil).Utter(context.Background(), in)
	if err != nil {
		t.Fatal(err)
	}
	if u.Text != "Yes!" || len(u.Actions) != 1 || u.Actions[0].Name != "nod" {
		t.Fatalf("utterance %+v", u)
	}
}

// In a realtime room the body's actions are offered in the call that
// writes the words, and taken from the same response; Over takes none.
func TestTalkTakesAnActionWithItsWords(t *testing.T) {
	// content and tool_calls in one message, as the API answers
	both := func(content string, call map[string]any) func(http.ResponseWriter, map[string]any) {
		return func(w http.ResponseWriter, req map[string]any) {
			checkTools(t, req, "nod")
			msg := map[string]any{"role": "assistant", "content": content, "refusal": nil, "tool_calls": []any{call}}
			w.Header().Set("Content-Type", "application/json")
			json.NewEncoder(w).Encode(map[string]any{"id": "chatcmpl-2", "object": "chat.completion", "model": req["model"],
				"choices": []any{map[string]any{"index": 0, "message": msg, "finish_reason": "tool_calls"}}})
		}
	}
	s := newServer(t, both("Yes, let's!", scriptedToolCall("c1", "nod", "{}")), both("Over", scriptedToolCall("c2", "nod", "{}")))
	in := brain.TalkInput{Card: brain.Card{ID: "kyoko", Name: "Kyoko", Language: "en"}, Remaining: 3, Members: []string{"kyoko", "hana"},
		Tools: tool.Actions([]protocol.ActionDef{nodDef})}
	u, err := brainFor(s, nil, true, nil).Talk(context.Background(), in)
	if err != nil || u.Text != "Yes, let's!" || len(u.Actions) != 1 || u.Actions[0].Name != "nod" {
		t.Fatalf("talk %+v %v", u, err)
	}
	if u, err := brainFor(s, nil, true, nil).Talk(context.Background(), in); err != nil || u.Text != protocol.PostOver || len(u.Actions) != 0 {
		t.Fatalf("over %+v %v", u, err)
	}
}

// A tool the call did not offer is not run: in a realtime talk (nothing
// but the actions offered) a vision call does not take a picture, and a
// speak call is not taken for words.
func TestTalkRefusesToolsNotOffered(t *testing.T) {
	for _, name := range []string{"vision", "speak"} {
		t.Run(name, func(t *testing.T) {
			s := newServer(t, completion("", "tool_calls", scriptedToolCall("c1", name, `{"message":"hi","to":[],"emotion":"neutral"}`)))
			looked := 0
			look := func(context.Context) (llm.Image, error) { looked++; return llm.Image{}, nil }
			in := brain.TalkInput{Card: brain.Card{ID: "kyoko", Name: "Kyoko", Language: "en"}, Remaining: 3, Members: []string{"kyoko", "hana"},
				Tools: tool.Actions([]protocol.ActionDef{nodDef})}
			u, err := brainFor(s, look, true, nil).Talk(context.Background(), in)
			if err == nil || !strings.Contains(err.Error(), "unknown tool") || looked != 0 || u.Text != "" {
				t.Fatalf("talk %+v, %v; looked %d times", u, err, looked)
			}
		})
	}
}
