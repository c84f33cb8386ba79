package companion_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/chorus-robotics/chorus/runtime/brain"
	"github.com/chorus-robotics/chorus/runtime/brain/braintest"
	"github.com/chorus-robotics/chorus/runtime/bus/bustest"
	"github.com/chorus-robotics/chorus/runtime/clock"
	"github.com/chorus-robotics/chorus/runtime/companion"
	"github.com/chorus-robotics/chorus/runtime/protocol"
	"github.com/chorus-robotics/chorus/runtime/room"
	"github.com/chorus-robotics/chorus/runtime/topic"
)

// A vote is sent again until the floor can hear it, bounded by its
// message's age, not by a count: on a NATS cluster the floor's node was
// lost and the others refused connects for 7 s, the companions' five
// resends ran out before the floor was back, and the floor rested the room
// on a conversation under way. Here no floor ever answers (it cannot
// hear): hana's State goes out every ResendEvery while the message is
// younger than ResendFor, and then no more.
func TestStateIsSentAgainUntilTheMessageIsTooOld(t *testing.T) {
	const every, resendFor = time.Second, 10 * time.Second
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	t.Cleanup(func() { cancel(); wg.Wait() })
	mem, s, clk := bustest.NewMemory(t), topic.New(""), clock.NewFake(time.Date(2026, 11, 28, 9, 0, 0, 0, time.UTC))
	join := func(name string, presence bool) *room.Room {
		r := room.New(nil, s, "lr", nil, nil)
		r.SetMembers([]string{"hana", "kyoko"})
		if presence {
			birth, will := r.PresenceMessages(name, name)
			r.Bus = mem.NamedConn(name, birth, will)
		} else {
			r.Bus = mem.NamedConn(name, nil, nil)
		}
		return r
	}
	hana, user, obs := join("hana", true), join("user", false), join("observer", false)
	votes := make(chan string, 256)
	if err := obs.OnState(ctx, func(st protocol.State) {
		if st.Params.From == "hana" {
			select {
			case votes <- st.Params.MessageID:
			default:
				t.Error("test channel full")
			}
		}
	}); err != nil {
		t.Fatal(err)
	}
	speaks := &braintest.Func{ThinkFn: func(context.Context, brain.Input) (brain.Thought, error) {
		return brain.Thought{State: protocol.Speak, Importance: 5, Closing: protocol.ClosingNone, Draft: "Hana answers."}, nil
	}}
	c, err := companion.New(companion.Config{Room: hana, Card: brain.Card{ID: "hana", Name: "Hana", SampleLines: []string{"Hi."}, Language: "en"},
		Brain: speaks, Clock: clk, ResendEvery: every, ResendFor: resendFor})
	if err != nil {
		t.Fatal(err)
	}
	wg.Add(1)
	go func() { defer wg.Done(); c.Run(ctx) }()
	ping := func() {
		t.Helper()
		pctx, pcancel := context.WithTimeout(ctx, 5*time.Second)
		defer pcancel()
		if err := c.Ping(pctx); err != nil { // its loop has handled what came before
			t.Fatal(err)
		}
		mem.Settle()
	}
	ping()
	say := func(id string) {
		t.Helper()
		if err := user.SendMessage(ctx, protocol.NewMessage(id, "user", nil, "anyone there?", "")); err != nil {
			t.Fatal(err)
		}
	}
	next := func(when string) string {
		t.Helper()
		return within(t, votes, "no State from hana "+when)
	}

	say("m1")
	if id := next("for m1"); id != "m1" {
		t.Fatalf("State for %s, want m1", id)
	}
	ping()
	// The floor cannot hear: no grant comes. Each second the State goes
	// out again, more than the five times of old, while m1 is younger
	// than resendFor.
	for age := every; age < resendFor; age += every {
		clk.Advance(every)
		if id := next(fmt.Sprintf("when m1 was %v old", age)); id != "m1" {
			t.Fatalf("at %v: State for %s, want m1 again", age, id)
		}
		ping() // the next resend is armed
	}
	// m1 is resendFor old: nothing more for it, however long nobody hears.
	for range 5 {
		clk.Advance(every)
		ping()
	}
	say("m2") // its State comes after any State for m1 still on its way
	if id := next("for m2"); id != "m2" {
		t.Fatalf("State for %s after m1 was %v old, want none for it any more", id, resendFor+5*every)
	}
}
