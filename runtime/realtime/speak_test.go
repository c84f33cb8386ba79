package realtime_test

import (
	"context"
	"encoding/json"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/chorus-robotics/chorus/runtime/brain"
	"github.com/chorus-robotics/chorus/runtime/brain/rule"
	"github.com/chorus-robotics/chorus/runtime/bus/bustest"
	"github.com/chorus-robotics/chorus/runtime/metrics"
	"github.com/chorus-robotics/chorus/runtime/protocol"
	"github.com/chorus-robotics/chorus/runtime/query"
	"github.com/chorus-robotics/chorus/runtime/realtime"
	"github.com/chorus-robotics/chorus/runtime/room"
	"github.com/chorus-robotics/chorus/runtime/topic"
)

// An agent speaks its accepted utterance through its device with the
// speak body runtime/protocol declares (the device decodes it strictly),
// and announces the end of its voice. A result the device answered but
// that does not decode (the agent ignored json.Unmarshal's error before
// issue 20) still ends the voice, and is counted.
func TestAgentSpeaksThroughItsDevice(t *testing.T) {
	mem := bustest.NewMemory(t)
	s := topic.New("").WithRoster("lr", members)
	m := metrics.New()
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	t.Cleanup(func() { cancel(); wg.Wait() })
	run := func(f func(context.Context) error) {
		wg.Add(1)
		go func() { defer wg.Done(); f(ctx) }()
	}
	mk := func(id string) *room.Room {
		rm := room.New(nil, s, "lr", nil, m)
		rm.SetMembers(members)
		birth, will := rm.PresenceMessages(id, id)
		rm.Bus = mem.NamedConn(id, birth, will)
		return rm
	}
	l := limits
	l.RateLimit, l.PerAgent, l.PerDay = 50*time.Millisecond, 1, 1
	f, err := realtime.NewFloor(realtime.FloorConfig{Room: mk("floor"), Members: members, ID: "floor", Limits: l, OpenOnMessage: true})
	if err != nil {
		t.Fatal(err)
	}
	run(f.Run)
	id := members[0]
	rm := mk(id)
	asked := make(chan protocol.SpeakRequest, 4)
	srv := &query.Server{Bus: rm.Bus, Scheme: s, Device: id}
	srv.Handle(protocol.TypeSpeak, func(_ context.Context, _ string, b json.RawMessage) (any, error) {
		r, err := protocol.DecodeSpeakRequest(b, 0)
		if err != nil {
			return nil, err
		}
		asked <- r
		return map[string]any{"durationMs": 120, "ok": true}, nil // an unknown field
	})
	run(srv.Serve)
	a, err := realtime.NewAgent(realtime.AgentConfig{Room: rm, Card: brain.Card{ID: id, Name: id, SampleLines: []string{"I like tea."}, Language: "en"},
		Brain: rule.New(0, nil), PollInterval: 20 * time.Millisecond, SpeakCooldown: 60 * time.Millisecond,
		Device: id, Queries: query.NewClient(rm.Bus, s, id, query.ClientOptions{Timeout: 5 * time.Second})})
	if err != nil {
		t.Fatal(err)
	}
	run(a.Run)
	obs := mk("observer")
	ended := make(chan protocol.Speaking, 4)
	obs.OnSpeaking(ctx, func(e room.SpeakingEvent) {
		if e.ID == id && !e.Cleared && !e.Speaking.Speaking {
			ended <- e.Speaking
		}
	})
	mem.Settle()
	time.Sleep(50 * time.Millisecond)
	if err := mk("user").SendMessage(ctx, protocol.NewMessage(protocol.NewID(), "user", nil, "Good morning!", "")); err != nil {
		t.Fatal(err)
	}
	var req protocol.SpeakRequest
	select {
	case req = <-asked:
	case <-time.After(10 * time.Second):
		t.Fatal("the device was never asked to speak")
	}
	select {
	case e := <-ended:
		if e.MessageID != req.MessageID || e.DurationMs != 0 {
			t.Fatalf("voice ended %+v for a speak of %q", e, req.MessageID)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the voice never ended")
	}
	if n := testutil.ToFloat64(m.BadInput.WithLabelValues("result", string(protocol.KindUnknownField))); n != 1 {
		t.Fatalf("bad speak results counted %v, want 1", n)
	}
}
