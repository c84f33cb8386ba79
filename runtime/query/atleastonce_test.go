package query

import (
	"context"
	"encoding/json"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chorus-robotics/chorus/runtime/bus/bustest"
	"github.com/chorus-robotics/chorus/runtime/metrics"
	"github.com/chorus-robotics/chorus/runtime/topic"
)

// A query delivered twice runs once: a speak redelivered by the broker
// must not be spoken twice. A copy that arrives while it runs is dropped;
// one that arrives after gets the same result again.
func TestDuplicateQueryRunsOnce(t *testing.T) {
	mem := bustest.NewMemory(t, bustest.MemoryOptions{Duplicate: func(topic string, p []byte) bool {
		return strings.HasSuffix(topic, "/queries")
	}})
	var runs atomic.Int32
	m := metrics.New()
	s := &Server{Bus: mem.Conn(nil, nil), Scheme: topic.New(""), Device: "pi5", Metrics: m}
	s.Handle("speak", func(context.Context, string, json.RawMessage) (any, error) {
		runs.Add(1)
		time.Sleep(50 * time.Millisecond)
		return map[string]any{"durationMs": 50}, nil
	})
	serveUntilEnd(t, s)
	mem.Settle()
	c := NewClient(mem.Conn(nil, nil), topic.New(""), "kyoko", ClientOptions{})
	if _, err := c.Ask(context.Background(), "pi5", "speak", map[string]string{"message": "hi"}, 5*time.Second); err != nil {
		t.Fatal(err)
	}
	mem.Settle()
	if n := runs.Load(); n != 1 {
		t.Fatalf("a query delivered twice ran %d times", n)
	}
	if n := metrics.Value(m.Duplicates.WithLabelValues("query", "query")); n != 1 {
		t.Fatalf("duplicate queries counted %v, want 1", n)
	}
}

// A query or a result lost on the way is recovered: the client sends the
// query again (same id) until it hears the result; the device runs it once
// and answers the copy from its cache.
func TestLostQueryAndLostResultAreRecovered(t *testing.T) {
	for _, lose := range []string{"/queries", "/results"} {
		t.Run(strings.Trim(lose, "/"), func(t *testing.T) {
			var lost atomic.Int32
			mem := bustest.NewMemory(t, bustest.MemoryOptions{Drop: func(_ *bustest.MemConn, topic string, p []byte) bool {
				return strings.HasSuffix(topic, lose) && lost.CompareAndSwap(0, 1)
			}})
			var runs atomic.Int32
			s := &Server{Bus: mem.Conn(nil, nil), Scheme: topic.New(""), Device: "pi5"}
			s.Handle("speak", func(context.Context, string, json.RawMessage) (any, error) {
				runs.Add(1)
				return map[string]any{"durationMs": 1}, nil
			})
			serveUntilEnd(t, s)
			mem.Settle()
			c := NewClient(mem.Conn(nil, nil), topic.New(""), "kyoko", ClientOptions{RetryEvery: 100 * time.Millisecond})
			start := time.Now()
			if _, err := c.Ask(context.Background(), "pi5", "speak", map[string]string{"message": "hi"}, 5*time.Second); err != nil {
				t.Fatal(err)
			}
			if d := time.Since(start); d > time.Second {
				t.Fatalf("answered after %v", d)
			}
			if lost.Load() != 1 {
				t.Fatal("the test meant to lose one")
			}
			if n := runs.Load(); n != 1 {
				t.Fatalf("ran %d times", n)
			}
		})
	}
}
