package query

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/chorus-robotics/chorus/runtime/bus/bustest"
	"github.com/chorus-robotics/chorus/runtime/protocol"
	"github.com/chorus-robotics/chorus/runtime/topic"
)

// A flood of one type in a lane of its own (a body's actions, each slow)
// never delays another type (speech): the flood fills its own queue and
// is refused as busy there, and the other queries run at once.
func TestALaneKeepsAFloodFromOtherQueries(t *testing.T) {
	for _, lanes := range []bool{false, true} {
		t.Run(fmt.Sprintf("lanes=%v", lanes), func(t *testing.T) {
			mem := bustest.NewMemory(t)
			s := &Server{Bus: mem.Conn(nil, nil), Scheme: topic.New(""), Device: "pi5"}
			if lanes {
				s.Lanes = map[string]int{"action": 2}
			}
			release := make(chan struct{})
			s.Handle("action", func(ctx context.Context, _ string, _ json.RawMessage) (any, error) {
				select {
				case <-release:
				case <-ctx.Done():
				}
				return map[string]any{}, nil
			})
			s.Handle("speak", echo)
			ctx, cancel := context.WithCancel(context.Background())
			var wg sync.WaitGroup
			wg.Add(1)
			go func() { defer wg.Done(); s.Serve(ctx) }()
			defer func() { close(release); cancel(); wg.Wait() }()
			time.Sleep(10 * time.Millisecond)
			flood := mem.Conn(nil, nil)
			for i := range 300 {
				q := protocol.Query{JSONRPC: protocol.JSONRPC, Method: protocol.MethodQuery, ID: fmt.Sprintf("a%d", i),
					Params: protocol.QueryParams{From: "x", Type: "action", Body: json.RawMessage(`{}`)}}
				b, _ := json.Marshal(q)
				flood.Publish(context.Background(), topic.New("").Queries("pi5"), b, false)
			}
			c := NewClient(mem.Conn(nil, nil), topic.New(""), "kyoko", ClientOptions{Timeout: time.Second})
			defer c.Close()
			_, err := c.Ask(context.Background(), "pi5", "speak", nil, time.Second)
			switch {
			case lanes && err != nil:
				t.Fatalf("speech waited behind the flood: %v", err)
			case !lanes && err == nil:
				t.Fatal("without a lane the flood did not hold speech up: the test proves nothing")
			}
		})
	}
}
