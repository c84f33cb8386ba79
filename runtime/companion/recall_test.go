package companion_test

import (
	"strings"
	"testing"
	"time"

	"github.com/chorus-robotics/chorus/runtime/brain/llm"
	"github.com/chorus-robotics/chorus/runtime/brain/llm/llmtest"
	"github.com/chorus-robotics/chorus/runtime/brain/openai"
	"github.com/chorus-robotics/chorus/runtime/companion"
	"github.com/chorus-robotics/chorus/runtime/memory"
	"github.com/chorus-robotics/chorus/runtime/protocol"
	"github.com/chorus-robotics/chorus/runtime/room"
)

// Two people in one conversation: what pat told the robot earlier is
// recalled when pat speaks, never when sam does — sam's message recalls
// sam's facts and, of pat, only the name.
func TestMemoryRecallsOnlyTheSpeakersFacts(t *testing.T) {
	private := []string{"nurse", "county hospital"} // pat's, never in sam's prompt or answer
	remember := func(t *testing.T, st *memory.Store) {
		t.Helper()
		if _, err := st.Add(
			memory.Fact{Person: "pat", Key: "name", Text: "name is Patricia", Pinned: true},
			memory.Fact{Person: "pat", Key: "work", Text: "works as a nurse at the county hospital"},
			memory.Fact{Person: "sam", Key: "name", Text: "name is Sam", Pinned: true},
			memory.Fact{Person: "sam", Key: "work", Text: "works as a baker"},
		); err != nil {
			t.Fatal(err)
		}
	}
	say := func(t *testing.T, r *roomRig, person, text string) {
		t.Helper()
		p := room.New(r.dial(person, nil, nil), r.s, "lr", nil, nil)
		if err := p.SendMessage(r.ctx, protocol.NewMessage(protocol.NewID(), person, nil, text, "")); err != nil {
			t.Fatal(err)
		}
	}

	t.Run("model", func(t *testing.T) {
		fake := llmtest.New()
		t.Cleanup(fake.Close)
		b := &llm.Brain{Chat: openai.New(openai.Config{BaseURL: fake.BaseURL(), Model: "m", MaxRetries: -1})}
		r, st, _ := memRig(t, b, func(m *companion.Memory) { m.RestAfter = time.Hour })
		remember(t, st)
		say(t, r, "pat", "Hello everyone, I am back from work.")
		pat := promptFor(t, fake, "Hello everyone, I am back from work.")
		say(t, r, "sam", "Where does Patricia work?")
		if !strings.Contains(pat, "county hospital") {
			t.Fatalf("pat's own message does not recall pat's facts:\n%s", pat)
		}
		sam := promptFor(t, fake, "Where does Patricia work?")
		for _, s := range private {
			if strings.Contains(sam, s) {
				t.Errorf("the prompt for sam's message holds pat's %q:\n%s", s, sam)
			}
		}
		for _, s := range []string{`{"person":"sam","text":"name is Sam"}`, `{"person":"sam","text":"works as a baker"}`, `{"person":"pat","text":"name is Patricia"}`} {
			if !strings.Contains(sam, s) {
				t.Errorf("the prompt for sam's message lacks %s:\n%s", s, sam)
			}
		}
		say(t, r, "hana", "I wonder where she works too.") // a robot of the room
		robot := promptFor(t, fake, "I wonder where she works too.")
		for _, s := range append(private, "baker") {
			if strings.Contains(robot, s) {
				t.Errorf("the prompt for a robot's message holds %q:\n%s", s, robot)
			}
		}
	})

	t.Run("rule", func(t *testing.T) {
		b := newRuleMemBrain()
		r, st, _ := memRig(t, b, func(m *companion.Memory) { m.RestAfter = time.Hour })
		remember(t, st)
		say(t, r, "pat", "Hello everyone, I am back from work.")
		b.input(t, "Hello everyone, I am back from work.")
		say(t, r, "sam", "Where does Patricia work?")
		b.input(t, "Where does Patricia work?")
		say(t, r, "sam", "What do you remember about me?")
		var spoken string
		for deadline := time.Now().Add(5 * time.Second); !strings.Contains(spoken, "baker") && time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
			r.mu.Lock()
			spoken = strings.Join(r.spoken["kyoko"], "\n")
			r.mu.Unlock()
		}
		for _, s := range private {
			if strings.Contains(spoken, s) {
				t.Errorf("kyoko told sam pat's %q:\n%s", s, spoken)
			}
		}
		if !strings.Contains(spoken, "baker") {
			t.Errorf("kyoko did not tell sam what it remembers about sam:\n%s", spoken)
		}
	})
}

// promptFor is the prompt of the first companion call about text (later
// calls hold it in their history).
func promptFor(t *testing.T, fake *llmtest.Server, text string) string {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		for _, p := range fake.Prompts() {
			if strings.Contains(p, text) {
				return p
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("the model was never asked about %q", text)
	return ""
}
