package query

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chorus-robotics/chorus/runtime/bus"
	"github.com/chorus-robotics/chorus/runtime/bus/bustest"
	"github.com/chorus-robotics/chorus/runtime/protocol"
	"github.com/chorus-robotics/chorus/runtime/topic"
)

func serve(t *testing.T, b bus.Bus, device string, handlers map[string]Handler) {
	t.Helper()
	s := &Server{Bus: b, Scheme: topic.New(""), Device: device}
	for typ, h := range handlers {
		s.Handle(typ, h)
	}
	serveUntilEnd(t, s)
}

// serveUntilEnd runs s until the test ends.
func serveUntilEnd(t *testing.T, s *Server) {
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); s.Serve(ctx) }()
	t.Cleanup(func() { cancel(); wg.Wait() })
}

// askers makes kyoko a member of a room: only members read devices'
// results (camera frames).
var askers = map[string][]string{"lr": {"kyoko"}}

func echo(_ context.Context, from string, body json.RawMessage) (any, error) {
	return map[string]any{"from": from, "body": body}, nil
}

// The device pi5 is no identity the ACL lists (a body behind a robot's
// bridge has a password and no config): it reads its own queries by the
// ACL's %u pattern.
func TestRoundTripOnRealBrokers(t *testing.T) {
	bustest.ForEach(t, bustest.Options{ACL: true, Rosters: askers}, func(t *testing.T, br bustest.Broker) {
		dial := func(id string) bus.Bus {
			b, err := bus.Dial(context.Background(), bus.Options{Broker: br.URL(), ClientID: id + t.Name(), Username: id})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { b.Close() })
			return b
		}
		serve(t, dial("pi5"), "pi5", map[string]Handler{"echo": echo})
		c := NewClient(dial("kyoko"), topic.New(""), "kyoko", ClientOptions{Timeout: 5 * time.Second})
		var res json.RawMessage
		var err error
		for range 20 { // the server subscribes asynchronously
			if res, err = c.Ask(context.Background(), "pi5", "echo", map[string]string{"x": "y"}, 250*time.Millisecond); err == nil {
				break
			}
		}
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(res), `"from":"kyoko"`) || !strings.Contains(string(res), `"x":"y"`) {
			t.Fatalf("result %s", res)
		}
		if c.Pending() != 0 {
			t.Fatalf("%d pending after answer", c.Pending())
		}
	})
}

func TestClientServer(t *testing.T) {
	mem := bustest.NewMemory(t)
	release := make(chan struct{})
	serve(t, mem.Conn(nil, nil), "pi5", map[string]Handler{
		"echo": echo,
		"fail": func(context.Context, string, json.RawMessage) (any, error) {
			return nil, errors.New("camera unplugged")
		},
		"boom": func(context.Context, string, json.RawMessage) (any, error) { panic("driver bug") },
		"slow": func(ctx context.Context, _ string, _ json.RawMessage) (any, error) {
			select {
			case <-release:
				return map[string]any{}, nil
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		},
	})
	time.Sleep(10 * time.Millisecond) // let Serve subscribe
	offline := map[string]bool{"gone": true}
	c := NewClient(mem.Conn(nil, nil), topic.New(""), "kyoko", ClientOptions{Timeout: time.Second, MaxPending: 2,
		Online: func(d string) (bool, bool) { return !offline[d], offline[d] }})
	ctx := context.Background()

	t.Run("answer", func(t *testing.T) {
		if _, err := c.Ask(ctx, "pi5", "echo", nil, 0); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("unknown type names it", func(t *testing.T) {
		_, err := c.Ask(ctx, "pi5", "smell", nil, 0)
		var re *RemoteError
		if !errors.As(err, &re) || !strings.Contains(re.Msg, `unknown query type "smell"`) {
			t.Fatalf("err = %v", err)
		}
	})
	t.Run("handler error", func(t *testing.T) {
		if _, err := c.Ask(ctx, "pi5", "fail", nil, 0); err == nil || !strings.Contains(err.Error(), "camera unplugged") {
			t.Fatalf("err = %v", err)
		}
	})
	t.Run("handler panic is an error result", func(t *testing.T) {
		if _, err := c.Ask(ctx, "pi5", "boom", nil, 0); err == nil || !strings.Contains(err.Error(), "panicked") {
			t.Fatalf("err = %v", err)
		}
		if _, err := c.Ask(ctx, "pi5", "echo", nil, 0); err != nil {
			t.Fatalf("device did not stay up: %v", err)
		}
	})
	t.Run("offline fails fast", func(t *testing.T) {
		start := time.Now()
		_, err := c.Ask(ctx, "gone", "speak", nil, 0)
		if !errors.Is(err, ErrOffline) || time.Since(start) > 100*time.Millisecond {
			t.Fatalf("err = %v after %v", err, time.Since(start))
		}
	})
	t.Run("timeout cleans up", func(t *testing.T) {
		_, err := c.Ask(ctx, "nobody-home", "vision", nil, 50*time.Millisecond)
		if !errors.Is(err, ErrTimeout) {
			t.Fatalf("err = %v", err)
		}
		if c.Pending() != 0 {
			t.Fatalf("%d pending after timeout", c.Pending())
		}
	})
	t.Run("pending bounded", func(t *testing.T) {
		var wg sync.WaitGroup
		for range 2 {
			wg.Add(1)
			go func() { defer wg.Done(); c.Ask(ctx, "pi5", "slow", nil, 0) }()
		}
		waitPending(t, c, 2)
		if _, err := c.Ask(ctx, "pi5", "echo", nil, 0); !errors.Is(err, ErrTooMany) {
			t.Fatalf("err = %v, want ErrTooMany", err)
		}
		close(release)
		wg.Wait()
	})
}

func waitPending(t *testing.T, c *Client, n int) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Second)
	for c.Pending() != n {
		if time.Now().After(deadline) {
			t.Fatalf("pending = %d, want %d", c.Pending(), n)
		}
		time.Sleep(time.Millisecond)
	}
}

func TestResultOnlyFromTheDeviceAsked(t *testing.T) {
	mem := bustest.NewMemory(t)
	s := topic.New("")
	// An impostor answers every query it sees on pi5's topic, on its own results topic and on pi5's.
	imp, impOut := mem.Conn(nil, nil), mem.Conn(nil, nil)
	imp.Subscribe(context.Background(), s.Queries("pi5"), func(_ string, b []byte) {
		var q struct{ ID string }
		json.Unmarshal(b, &q)
		fake, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": q.ID, "result": map[string]any{"success": true, "body": map[string]any{"fake": true}}})
		// Published on a second connection: a handler that publishes on its
		// own connection and waits wedges it (as with paho).
		impOut.Publish(context.Background(), s.Results("evil"), fake, false)
	})
	c := NewClient(mem.Conn(nil, nil), s, "kyoko", ClientOptions{})
	c.watch(context.Background(), "evil")
	if _, err := c.Ask(context.Background(), "pi5", "vision", nil, 100*time.Millisecond); !errors.Is(err, ErrTimeout) {
		t.Fatalf("err = %v: a result from another device was accepted", err)
	}
}

// A call given up with CancelOnGiveUp (a speak, always) is cancelled on the
// device; without it the device runs on (a look whose asker stopped
// waiting still ends by itself). No call branches on the type's name.
func TestCancelStopsRunningQuery(t *testing.T) {
	for _, c := range []struct {
		name   string
		ask    func(*Client) error
		cancel bool
	}{
		{"typed speak", func(c *Client) error {
			_, err := Call(context.Background(), c, "pi5", Speak, protocol.SpeakRequest{Message: "hi"}, 50*time.Millisecond)
			return err
		}, true},
		{"option on another type", func(c *Client) error {
			_, err := c.Ask(context.Background(), "pi5", "vision", nil, 50*time.Millisecond, CancelOnGiveUp())
			return err
		}, true},
		{"no option", func(c *Client) error {
			_, err := c.Ask(context.Background(), "pi5", "speak", nil, 50*time.Millisecond)
			return err
		}, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			mem := bustest.NewMemory(t)
			stopped := make(chan struct{})
			release := make(chan struct{})
			defer close(release)
			wait := func(ctx context.Context, _ string, _ json.RawMessage) (any, error) {
				select {
				case <-ctx.Done():
					close(stopped)
					return nil, ctx.Err()
				case <-release:
					return nil, errors.New("released")
				}
			}
			serve(t, mem.Conn(nil, nil), "pi5", map[string]Handler{"speak": wait, "vision": wait})
			time.Sleep(10 * time.Millisecond)
			cl := NewClient(mem.Conn(nil, nil), topic.New(""), "kyoko", ClientOptions{})
			if err := c.ask(cl); !errors.Is(err, ErrTimeout) {
				t.Fatalf("err = %v", err)
			}
			within := 2 * time.Second
			if !c.cancel {
				within = 300 * time.Millisecond
			}
			select {
			case <-stopped:
				if !c.cancel {
					t.Fatal("a query given up without CancelOnGiveUp was cancelled")
				}
			case <-time.After(within):
				if c.cancel {
					t.Fatal("query.cancel did not stop the running query")
				}
			}
		})
	}
}

// A device that goes away while a query waits on it is not waited for:
// Offline (its owner saw its connection drop) fails the query at once,
// and a device whose presence turns offline fails it at the next resend,
// not at the timeout. Other devices' queries are left alone.
func TestQueriesToADeviceThatWentAway(t *testing.T) {
	mem := bustest.NewMemory(t)
	var mu sync.Mutex
	online := map[string]bool{"web-bot": true, "pi5": true}
	c := NewClient(mem.Conn(nil, nil), topic.New(""), "bot", ClientOptions{Timeout: 20 * time.Second, RetryEvery: 50 * time.Millisecond,
		Online: func(d string) (bool, bool) { mu.Lock(); defer mu.Unlock(); return online[d], true }})
	defer c.Close()
	ctx := context.Background()
	type outcome struct {
		err  error
		took time.Duration
	}
	ask := func(device string, timeout time.Duration) chan outcome {
		ch := make(chan outcome, 1)
		go func() {
			start := time.Now()
			_, err := c.Ask(ctx, device, "speak", nil, timeout)
			ch <- outcome{err, time.Since(start)}
		}()
		return ch
	}
	gone, other := ask("web-bot", 0), ask("pi5", 2*time.Second)
	waitPending(t, c, 2)
	mu.Lock()
	online["web-bot"] = false
	mu.Unlock()
	c.Offline("web-bot")
	select {
	case o := <-gone:
		if !errors.Is(o.err, ErrOffline) || !strings.Contains(o.err.Error(), "web-bot went away") {
			t.Fatalf("err = %v", o.err)
		}
	case <-time.After(time.Second):
		t.Fatal("a query to a device that went away still waits")
	}
	if o := <-other; !errors.Is(o.err, ErrTimeout) {
		t.Fatalf("another device's query: %v, want its own timeout", o.err)
	}
	mu.Lock()
	online["pi5"] = true
	mu.Unlock()
	late := ask("pi5", 0) // presence turns offline while it waits
	waitPending(t, c, 1)
	mu.Lock()
	online["pi5"] = false
	mu.Unlock()
	if o := <-late; !errors.Is(o.err, ErrOffline) || o.took > 2*time.Second {
		t.Fatalf("err = %v after %v", o.err, o.took)
	}
	if c.Pending() != 0 {
		t.Fatalf("%d pending", c.Pending())
	}
}
