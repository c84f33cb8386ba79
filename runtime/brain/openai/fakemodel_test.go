package openai

import (
	"context"
	"testing"
	"time"

	"github.com/chorus-robotics/chorus/runtime/brain"
	"github.com/chorus-robotics/chorus/runtime/brain/llm"
	"github.com/chorus-robotics/chorus/runtime/brain/llm/llmtest"
	"github.com/chorus-robotics/chorus/runtime/memory"
	"github.com/chorus-robotics/chorus/runtime/protocol"
)

// The fake model (chorus fakemodel) answers extraction with its Extract
// function and fills in a card's events in a streamed state answer, at
// its pace: the vote is still heard before the draft.
func TestFakeModelExtractsAndFillsEvents(t *testing.T) {
	fake := llmtest.New()
	defer fake.Close()
	fake.TokensPerSecond = 2000
	fake.Extract = func(in brain.ExtractInput) []memory.Fact {
		var out []memory.Fact
		for _, s := range in.Said {
			out = append(out, memory.Fact{Person: s.Person, MessageID: s.MessageID, Key: "said", Text: "said something"})
		}
		return out
	}
	b := &llm.Brain{Chat: New(Config{BaseURL: fake.BaseURL(), Model: "m"}), Draft: true}
	facts, err := b.Extract(context.Background(), brain.ExtractInput{Card: brain.Card{Language: "ja"},
		Known: []memory.Fact{{ID: "f1", Person: "user", Text: "x"}},
		Said:  []memory.Heard{{Person: "user", MessageID: "m1", Text: "こんにちは"}, {Person: "ann", MessageID: "m2", Text: "hi"}}})
	if err != nil || len(facts) != 2 || facts[1].Person != "ann" {
		t.Fatalf("facts %v %v", facts, err)
	}
	ex := fake.Extracted()
	if len(ex) != 1 || ex[0].Card.Language != "ja" || len(ex[0].Said) != 2 || len(ex[0].Known) != 1 {
		t.Errorf("the fake read %+v", ex)
	}
	fake.Extract = nil
	if facts, err := b.Extract(context.Background(), brain.ExtractInput{Said: []memory.Heard{{Person: "u", MessageID: "m", Text: "t"}}}); err != nil || len(facts) != 0 {
		t.Errorf("no Extract: %v %v", facts, err)
	}

	card := brain.Card{ID: "kyoko", Name: "Kyoko", Language: "en", Events: brain.Events{
		Params: map[string]any{"type": "object", "properties": map[string]any{
			"need_response": map[string]any{"type": "boolean", "description": "Needs an answer?"},
			"mood":          map[string]any{"type": "string", "enum": []any{"happy", "sad"}, "description": "Mood"},
			"topic":         map[string]any{"type": "string", "description": "Topic"},
		}},
		Conditions: []brain.Condition{{Expression: "need_response == false && already_replied", Instruction: "Just greet."}}}}
	in := brain.Input{Card: card, Message: protocol.NewMessage("m1", "user", []string{"kyoko"}, "Kyoko, hello!", ""), Present: []string{"kyoko"},
		Remaining: -1, Events: map[string]any{"already_replied": true}}
	var voted, said time.Time
	th, err := b.ThinkStream(context.Background(), in, brain.Heard{
		Vote: func(brain.Thought) { voted = time.Now() },
		Said: func(string, protocol.Emotion) {
			if said.IsZero() {
				said = time.Now()
			}
		}})
	if err != nil {
		t.Fatal(err)
	}
	if voted.IsZero() || said.IsZero() || said.Before(voted) || fake.Streamed() == 0 {
		t.Errorf("vote at %v, first sentence at %v, streamed %d", voted, said, fake.Streamed())
	}
	if th.Events["need_response"] != false || th.Events["mood"] != "happy" || th.Events["topic"] != "" || th.Events["already_replied"] != true ||
		th.Instruction != "Just greet." {
		t.Errorf("events %v, instruction %q", th.Events, th.Instruction)
	}
	if p := fake.Problems(); len(p) > 0 {
		t.Errorf("problems %v", p)
	}
}
