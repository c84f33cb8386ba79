package companion_test

import (
	"context"
	"encoding/json"
	"sync"
	"testing"
	"time"

	"github.com/chorus-robotics/chorus/runtime/brain"
	"github.com/chorus-robotics/chorus/runtime/brain/braintest"
	"github.com/chorus-robotics/chorus/runtime/companion"
	"github.com/chorus-robotics/chorus/runtime/metrics"
	"github.com/chorus-robotics/chorus/runtime/protocol"
	"github.com/chorus-robotics/chorus/runtime/query"
	"github.com/chorus-robotics/chorus/runtime/tool"
)

// companions_present is called by the brain, off the companion's loop,
// while presences come and go: it reads the list the loop last saw, never
// the loop's own map (an outside check found the race: -race reported it,
// and without -race chorusd died of a concurrent map iteration and write).
func TestCompanionsPresentToolWhilePresencesChange(t *testing.T) {
	var once sync.Once
	speakTuned(t, metrics.New(), func(context.Context, string, json.RawMessage) (any, error) {
		return protocol.SpeakResult{DurationMs: 1}, nil
	}, func(cfg *companion.Config, _ *query.Server) {
		cfg.Card.Knowledge = []string{companion.KnowCompanions}
		rm := cfg.Room
		cfg.Brain = &braintest.Func{ThinkFn: func(ctx context.Context, in brain.Input) (brain.Thought, error) {
			if in.Message.Params.From != "user" {
				return brain.Thought{State: protocol.Listen, Closing: protocol.ClosingNone}, nil
			}
			once.Do(func() {
				stop := make(chan struct{})
				go func() {
					for i := 0; ; i++ {
						select {
						case <-stop:
							return
						default:
						}
						id := []string{"hana", "aya"}[i%2]
						a := rm.Announce(id, id, 0)
						r := a.Birth(time.Now())
						if i%4 >= 2 {
							r = a.Will()
						}
						rm.Bus.Publish(context.Background(), r.Topic, r.Payload, true)
					}
				}()
				called := 0
				for _, tl := range in.Tools {
					if tl.Name == companion.KnowCompanions {
						for end := time.Now().Add(time.Second); time.Now().Before(end); called++ {
							res, err := tl.Call(ctx, tool.Call{Name: tl.Name})
							var ids []string
							if err != nil || json.Unmarshal([]byte(res.Text), &ids) != nil {
								t.Errorf("companions_present answered %+v %v", res, err)
								break
							}
						}
					}
				}
				close(stop)
				if called == 0 {
					t.Error("companions_present was not offered")
				}
			})
			return brain.Thought{State: protocol.Speak, Importance: 5, Closing: protocol.ClosingNone, Draft: "ok"}, nil
		}}
	})
}
