package companion_test

import (
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/chorus-robotics/chorus/runtime/brain/llm"
	"github.com/chorus-robotics/chorus/runtime/brain/llm/llmtest"
	"github.com/chorus-robotics/chorus/runtime/brain/openai"
	"github.com/chorus-robotics/chorus/runtime/companion"
	"github.com/chorus-robotics/chorus/runtime/logtest"
)

// A stubborn model — it answers closing none whatever it is asked and says
// the same sentence every turn, as small local models do — does not talk
// forever. Three robots on it, in a room without max_turn: the repetition
// judges ask it to close; after CloseAsks asks in vain each companion moves
// its stage on itself (pre-closing, closing, terminal), and the room rests
// at terminal, within a bounded number of turns. Before, the judges asked
// on every turn and the robots said the same sentence forever.
func TestStubbornModelIsClosed(t *testing.T) {
	fake := llmtest.New()
	defer fake.Close()
	fake.ClosingAfter = 1 << 30 // never closes
	fake.Line = func(string, int) string { return "What a lovely day it is today." }
	r := newRig(t)
	r.startFloor(2 * time.Second)
	logs := map[string]*logtest.Buffer{}
	for _, card := range cards() {
		b := &llm.Brain{Chat: openai.New(openai.Config{BaseURL: fake.BaseURL(), Model: "stubborn-1b", MaxRetries: -1}), Draft: true}
		logs[card.ID] = &logtest.Buffer{}
		r.startCompanion(card, b, func(cfg *companion.Config) {
			cfg.Judge, cfg.JudgeEvery = b, 1
			cfg.Room.Log = slog.New(slog.NewTextHandler(logs[card.ID], nil))
		})
	}
	waitPresent(t, r, len(members))
	r.userSays("Hello, robots!")
	msgs, grants := r.untilRest(30 * time.Second)
	turns := companionTurns(msgs)
	// The judges' window (5) fills, CloseAsks asks, three stages: a
	// dozen turns; 25 leaves room for the votes' order on a loaded machine.
	if turns > 25 {
		t.Fatalf("the room rested only after %d turns", turns)
	}
	last := restedAtTerminal(t, grants)
	if len(last.Votes) < len(members)-1 { // all but the last speaker
		t.Fatalf("the rest has votes %+v, want every listener's", last.Votes)
	}
	// One line says what ended it, for each companion that got there.
	ended := 0
	for id, l := range logs {
		switch n := strings.Count(l.String(), "terminal: the conversation ends"); {
		case n > 1:
			t.Errorf("%s logged its terminal %d times:\n%s", id, n, l)
		case n == 1 && !strings.Contains(l.String(), `by="repetition judge"`):
			t.Errorf("%s's terminal is not put down to the repetition judge:\n%s", id, l)
		case n == 1:
			ended++
		}
	}
	if ended < len(members)-1 {
		t.Errorf("%d companions logged their terminal, want at least %d", ended, len(members)-1)
	}
	t.Logf("rested at terminal after %d turns", turns)
}

// A room always has a bound: room.max_turn unset is DefaultMaxTurn.
func TestMaxTurnDefault(t *testing.T) {
	for _, tc := range []struct {
		set, want int
	}{
		{0, companion.DefaultMaxTurn},
		{7, 7},
	} {
		s := companion.TurnSettings{MaxTurn: tc.set}
		s.SetDefaults()
		if s.MaxTurn != tc.want {
			t.Errorf("max_turn %d: after the defaults %d, want %d", tc.set, s.MaxTurn, tc.want)
		}
	}
}
