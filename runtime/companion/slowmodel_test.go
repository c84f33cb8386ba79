package companion_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/chorus-robotics/chorus/runtime/brain/llm"
	"github.com/chorus-robotics/chorus/runtime/brain/llm/llmtest"
	"github.com/chorus-robotics/chorus/runtime/brain/openai"
	"github.com/chorus-robotics/chorus/runtime/companion"
	"github.com/chorus-robotics/chorus/runtime/query"
	"github.com/chorus-robotics/chorus/runtime/room"
)

// A model slower than the room's vote_timeout still gets its turns: each
// companion announces how long it thinks, and the floor waits that long
// (issue 15, defect 1). Before, every State came after the deadline and
// the room rested after the user's first message, with nothing logged.
func TestSlowModelGetsItsTurns(t *testing.T) {
	fake := llmtest.New()
	defer fake.Close()
	fake.Latency, fake.ClosingAfter = 1200*time.Millisecond, 2
	r := newRig(t)
	r.startFloor(500 * time.Millisecond)
	for _, card := range cards()[:2] {
		rm := room.New(nil, r.s, "lr", nil, r.m)
		rm.SetMembers(members)
		ann := rm.Announce(card.ID, card.ID, 5*time.Second)
		rm.Bus = r.dial(card.ID, ann.Birth, ann.Will())
		srv := &query.Server{Bus: rm.Bus, Scheme: r.s, Device: card.ID}
		srv.Handle("speak", func(context.Context, string, json.RawMessage) (any, error) {
			return map[string]any{"durationMs": 1}, nil
		})
		r.go_(srv.Serve)
		c, err := companion.New(companion.Config{Room: rm, Card: card, Device: card.ID,
			Brain:   &llm.Brain{Chat: openai.New(openai.Config{BaseURL: fake.BaseURL(), Model: "slow-7b"}), Draft: true},
			Queries: query.NewClient(rm.Bus, r.s, card.ID, query.ClientOptions{}), Pause: 5 * time.Millisecond,
			ThinkTimeout: 5 * time.Second, Presence: ann, ExpectThink: 5 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		r.go_(c.Run)
	}
	waitPresent(t, r, 2)
	r.userSays("Hello, slow thinkers!")
	msgs, grants := r.untilRest(40 * time.Second)
	turns := companionTurns(msgs)
	if turns < 2 {
		t.Fatalf("%d companion turns; grants %+v", turns, grants)
	}
	restedAtTerminal(t, grants)
}
