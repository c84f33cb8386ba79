package companion_test

import (
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/chorus-robotics/chorus/runtime/brain"
	"github.com/chorus-robotics/chorus/runtime/protocol"
	"go.yaml.in/yaml/v3"
)

// Through a real room with memory on, a robot on the offline rule brain
// talks to the person: it greets Sam by the name they gave and says a
// word on their favourite; once the conversation rested (memory written)
// it answers "What is my name?" and "What fruit do I like?" from memory;
// it never speaks a counter or the person's identity ("user"). The robot
// is the one-robot laptop config's (firmware-configs/desktop-sim.yaml: one
// sample line) under kyoko's id. Before, it answered with its own line,
// then "Mm, I'm listening, user (0).".
func TestRuleBrainAnswersThePersonFromMemory(t *testing.T) {
	raw, err := os.ReadFile("../../firmware-configs/desktop-sim.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var sim struct {
		Companion brain.Card `yaml:"companion"`
	}
	if err := yaml.Unmarshal(raw, &sim); err != nil || sim.Companion.Language != "en" || len(sim.Companion.SampleLines) == 0 {
		t.Fatalf("desktop-sim.yaml's companion: %+v, %v", sim.Companion, err)
	}
	card := sim.Companion
	card.ID, card.Name = "kyoko", "Kyoko"
	b := newRuleMemBrain()
	r, st, _ := memRigCard(t, card, b, nil)
	counter := regexp.MustCompile(`[0-9]`)
	var all []protocol.Message
	ask := func(text, want string) {
		t.Helper()
		r.userSays(text)
		msgs, _ := r.untilRest(10 * time.Second)
		all = append(all, msgs...)
		said := firstFrom(msgs, "kyoko")
		if !strings.Contains(said, want) {
			t.Errorf("to %q kyoko said %q, want %q in it", text, said, want)
		}
		if counter.MatchString(said) || strings.Contains(said, "user") {
			t.Errorf("to %q kyoko said %q: a counter or the person's identity", text, said)
		}
	}
	ask("Hi robots, I'm Sam. My favourite fruit is mango.", "Sam")
	if said := firstFrom(all, "kyoko"); !strings.Contains(said, "mango") {
		t.Errorf("kyoko's reply %q says nothing of Sam's favourite", said)
	}
	ask("Do you like rain?", "")
	waitFacts(t, st, "user", 2)
	ask("What is my name?", "Sam")
	ask("What fruit do I like?", "mango")
	for _, q := range []string{"What is my name?", "What fruit do I like?"} {
		var texts []string
		for _, f := range b.input(t, q).Remembered {
			texts = append(texts, f.Text)
		}
		if got := strings.Join(texts, "|"); !strings.Contains(got, "name is Sam") || !strings.Contains(got, "mango") && strings.Contains(q, "fruit") {
			t.Errorf("%q recalled %q: the answer is not the memory's", q, got)
		}
	}
	ask("What is my favourite colour?", "I don't know yet")
	ask("Is the weather nice?", "")
	for _, m := range all {
		t.Logf("%s: %s", m.Params.From, m.Params.Message)
	}
}

// firstFrom is the first message of from in msgs ("" when none).
func firstFrom(msgs []protocol.Message, from string) string {
	for _, m := range msgs {
		if m.Params.From == from {
			return m.Params.Message
		}
	}
	return ""
}
