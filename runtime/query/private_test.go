package query

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chorus-robotics/chorus/runtime/bus"
	"github.com/chorus-robotics/chorus/runtime/bus/bustest"
	"github.com/chorus-robotics/chorus/runtime/metrics"
	"github.com/chorus-robotics/chorus/runtime/protocol"
	"github.com/chorus-robotics/chorus/runtime/topic"
)

// A private server takes each identity's queries on that identity's own
// topic as theirs, and answers them there only: on a broker with the
// ACL, another identity reads none of it, and a query that says it is
// another's is refused. Two identities may use the same query id; each
// gets the answer to their own. A lost query is sent again and runs once.
func TestPrivateQueriesAreTheAskersOwn(t *testing.T) {
	br := bustest.StartEmbedded(t, bustest.Options{ACL: true})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	s := topic.New("")
	dial := func(id string) bus.Bus {
		b, err := bus.Dial(ctx, bus.Options{Broker: br.URL(), ClientID: id + "-" + protocol.NewID()[:8], Username: id})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { b.Close() })
		return b
	}
	var runs atomic.Int32
	m := metrics.New()
	srv := &Server{Bus: dial("dev"), Scheme: s, Device: "dev", Private: true, Metrics: m}
	srv.Handle(protocol.TypeMemory, func(_ context.Context, from string, body json.RawMessage) (any, error) {
		runs.Add(1)
		return map[string]any{"from": from, "body": body}, nil
	})
	done := make(chan struct{})
	go func() { defer close(done); srv.Serve(ctx) }()
	defer func() { cancel(); <-done }()
	time.Sleep(100 * time.Millisecond) // subscribed

	var mu sync.Mutex
	var heard []string
	eve := dial("eve")
	eve.Subscribe(ctx, "#", func(t string, _ []byte) {
		if strings.Contains(t, "/memory/") {
			mu.Lock()
			defer mu.Unlock()
			heard = append(heard, t)
		}
	})

	ask := func(as string) string {
		t.Helper()
		b := dial(as)
		if as == "eve" {
			b = eve
		}
		c := NewClient(b, s, as, ClientOptions{Private: true})
		defer c.Close()
		raw, err := c.Ask(ctx, "dev", protocol.TypeMemory, map[string]string{"op": "list"}, 5*time.Second)
		if err != nil {
			t.Fatalf("%s: %v", as, err)
		}
		var got struct{ From string }
		json.Unmarshal(raw, &got)
		return got.From
	}
	for _, as := range []string{"alice", "bob"} {
		if from := ask(as); from != as {
			t.Fatalf("%s's query ran as %q", as, from)
		}
	}

	// Raw queries with one id from alice and bob, and one from alice that
	// says it is bob's.
	answers := map[string]chan protocol.QueryResult{}
	raw := func(as, from string) {
		t.Helper()
		b := dial(as)
		ch := make(chan protocol.QueryResult, 4)
		answers[as+"/"+from] = ch
		if err := b.Subscribe(ctx, s.MemoryAnswer("dev", as), func(_ string, p []byte) {
			r, err := protocol.DecodeQueryResult(p, 0)
			if err == nil {
				ch <- r
			}
		}); err != nil {
			t.Fatal(err)
		}
		q, _ := json.Marshal(protocol.Query{JSONRPC: protocol.JSONRPC, Method: protocol.MethodQuery, ID: "same-id",
			Params: protocol.QueryParams{From: from, Type: protocol.TypeMemory, Body: json.RawMessage(`{"op":"list"}`)}})
		if err := b.Publish(ctx, s.Memory("dev", as), q, false); err != nil {
			t.Fatal(err)
		}
	}
	raw("alice", "alice")
	raw("bob", "bob")
	raw("mallory", "bob")
	for key, ch := range answers {
		select {
		case r := <-ch:
			as, from, _ := strings.Cut(key, "/")
			switch {
			case as != from && (r.Error == "" || !strings.Contains(r.Error, `params.from "bob" is not mallory`)):
				t.Errorf("%s's query saying it is %s's: %+v, want it refused", as, from, r)
			case as == from && (r.Result == nil || !strings.Contains(string(r.Result.Body), `"from":"`+as+`"`)):
				t.Errorf("%s's query with a shared id answered %+v", as, r)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("%s: no answer", key)
		}
	}
	if from := ask("eve"); from != "eve" {
		t.Fatalf("eve's query ran as %q", from)
	}
	if n := runs.Load(); n != 5 {
		t.Errorf("%d queries ran, want 5 (alice's and bob's twice, eve's, mallory's none)", n)
	}
	// Its gauges are its own: a device's public server writes the others.
	if got := metrics.Value(m.Held.WithLabelValues("query_private_recent_ids")); got != 5 {
		t.Errorf("query_private_recent_ids = %v, want 5", got)
	}
	if got := metrics.Value(m.Held.WithLabelValues("query_recent_ids")); got != 0 {
		t.Errorf("the private server wrote the public server's query_recent_ids: %v", got)
	}
	time.Sleep(200 * time.Millisecond)
	mu.Lock()
	defer mu.Unlock()
	own := 0
	for _, h := range heard {
		if !strings.Contains(h, "/memory/eve") {
			t.Fatalf("eve read another's private traffic: %v", heard)
		}
		own++
	}
	if own == 0 {
		t.Fatal("eve's subscription read nothing, not even her own answer: the test proves nothing")
	}
}
