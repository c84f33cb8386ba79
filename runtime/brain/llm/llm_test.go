package llm

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/chorus-robotics/chorus/runtime/protocol"
)

func TestParseThought(t *testing.T) {
	tests := []struct {
		name, in string
		draft    bool
		want     string // error substring; "" = ok
	}{
		{"full", `{"state":"speak","importance":6.5,"selected":false,"closing":"pre-closing","draft":{"message":"Let's wrap up.","to":["hana"],"emotion":"neutral"}}`, true, ""},
		{"no draft asked", `{"state":"listen","importance":0,"selected":false,"closing":"none"}`, false, ""},
		{"listen with empty draft", `{"state":"listen","importance":1,"selected":false,"closing":"none","draft":{"message":"","to":[],"emotion":"neutral"}}`, true, ""},
		{"closing absent is none", `{"state":"listen","importance":1,"selected":false}`, false, ""},
		{"fenced", "```json\n{\"state\":\"listen\",\"importance\":1,\"selected\":false,\"closing\":\"none\"}\n```", false, ""},
		{"unknown field", `{"state":"listen","importance":1,"selected":false,"closing":"none","mood":"x"}`, false, "unknown field"},
		{"missing selected", `{"state":"listen","importance":1,"closing":"none"}`, false, "selected missing"},
		{"bad closing", `{"state":"listen","importance":1,"selected":false,"closing":"bye"}`, false, "closing \"bye\""},
		{"negative importance", `{"state":"listen","importance":-2,"selected":false,"closing":"none"}`, false, "outside 0..10"},
		{"importance as string", `{"state":"listen","importance":"5","selected":false,"closing":"none"}`, false, "not the JSON"},
		{"speak with empty draft", `{"state":"speak","importance":5,"selected":false,"closing":"none","draft":{"message":" ","to":[],"emotion":"happy"}}`, true, "empty utterance"},
		{"bad emotion", `{"state":"speak","importance":5,"selected":false,"closing":"none","draft":{"message":"hi","to":[],"emotion":"ecstatic"}}`, true, "emotion"},
		{"draft missing", `{"state":"speak","importance":5,"selected":false,"closing":"none"}`, true, "draft missing"},
		{"two objects", `{"state":"listen","importance":1,"selected":false,"closing":"none"}{}`, false, "trailing"},
		{"prose", `I would like to speak.`, false, "not the JSON"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			th, err := ParseThought(tt.in, tt.draft)
			if tt.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				if th.Validate() != nil || th.Closing == "" {
					t.Fatalf("invalid thought %+v", th)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want %q", err, tt.want)
			}
		})
	}
}

func TestParseUtteranceDropsBadAddressees(t *testing.T) {
	u, err := ParseUtterance(json.RawMessage(`{"message":"Hi!","to":["hana","a/b",""],"emotion":"sad"}`))
	if err != nil || len(u.To) != 1 || u.To[0] != "hana" || u.Emotion != protocol.EmotionSad {
		t.Fatalf("%+v %v", u, err)
	}
}

// FuzzParseThought: whatever a model writes, the parser returns a valid
// Thought or an error, never a panic.
func FuzzParseThought(f *testing.F) {
	f.Add(`{"state":"speak","importance":6.5,"selected":false,"closing":"pre-closing","draft":{"message":"x","to":["hana"],"emotion":"neutral"}}`, true)
	f.Add("```json\n{}\n```", false)
	f.Fuzz(func(t *testing.T, s string, draft bool) {
		th, err := ParseThought(s, draft)
		if err == nil {
			if err := th.Validate(); err != nil {
				t.Fatalf("accepted an invalid thought: %v", err)
			}
			if draft && th.State == protocol.Speak && strings.TrimSpace(th.Draft) == "" {
				t.Fatal("accepted speak without a draft")
			}
		}
	})
}
