package prompts

import (
	"strings"
	"testing"

	"github.com/chorus-robotics/chorus/runtime/brain"
	"github.com/chorus-robotics/chorus/runtime/protocol"
)

func input(lang string) brain.Input {
	return brain.Input{
		Card:    brain.Card{ID: "kyoko", Name: "Kyoko", Personality: "cheerful", Story: "kitchen robot", SampleLines: []string{"Tea?"}, Language: lang},
		History: []protocol.Message{protocol.NewMessage("m0", "user", nil, "Good morning", "")},
		Message: protocol.NewMessage("m1", "hana", []string{"kyoko"}, "What shall we do?", ""),
		Present: []string{"hana", "kyoko"}, Remaining: -1,
	}
}

func TestStatePrompt(t *testing.T) {
	for _, lang := range []string{"ja", "en"} {
		in := input(lang)
		in.ClosingInstruction = brain.ClosingInstruction(lang)
		p, err := State(in, true)
		if err != nil {
			t.Fatal(err)
		}
		for _, want := range []string{`"messageId"`[:0] + `"id": "m1"`, "What shall we do?", "user: Good morning", "pre-closing", "draft", in.ClosingInstruction} {
			if !strings.Contains(p, want) {
				t.Errorf("%s state prompt lacks %q:\n%s", lang, want, p)
			}
		}
		noDraft, _ := State(input(lang), false)
		if strings.Contains(noDraft, "draft") || strings.Contains(noDraft, brain.ClosingInstruction(lang)) {
			t.Errorf("%s: draft or closing instruction asked for when not wanted", lang)
		}
	}
	ja, _ := State(input("ja"), true)
	if !strings.Contains(ja, "以下のメッセージに対するあなたの状態を判断してください。") {
		t.Error("the Japanese prompt is not the seed's")
	}
}

func TestSystemPrompt(t *testing.T) {
	in := input("en")
	in.Remaining = 3
	p, err := System(in)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"Kyoko", "cheerful", "kitchen robot", "- Tea?", "hana, kyoko", "Posts you have left in this phase: 3"} {
		if !strings.Contains(p, want) {
			t.Errorf("system prompt lacks %q:\n%s", want, p)
		}
	}
	in.Remaining = -1
	if p, _ := System(in); strings.Contains(p, "Posts you have left") {
		t.Error("remaining count shown in turn mode")
	}
}
