package realtime_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/chorus-robotics/chorus/runtime/brain"
	"github.com/chorus-robotics/chorus/runtime/brain/rule"
	"github.com/chorus-robotics/chorus/runtime/protocol"
	"github.com/chorus-robotics/chorus/runtime/realtime"
)

// Three rule-brain agents and a floor: a user's message opens the phase,
// each agent talks (the floor numbers every utterance), and each says
// Over after its few turns, which ends the phase (issue 12).
func TestAgentsTalkUntilAllOver(t *testing.T) {
	rr := newMemRoom(t)
	mem, ctx, run, mk := rr.mem, rr.ctx, rr.run, rr.mk
	l := limits
	l.RateLimit, l.PerAgent, l.PerDay = 50*time.Millisecond, 5, 50
	rr.runFloor(t, l)
	for _, id := range members {
		a, err := realtime.NewAgent(realtime.AgentConfig{Room: mk(id), Card: brain.Card{ID: id, Name: id, SampleLines: []string{"I like tea."}, Language: "en"},
			Brain: rule.New(0, nil), PollInterval: 20 * time.Millisecond, SpeakCooldown: 60 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		run(a.Run)
		pctx, pcancel := context.WithTimeout(ctx, 5*time.Second)
		if err := a.Ping(pctx); err != nil {
			t.Fatal(err)
		}
		pcancel()
	}
	obs := mk("observer")
	ends := make(chan protocol.Phase, 4)
	var mu sync.Mutex
	var said []protocol.Message
	obs.OnPhase(ctx, "", func(p protocol.Phase) {
		if p.Event == protocol.PhaseEnd {
			ends <- p
		}
	})
	obs.OnMessage(ctx, func(msg protocol.Message) {
		mu.Lock()
		said = append(said, msg)
		mu.Unlock()
	})
	mem.Settle()
	time.Sleep(50 * time.Millisecond)
	if err := mk("user").SendMessage(ctx, protocol.NewMessage(protocol.NewID(), "user", nil, "Good morning, everyone!", "")); err != nil {
		t.Fatal(err)
	}
	select {
	case e := <-ends:
		if e.Reason != protocol.EndAllOver {
			t.Fatalf("ended %+v", e)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the phase did not end")
	}
	mu.Lock()
	defer mu.Unlock()
	per := map[string]int{}
	last := 0
	for _, msg := range said {
		if msg.Params.From != "floor" {
			continue
		}
		idx := int(msg.Params.Metadata["idx"].(float64))
		if idx != last+1 {
			t.Errorf("broadcast idx %d after %d", idx, last)
		}
		last = idx
		per[msg.Params.Metadata["speaker"].(string)]++
	}
	for _, id := range members {
		if per[id] == 0 || per[id] > rule.DefaultOverAfter {
			t.Errorf("%s said %d things (want 1..%d)", id, per[id], rule.DefaultOverAfter)
		}
	}
	t.Logf("%d utterances: %v", last, per)
}
