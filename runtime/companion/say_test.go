package companion_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/chorus-robotics/chorus/runtime/brain"
	"github.com/chorus-robotics/chorus/runtime/brain/braintest"
	"github.com/chorus-robotics/chorus/runtime/protocol"
)

// A person's say request (an agent's "say" over MCP: metadata say, to
// one companion) is answered by the rules: that companion says the words
// word for word when granted, no brain is asked, and the others listen.
// A say request to several, or from a companion, is not one.
func TestASayRequestIsSaidWordForWord(t *testing.T) {
	r := newRig(t)
	r.startFloor(3 * time.Second)
	cs := cards()
	var mu sync.Mutex
	asked := map[string]bool{} // message ids a brain was asked about
	chatty := func() *braintest.Func {
		return &braintest.Func{ThinkFn: func(_ context.Context, in brain.Input) (brain.Thought, error) {
			mu.Lock()
			asked[in.Message.Params.ID] = true
			mu.Unlock()
			if in.Message.Params.From != "user" {
				return brain.Thought{State: protocol.Listen, Closing: protocol.ClosingNone}, nil
			}
			return brain.Thought{State: protocol.Speak, Importance: 10, Closing: protocol.ClosingNone, Draft: "Something of my own."}, nil
		}}
	}
	r.startCompanion(cs[0], chatty(), nil)
	r.startCompanion(cs[1], chatty(), nil)
	waitPresent(t, r, 2)
	r.userSays("Hello.")
	r.untilRest(5 * time.Second)
	m := protocol.NewMessage(protocol.NewID(), "user", []string{cs[0].ID}, "Dinner is ready, everyone!", "")
	m.Params.Metadata = map[string]any{protocol.MetaSay: true}
	if err := r.user.SendMessage(r.ctx, m); err != nil {
		t.Fatal(err)
	}
	msgs, _ := r.untilRest(5 * time.Second)
	var said []string
	for _, x := range msgs {
		if x.Params.From != "user" {
			said = append(said, x.Params.From+": "+x.Params.Message)
		}
	}
	if len(said) == 0 || said[0] != cs[0].ID+": Dinner is ready, everyone!" {
		t.Fatalf("the room said %q, want %s to say the words first", said, cs[0].ID)
	}
	mu.Lock()
	defer mu.Unlock()
	if asked[m.Params.ID] {
		t.Error("a brain was asked about a say request")
	}
}

// A say request for one robot stops nobody: another companion's think on
// the person's words goes on and its answer is said (a person's Message
// would have cancelled it: barge-in).
func TestASayRequestInterruptsNobody(t *testing.T) {
	r := newRig(t)
	r.startFloor(5 * time.Second)
	cs := cards()
	release := make(chan struct{})
	slow := &braintest.Func{ThinkFn: func(ctx context.Context, in brain.Input) (brain.Thought, error) {
		if in.Message.Params.From != "user" {
			return brain.Thought{State: protocol.Listen, Closing: protocol.ClosingNone}, nil
		}
		select {
		case <-release:
		case <-ctx.Done():
			return brain.Thought{}, ctx.Err()
		}
		return brain.Thought{State: protocol.Speak, Importance: 5, Closing: protocol.ClosingNone, Draft: "My considered answer."}, nil
	}}
	quiet := &braintest.Func{ThinkFn: func(context.Context, brain.Input) (brain.Thought, error) {
		return brain.Thought{State: protocol.Listen, Closing: protocol.ClosingNone}, nil
	}}
	r.startCompanion(cs[0], slow, nil)
	r.startCompanion(cs[1], quiet, nil)
	waitPresent(t, r, 2)
	r.userSays("What do you think about the weather?")
	time.Sleep(200 * time.Millisecond) // kyoko is thinking
	m := protocol.NewMessage(protocol.NewID(), "user", []string{cs[1].ID}, "Dinner is ready!", "")
	m.Params.Metadata = map[string]any{protocol.MetaSay: true}
	if err := r.user.SendMessage(r.ctx, m); err != nil {
		t.Fatal(err)
	}
	time.Sleep(300 * time.Millisecond)
	close(release)
	deadline := time.After(10 * time.Second)
	for {
		select {
		case e := <-r.events:
			if x, ok := e.(protocol.Message); ok && x.Params.From == cs[0].ID && x.Params.Message == "My considered answer." {
				return
			}
		case <-deadline:
			t.Fatalf("%s's answer never came: the say request cancelled its think", cs[0].ID)
		}
	}
}
