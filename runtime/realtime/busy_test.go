package realtime_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chorus-robotics/chorus/runtime/metrics"

	"github.com/chorus-robotics/chorus/runtime/brain"
	"github.com/chorus-robotics/chorus/runtime/bus"
	"github.com/chorus-robotics/chorus/runtime/protocol"
	"github.com/chorus-robotics/chorus/runtime/realtime"
)

// eagerTalker says words whenever it is asked, once go is set.
type eagerTalker struct {
	on    atomic.Bool
	calls atomic.Int32
}

func (e *eagerTalker) Talk(context.Context, brain.TalkInput) (brain.Utterance, error) {
	if !e.on.Load() {
		return brain.Utterance{Text: protocol.TalkListen}, nil
	}
	e.calls.Add(1)
	return brain.Utterance{Text: "May I add something?"}, nil
}

// Issue 27: in a room of voices (overlap false) an agent neither thinks
// nor posts while another robot's accepted words hold the floor — from
// their broadcast until their voice ends — so the floor has nothing to
// refuse as floor_busy; when the voice ends, it talks.
func TestAgentDoesNotPostIntoABusyFloor(t *testing.T) {
	rr := newMemRoom(t)
	mem, m, ctx, run, mk := rr.mem, rr.m, rr.ctx, rr.run, rr.mk
	l := limits
	l.RateLimit, l.PerAgent, l.PerDay, l.Overlap = 10*time.Millisecond, 5, 20, false
	rr.runFloor(t, l)
	talker := &eagerTalker{}
	a, err := realtime.NewAgent(realtime.AgentConfig{Room: mk("ann"), Card: brain.Card{ID: "ann", Name: "ann", Language: "en"},
		Brain: talker, PollInterval: 20 * time.Millisecond, SpeakCooldown: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	run(a.Run)
	// ben is a robot whose words and voice this test plays by hand.
	ben := mk("ben")
	out := &bus.Outbox{Bus: ben.Bus}
	run(out.Run)
	broadcasts := make(chan protocol.Message, 16)
	phases := make(chan protocol.Phase, 4)
	obs := mk("observer")
	obs.OnPhase(ctx, "", func(p protocol.Phase) { phases <- p })
	obs.OnMessage(ctx, func(msg protocol.Message) {
		if msg.Params.From == "floor" {
			broadcasts <- msg
		}
	})
	mem.Settle()
	time.Sleep(50 * time.Millisecond)
	if err := mk("user").SendMessage(ctx, protocol.NewMessage(protocol.NewID(), "user", nil, "Good morning!", "")); err != nil {
		t.Fatal(err)
	}
	var ph protocol.Phase
	select {
	case ph = <-phases:
	case <-time.After(5 * time.Second):
		t.Fatal("no phase opened")
	}
	ben.QueuePost(out, "", protocol.Post{From: "ben", Phase: ph.Phase, ID: protocol.NewID(), Text: "Let me tell you about my day."})
	next := func() protocol.Message {
		t.Helper()
		select {
		case b := <-broadcasts:
			return b
		case <-time.After(5 * time.Second):
			t.Fatal("no broadcast")
		}
		return protocol.Message{}
	}
	b := next()
	if b.Params.Metadata[protocol.MetaSpeaker] != "ben" {
		t.Fatalf("broadcast %+v, want ben's words", b.Params)
	}
	ben.QueueSpeaking(out, "ben", protocol.Speaking{MessageID: b.Params.ID, Speaking: true, StartedAt: time.Now(), DurationMs: 10_000})
	settle := func() { // everything published, delivered, and handled by ann's loop
		t.Helper()
		pctx, pcancel := context.WithTimeout(ctx, 5*time.Second)
		defer pcancel()
		if err := out.Flush(pctx); err != nil {
			t.Fatal(err)
		}
		mem.Settle()
		if err := a.Ping(pctx); err != nil {
			t.Fatal(err)
		}
	}
	settle()
	talker.on.Store(true)
	time.Sleep(400 * time.Millisecond) // 20 polls of ann's while ben talks
	if n := talker.calls.Load(); n != 0 {
		t.Fatalf("ann's brain was asked %d times while ben's voice held the floor", n)
	}
	ben.QueueSpeaking(out, "ben", protocol.Speaking{MessageID: b.Params.ID, Speaking: false, StartedAt: time.Now(), DurationMs: 400})
	if b := next(); b.Params.Metadata[protocol.MetaSpeaker] != "ann" {
		t.Fatalf("broadcast %+v, want ann's words once ben's voice ended", b.Params)
	}
	if n := metrics.Value(m.RealtimeRejects.WithLabelValues(protocol.RejectFloorBusy)); n != 0 {
		t.Fatalf("the floor refused %v posts as floor_busy", n)
	}
}
