package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"time"

	"github.com/chorus-robotics/chorus/runtime/brain"
	"github.com/chorus-robotics/chorus/runtime/brain/llm"
	"github.com/chorus-robotics/chorus/runtime/brain/llm/llmtest"
	"github.com/chorus-robotics/chorus/runtime/brain/openai"
	"github.com/chorus-robotics/chorus/runtime/bus"
	"github.com/chorus-robotics/chorus/runtime/companion"
	"github.com/chorus-robotics/chorus/runtime/floor"
	"github.com/chorus-robotics/chorus/runtime/protocol"
	"github.com/chorus-robotics/chorus/runtime/query"
	"github.com/chorus-robotics/chorus/runtime/room"
	"github.com/chorus-robotics/chorus/runtime/topic"
)

// TurnGap runs a floor and three companions whose brain is an
// OpenAI-compatible server taking latency per call, with speak queries
// answered at once, and measures for each of rounds user messages the time
// from its publish to the granted companion's Message. draft false is the
// two-call path (brain.draft: false).
func TurnGap(ctx context.Context, url string, latency time.Duration, draft bool, rounds int) ([]time.Duration, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	fake := llmtest.New()
	defer fake.Close()
	fake.Latency, fake.OnlyUsers, fake.ClosingAfter = latency, true, 1<<30
	s := topic.New("")
	name := GapRoom
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel()
	var closers []func() error
	defer func() {
		for _, c := range closers {
			c()
		}
	}()
	dial := func(user string, birth func(time.Time) *bus.Retained, will *bus.Retained) (*bus.MQTT, error) {
		b, err := bus.Dial(ctx, bus.Options{Broker: url, ClientID: user + name, Username: user, Birth: birth, Will: will})
		if err == nil {
			closers = append(closers, b.Close)
		}
		return b, err
	}
	runs := func(f func(context.Context) error) {
		wg.Add(1)
		go func() { defer wg.Done(); f(ctx) }()
	}
	fb, err := dial(topic.DefaultFloorID, nil, floor.LeaderWill(s, name, "gap-floor"))
	if err != nil {
		return nil, err
	}
	members := gapMembers
	fr := room.New(fb, s, name, nil, nil)
	fr.SetMembers(members)
	f, err := floor.New(floor.Config{Room: fr, Instance: "gap-floor", JoinWait: 20 * time.Millisecond})
	if err != nil {
		return nil, err
	}
	runs(f.Run)
	for _, id := range members {
		r := room.New(nil, s, name, nil, nil)
		r.SetMembers(members)
		birth, will := r.PresenceMessages(id, id)
		b, err := dial(id, birth, will)
		if err != nil {
			return nil, err
		}
		r.Bus = b
		srv := &query.Server{Bus: b, Scheme: s, Device: id}
		srv.Handle("speak", func(context.Context, string, json.RawMessage) (any, error) {
			return map[string]any{"durationMs": 0}, nil
		})
		runs(srv.Serve)
		c, err := companion.New(companion.Config{Room: r, Card: brain.Card{ID: id, Name: id, Language: "en"},
			Brain:  &llm.Brain{Chat: openai.New(openai.Config{BaseURL: fake.BaseURL(), Model: "bench"}), Draft: draft},
			Device: id, Queries: query.NewClient(b, s, id, query.ClientOptions{}), Pause: time.Millisecond, TwoCall: !draft})
		if err != nil {
			return nil, err
		}
		runs(c.Run)
	}
	ub, err := dial("user", nil, nil)
	if err != nil {
		return nil, err
	}
	user := room.New(ub, s, name, nil, nil)
	msgs := make(chan protocol.Message, 64)
	rests := make(chan string, 64)
	user.OnMessage(ctx, func(m protocol.Message) { msgs <- m })
	user.OnGrant(ctx, func(g protocol.TurnGrant) {
		if g.Speaker == nil {
			rests <- g.MessageID
		}
	})
	for !f.Active() {
		time.Sleep(5 * time.Millisecond)
	}
	time.Sleep(200 * time.Millisecond)
	out := make([]time.Duration, 0, rounds)
	for r := range rounds {
		id := fmt.Sprintf("u%d", r)
		start := time.Now()
		if err := user.SendMessage(ctx, protocol.NewMessage(id, "user", nil, "Hello, who wants to talk?", "")); err != nil {
			return out, err
		}
		var answer string
		for answer == "" {
			select {
			case m := <-msgs:
				if m.Params.From != "user" {
					out = append(out, time.Since(start))
					answer = m.Params.ID
				}
			case <-time.After(20 * time.Second):
				return out, fmt.Errorf("round %d: no answer", r)
			}
		}
		for done := false; !done; { // the answer's own vote rests the room
			select {
			case mid := <-rests:
				done = mid == answer
			case <-time.After(20 * time.Second):
				return out, fmt.Errorf("round %d: the room did not rest", r)
			}
		}
	}
	if p := fake.Problems(); len(p) > 0 {
		return out, fmt.Errorf("model server saw bad requests: %v", p)
	}
	return out, nil
}
