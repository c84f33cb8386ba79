package system

import (
	"fmt"
	"testing"
	"time"

	"github.com/chorus-robotics/chorus/runtime/brain/llm/llmtest"
)

const llmCompanionYAML = labCompanionYAML + `  personality: friendly
  language: en
brain: {provider: openai, base_url: "%[3]s", model: llama-3.2-3b-instruct, timeout: 5s}
` + silentBodyYAML

// llmRoom runs a floor and ann and ben as chorusd processes on Mosquitto,
// their brains on fake (companion is the config template: id, broker, base
// URL), says hello, and returns the companion turns taken until the room
// rests at terminal, within limit.
func llmRoom(t *testing.T, fake *llmtest.Server, companion string, limit time.Duration) int {
	t.Helper()
	url, chorus, _, o := startLab(t, []string{"ann", "ben"}, func(id, url string) string {
		return fmt.Sprintf(companion, id, url, fake.BaseURL())
	})
	say(t, chorus, url, "Hello, robots!")
	spoke, g, ok := o.untilRest(limit)
	turns := companionTurns(spoke)
	if !ok {
		t.Fatalf("no terminal within %v: %d turns, %d model calls", limit, turns, fake.Calls())
	}
	if !g.RestsAtTerminal() {
		t.Fatalf("rested before terminal after %d turns: %+v", turns, g)
	}
	return turns
}

// TestChorusdWithAnOpenAICompatibleServer runs chorusd processes whose
// brain is a local model server (the fake stands in for llama.cpp) through
// a whole conversation.
func TestChorusdWithAnOpenAICompatibleServer(t *testing.T) {
	fake := llmtest.New()
	t.Cleanup(fake.Close) // after the chorusd processes stop (cleanups run last-in first-out)
	fake.Model = "llama-3.2-3b-instruct"
	fake.ClosingAfter = 3
	turns := llmRoom(t, fake, llmCompanionYAML, 30*time.Second)
	if turns < 3 {
		t.Fatalf("only %d turns", turns)
	}
	if p := fake.Problems(); len(p) > 0 {
		t.Fatalf("the model server saw bad requests: %v", p)
	}
	// One model call per State: the granted companion spoke its draft.
	if fake.Calls() > int64(2*(turns+1)+2) {
		t.Fatalf("%d model calls for %d turns: more than one per State", fake.Calls(), turns)
	}
}

const slowLLMYAML = labCompanionYAML + `  personality: thoughtful
  language: en
brain: {provider: openai, base_url: "%[3]s", model: qwen2.5-7b-instruct, timeout: 20s}
` + silentBodyYAML + "log: {level: info}\n"

// TestChorusdWithAModelSlowerThanTheVoteTimeout: a 7B model on a LAN box
// answers in about 4 s, the brain timeout is the README's 20 s and the
// room's vote_timeout the Pi 5 config's 3 s. The companions announce how
// long they think, the floor waits for them, and the room holds a
// conversation to terminal (issue 15, defect 1). Before, every vote came
// after the deadline and the room rested at once.
func TestChorusdWithAModelSlowerThanTheVoteTimeout(t *testing.T) {
	fake := llmtest.New()
	t.Cleanup(fake.Close)
	fake.Latency, fake.ClosingAfter = 4*time.Second, 2
	if turns := llmRoom(t, fake, slowLLMYAML, 90*time.Second); turns < 2 {
		t.Fatalf("only %d turns", turns)
	}
}
