package companion_test

import (
	"context"
	"testing"
	"time"

	"github.com/chorus-robotics/chorus/runtime/brain"
	"github.com/chorus-robotics/chorus/runtime/companion"
	"github.com/chorus-robotics/chorus/runtime/memory"
	"github.com/chorus-robotics/chorus/runtime/protocol"
)

// already_replied is per companion and means replied, not heard: in a
// room of two, the person's second message finds it true for the
// companion that answered the first and false for the one that only
// listened — with a memory (its met record) and without (this run's).
func TestAlreadyRepliedIsThisCompanionsReply(t *testing.T) {
	for _, withMemory := range []bool{false, true} {
		name := map[bool]string{false: "no memory", true: "memory"}[withMemory]
		t.Run(name, func(t *testing.T) {
			r := newRig(t)
			r.startFloor(time.Second)
			speaker := newMemBrain() // speaks to everything
			listener := newMemBrain()
			listener.ThinkFn = func(_ context.Context, in brain.Input) (brain.Thought, error) {
				listener.mu.Lock()
				listener.inputs[in.Message.Params.Message] = in
				listener.mu.Unlock()
				return brain.Thought{State: protocol.Listen, Importance: 1, Closing: protocol.ClosingNone}, nil
			}
			stores := map[string]*memory.Store{}
			for i, b := range []brain.Brain{speaker, listener} {
				card := cards()[i]
				r.startCompanion(card, b, func(c *companion.Config) {
					if !withMemory {
						return
					}
					st := openStore(t, t.TempDir(), card.ID)
					stores[card.ID] = st
					c.Memory = &companion.Memory{Store: st, RestAfter: time.Hour}
				})
			}
			waitPresent(t, r, 2)

			r.userSays("Hello there.")
			for _, b := range []*memBrain{speaker, listener} {
				if in := b.input(t, "Hello there."); in.Events[companion.KnownMet] != false {
					t.Fatalf("first message: events %v", in.Events)
				}
			}
			msgs, _ := r.untilRest(10 * time.Second)
			answered := false
			for _, m := range msgs {
				answered = answered || m.Params.From == "kyoko"
				if m.Params.From == "hana" {
					t.Fatalf("hana spoke: %+v", m)
				}
			}
			if !answered {
				t.Fatalf("kyoko never answered: %+v", msgs)
			}

			r.userSays("How are you?")
			if in := speaker.input(t, "How are you?"); in.Events[companion.KnownMet] != true {
				t.Errorf("kyoko answered the person: events %v", in.Events)
			}
			if in := listener.input(t, "How are you?"); in.Events[companion.KnownMet] != false {
				t.Errorf("hana only heard the person: events %v", in.Events)
			}
			if withMemory {
				deadline := time.Now().Add(5 * time.Second)
				for !stores["kyoko"].Touched("user") && time.Now().Before(deadline) {
					time.Sleep(10 * time.Millisecond)
				}
				if !stores["kyoko"].Touched("user") || stores["hana"].Touched("user") {
					t.Errorf("met records: kyoko %v, hana %v; want true, false", stores["kyoko"].Touched("user"), stores["hana"].Touched("user"))
				}
			}
		})
	}
}
