package bus_test

import (
	"context"
	"crypto/tls"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chorus-robotics/chorus/runtime/bus"
	"github.com/chorus-robotics/chorus/runtime/bus/bustest"
	"github.com/chorus-robotics/chorus/runtime/metrics"
	"github.com/chorus-robotics/chorus/runtime/protocol"
	"github.com/chorus-robotics/chorus/runtime/topic"
)

// fixed is a birth message that is the same at every connect.
func fixed(topic, payload string) func(time.Time) *bus.Retained {
	return func(time.Time) *bus.Retained { return &bus.Retained{Topic: topic, Payload: []byte(payload)} }
}

// lrRoster is the test room's members, for the ACL.
var lrRoster = map[string][]string{"lr": {"kyoko", "hana"}}

type received struct {
	topic   string
	payload string
}

// collect subscribes filter and returns a channel of what arrives.
func collect(t *testing.T, b bus.Bus, filter string) <-chan received {
	t.Helper()
	ch := make(chan received, 64)
	err := b.Subscribe(context.Background(), filter, func(topic string, payload []byte) {
		select {
		case ch <- received{topic, string(payload)}:
		default:
			t.Errorf("test channel full")
		}
	})
	if err != nil {
		t.Fatalf("subscribe %s: %v", filter, err)
	}
	return ch
}

// firstOn is the first message on topic (with payload, when given) that
// ch receives within within.
func firstOn(ch <-chan received, topic, payload string, within time.Duration) (received, bool) {
	timer := time.NewTimer(within)
	defer timer.Stop()
	for {
		select {
		case r := <-ch:
			if r.topic == topic && (payload == "" || r.payload == payload) {
				return r, true
			}
		case <-timer.C:
			return received{}, false
		}
	}
}

func expect(t *testing.T, ch <-chan received, topic, payload string, within time.Duration) {
	t.Helper()
	if _, ok := firstOn(ch, topic, payload, within); !ok {
		t.Fatalf("did not receive %q on %s within %v", payload, topic, within)
	}
}

func expectNone(t *testing.T, ch <-chan received, topic string, within time.Duration) {
	t.Helper()
	if r, ok := firstOn(ch, topic, "", within); ok {
		t.Fatalf("received %q on %s, which the broker should have refused", r.payload, topic)
	}
}

func dial(t *testing.T, url, id string, mod ...func(*bus.Options)) *bus.MQTT {
	t.Helper()
	o := bus.Options{Broker: url, ClientID: id + "-" + protocol.NewID()[:8], Username: id, MaxReconnect: 200 * time.Millisecond}
	for _, m := range mod {
		m(&o)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	b, err := bus.Dial(ctx, o)
	if err != nil {
		t.Fatalf("dial %s as %s: %v", url, id, err)
	}
	t.Cleanup(func() { b.Close() })
	return b
}

// shortCtx ends after a second (or with the test): enough for a publish
// the broker takes, and a bound on one it refuses.
func shortCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	t.Cleanup(cancel)
	return ctx
}

func TestRoundTrip(t *testing.T) {
	bustest.ForEach(t, bustest.Options{}, func(t *testing.T, br bustest.Broker) {
		a := dial(t, br.URL(), "a")
		b := dial(t, br.URL(), "b")
		ch := collect(t, b, "test/+/x")
		for i := range 3 {
			p := fmt.Sprintf("hello %d", i)
			if err := a.Publish(context.Background(), "test/one/x", []byte(p), false); err != nil {
				t.Fatal(err)
			}
			expect(t, ch, "test/one/x", p, 5*time.Second)
		}
	})
}

// brokerAddr is the host:port of br itself, for a proxy in front of it.
func brokerAddr(br bustest.Broker) string {
	if b, ok := br.(*bustest.Embedded); ok {
		return b.Inner().Addr()
	}
	return strings.TrimPrefix(br.URL(), "tcp://")
}

func TestRetainedPresenceAndLastWill(t *testing.T) {
	s := topic.New("")
	bustest.ForEach(t, bustest.Options{ACL: true, People: []string{"watcher", "watcher2"}, Rosters: lrRoster}, func(t *testing.T, br bustest.Broker) {
		pt := s.Presence("lr", "kyoko")
		dev := brokerAddr(br)
		proxy := bustest.StartProxy(t, dev)
		kyoko := dial(t, proxy.URL(), "kyoko", func(o *bus.Options) {
			o.Birth = fixed(pt, "online")
			o.Will = &bus.Retained{Topic: pt, Payload: []byte("offline")}
		})
		_ = kyoko
		// A client that arrives later still sees the retained presence.
		late := dial(t, br.URL(), "watcher")
		ch := collect(t, late, s.Presences("lr"))
		expect(t, ch, pt, "online", 5*time.Second)

		// Kill the connection without DISCONNECT: the broker fires the Will.
		proxy.Cut()
		expect(t, ch, pt, "offline", 10*time.Second)

		// The Will is retained too.
		later := dial(t, br.URL(), "watcher2")
		expect(t, collect(t, later, s.Presences("lr")), pt, "offline", 5*time.Second)
	})
}

func TestCleanCloseAnnouncesOffline(t *testing.T) {
	s := topic.New("")
	bustest.ForEach(t, bustest.Options{ACL: true, People: []string{"watcher"}, Rosters: lrRoster}, func(t *testing.T, br bustest.Broker) {
		pt := s.Presence("lr", "hana")
		w := dial(t, br.URL(), "watcher")
		ch := collect(t, w, s.Presences("lr"))
		hana := dial(t, br.URL(), "hana", func(o *bus.Options) {
			o.Birth = fixed(pt, "online")
			o.Will = &bus.Retained{Topic: pt, Payload: []byte("offline")}
		})
		expect(t, ch, pt, "online", 5*time.Second)
		hana.Close()
		expect(t, ch, pt, "offline", 5*time.Second)
		if err := hana.Publish(context.Background(), pt, []byte("x"), false); err != bus.ErrClosed {
			t.Fatalf("publish after close: %v, want ErrClosed", err)
		}
		hana.Close() // idempotent
	})
}

func TestReconnectAfterBrokerRestart(t *testing.T) {
	s := topic.New("")
	bustest.ForEach(t, bustest.Options{}, func(t *testing.T, br bustest.Broker) {
		m := metrics.New()
		pt := s.Presence("lr", "kyoko")
		sub := dial(t, br.URL(), "sub", func(o *bus.Options) { o.Metrics = m })
		ch := collect(t, sub, "test/#")
		dev := dial(t, br.URL(), "kyoko", func(o *bus.Options) {
			o.Birth = fixed(pt, "online")
		})
		pub := dial(t, br.URL(), "pub")
		if err := pub.Publish(context.Background(), "test/before", []byte("1"), false); err != nil {
			t.Fatal(err)
		}
		expect(t, ch, "test/before", "1", 5*time.Second)

		br.Restart(t) // drops every connection and forgets retained messages

		// The subscriber resubscribes on its own; keep publishing until it hears.
		deadline := time.Now().Add(15 * time.Second)
		var got atomic.Bool
		for !got.Load() && time.Now().Before(deadline) {
			ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
			pub.Publish(ctx, "test/after", []byte("2"), false)
			cancel()
			select {
			case r := <-ch:
				if r.topic == "test/after" {
					got.Store(true)
				}
			case <-time.After(200 * time.Millisecond):
			}
		}
		if !got.Load() {
			t.Fatal("subscriber did not receive after the broker restarted")
		}
		if n := metrics.Value(m.Reconnects); n < 1 {
			t.Fatalf("reconnects metric = %v, want >= 1", n)
		}
		// The device re-announced its presence to the new broker.
		w := dial(t, br.URL(), "watcher")
		expect(t, collect(t, w, s.Presences("lr")), pt, "online", 10*time.Second)
		_ = dev
	})
}

func TestACL(t *testing.T) {
	s := topic.New("")
	users := map[string]string{"kyoko": "pw-k", "hana": "pw-h", "floor": "pw-f", "watcher": "pw-w"}
	bustest.ForEach(t, bustest.Options{ACL: true, Users: users, Rosters: lrRoster}, func(t *testing.T, br bustest.Broker) {
		withPW := func(o *bus.Options) { o.Password = users[o.Username] }
		w := dial(t, br.URL(), "watcher", withPW)
		ch := collect(t, w, s.Prefix+"/rooms/#") // a non-member may not read devices' results
		kyoko := dial(t, br.URL(), "kyoko", withPW)
		floor := dial(t, br.URL(), "floor", withPW)
		hana := dial(t, br.URL(), "hana", withPW)
		ctx := context.Background()

		// Denied: a state, a presence and a grant not under one's own name.
		kyoko.Publish(shortCtx(t), s.State("lr", "hana"), []byte("spoofed state"), false)
		kyoko.Publish(shortCtx(t), s.Presence("lr", "hana"), []byte("spoofed presence"), true)
		hana.Publish(shortCtx(t), s.Turns("lr"), []byte("fake grant"), false)
		// Allowed: own state, and a grant from the floor, published after.
		if err := floor.Publish(ctx, s.Turns("lr"), []byte("grant"), false); err != nil {
			t.Fatal(err)
		}
		expect(t, ch, s.Turns("lr"), "grant", 5*time.Second)
		expectNone(t, ch, s.State("lr", "hana"), 300*time.Millisecond)

		if err := kyoko.Publish(ctx, s.State("lr", "kyoko"), []byte("own state"), false); err != nil {
			t.Fatal(err)
		}
		expect(t, ch, s.State("lr", "kyoko"), "own state", 5*time.Second)

		// A wrong password never connects.
		c, cancel := context.WithTimeout(ctx, 3*time.Second)
		defer cancel()
		if b, err := bus.Dial(c, bus.Options{Broker: br.URL(), ClientID: "intruder", Username: "kyoko", Password: "wrong"}); err == nil {
			b.Close()
			t.Fatal("connected with a wrong password")
		}
	})
}

// Two parts of one device (the watchdog's probe and the query client, say)
// may subscribe to the same filter on one connection: both hear every
// message. Before, the second handler replaced the first (issue 9, defect 4).
func TestSameFilterFansOutToEveryHandler(t *testing.T) {
	bustest.ForEach(t, bustest.Options{}, func(t *testing.T, br bustest.Broker) {
		pub := dial(t, br.URL(), "pub")
		sub := dial(t, br.URL(), "sub")
		if err := pub.Publish(context.Background(), "fan/retained", []byte("r"), true); err != nil {
			t.Fatal(err)
		}
		first := collect(t, sub, "fan/#")
		expect(t, first, "fan/retained", "r", 5*time.Second)
		second := collect(t, sub, "fan/#")
		// A second subscriber of the filter gets the retained messages too.
		expect(t, second, "fan/retained", "r", 5*time.Second)
		if err := pub.Publish(context.Background(), "fan/live", []byte("x"), false); err != nil {
			t.Fatal(err)
		}
		expect(t, first, "fan/live", "x", 5*time.Second)
		expect(t, second, "fan/live", "x", 5*time.Second)
	})
}

// A publish made while the broker is away is sent once the connection is
// back (QoS 1, at least once). Before, paho dropped it from its store on
// the reconnect of a clean session and the caller was told it succeeded.
func TestPublishDuringBrokerRestartArrives(t *testing.T) {
	bustest.ForEach(t, bustest.Options{}, func(t *testing.T, br bustest.Broker) {
		pub := dial(t, br.URL(), "pub")
		br.Stop()
		done := make(chan error, 1)
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
			defer cancel()
			// Retained, so that a watcher that connects later proves the
			// broker has it.
			done <- pub.Publish(ctx, "outage/grant", []byte("g"), true)
		}()
		time.Sleep(300 * time.Millisecond)
		br.Restart(t)
		select {
		case err := <-done:
			if err != nil {
				t.Fatalf("publish across the outage: %v", err)
			}
		case <-time.After(15 * time.Second):
			t.Fatal("publish did not return after the broker came back")
		}
		w := dial(t, br.URL(), "watcher")
		expect(t, collect(t, w, "outage/#"), "outage/grant", "g", 5*time.Second)
	})
}

// The retained presence a device announces on every (re)connect says when
// that connection came up, not when the process first started (issue 9,
// defect 9).
func TestBirthIsStampedAtEveryConnect(t *testing.T) {
	s := topic.New("")
	bustest.ForEach(t, bustest.Options{}, func(t *testing.T, br bustest.Broker) {
		pt := s.Presence("lr", "kyoko")
		dial(t, br.URL(), "kyoko", func(o *bus.Options) {
			o.Birth = func(now time.Time) *bus.Retained {
				return &bus.Retained{Topic: pt, Payload: []byte(now.UTC().Format(time.RFC3339Nano))}
			}
		})
		w := dial(t, br.URL(), "watcher")
		ch := collect(t, w, pt)
		var first time.Time
		select {
		case r := <-ch:
			first, _ = time.Parse(time.RFC3339Nano, r.payload)
		case <-time.After(5 * time.Second):
			t.Fatal("no birth")
		}
		time.Sleep(50 * time.Millisecond)
		br.Restart(t)
		w2 := dial(t, br.URL(), "watcher2")
		ch2 := collect(t, w2, pt)
		deadline := time.After(15 * time.Second)
		for {
			select {
			case r := <-ch2:
				at, err := time.Parse(time.RFC3339Nano, r.payload)
				if err != nil {
					t.Fatal(err)
				}
				if !at.After(first) {
					t.Fatalf("birth after the reconnect says %v, the first said %v", at, first)
				}
				return
			case <-deadline:
				t.Fatal("no birth after the restart")
			}
		}
	})
}

// A client may not leave a Last Will on a topic it may not publish: a will
// is a publish the broker makes for it when it drops, and could forge a
// grant or mark a companion offline. Both brokers refuse the connection.
// A denied publish is dropped without cutting the publisher off (Mosquitto
// acknowledges and drops it; the embedded broker now does the same).
func TestForgedWillRefusedAndDeniedPublishKeepsTheConnection(t *testing.T) {
	s := topic.New("")
	bustest.ForEach(t, bustest.Options{ACL: true, People: []string{"watcher", "mallory"}, Rosters: lrRoster}, func(t *testing.T, br bustest.Broker) {
		w := dial(t, br.URL(), "watcher")
		ch := collect(t, w, s.Prefix+"/rooms/#") // a non-member may not read devices' results
		forged := []byte(`{"from":"floor","messageId":"m1","speaker":"mallory","reason":"speak","decidedBy":"all-voted","votes":[]}`)
		dev := brokerAddr(br)
		for _, will := range []*bus.Retained{
			{Topic: s.Turns("lr"), Payload: forged},
			{Topic: s.Presence("lr", "kyoko"), Payload: []byte(`{"online":false}`)},
		} {
			proxy := bustest.StartProxy(t, dev)
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
			b, err := bus.Dial(ctx, bus.Options{Broker: proxy.URL(), ClientID: "mallory-" + protocol.NewID()[:8], Username: "mallory", Will: will, MaxReconnect: 100 * time.Millisecond})
			cancel()
			if err == nil { // Mosquitto lets it connect, then never sends the will
				proxy.Cut()
				b.Close()
			}
			expectNone(t, ch, will.Topic, 500*time.Millisecond)
		}

		m := dial(t, br.URL(), "mallory")
		start := time.Now()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := m.Publish(ctx, s.State("lr", "kyoko"), []byte("spoof"), false); err != nil {
			t.Fatalf("denied publish: %v", err)
		}
		if err := m.Publish(ctx, s.Message("lr", "mallory"), []byte("allowed after"), false); err != nil {
			t.Fatal(err)
		}
		expect(t, ch, s.Message("lr", "mallory"), "allowed after", 5*time.Second)
		if d := time.Since(start); d > time.Second {
			t.Fatalf("a denied publish held the client up for %v (disconnected?)", d)
		}
	})
}

// MQTT over TLS with client certificates, on both brokers: a client with a
// certificate the broker's CA signed connects; one without, or with a
// certificate from another CA, is refused (issue 10).
func TestTLSWithClientCertificates(t *testing.T) {
	pki := bustest.NewPKI(t)
	bustest.ForEach(t, bustest.Options{PKI: pki}, func(t *testing.T, br bustest.Broker) {
		if !strings.HasPrefix(br.URL(), "ssl://") {
			t.Fatalf("url %s", br.URL())
		}
		withCert := pki.ClientTLS(t, true)
		a := dial(t, br.URL(), "a", func(o *bus.Options) { o.TLS = withCert })
		b := dial(t, br.URL(), "b", func(o *bus.Options) { o.TLS = withCert })
		ch := collect(t, b, "tls/#")
		if err := a.Publish(context.Background(), "tls/x", []byte("secret"), false); err != nil {
			t.Fatal(err)
		}
		expect(t, ch, "tls/x", "secret", 5*time.Second)

		other, err := tls.LoadX509KeyPair(pki.OtherCert, pki.OtherKey)
		if err != nil {
			t.Fatal(err)
		}
		wrongCA := pki.ClientTLS(t, false)
		wrongCA.Certificates = []tls.Certificate{other}
		for name, cfg := range map[string]*tls.Config{"no certificate": pki.ClientTLS(t, false), "another CA's certificate": wrongCA} {
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
			c, err := bus.Dial(ctx, bus.Options{Broker: br.URL(), ClientID: "intruder-" + protocol.NewID()[:8], Username: "intruder",
				TLS: cfg, MaxReconnect: 100 * time.Millisecond})
			cancel()
			if err == nil {
				c.Close()
				t.Errorf("connected with %s", name)
			}
		}
	})
}

// A device's results (its camera frames) reach the rooms' members only
// (issue 10): the embedded broker refuses a non-member's subscription,
// Mosquitto delivers it nothing.
func TestResultsReadableByMembersOnly(t *testing.T) {
	s := topic.New("")
	bustest.ForEach(t, bustest.Options{ACL: true, Rosters: lrRoster}, func(t *testing.T, br bustest.Broker) {
		member := dial(t, br.URL(), "kyoko")
		mine := collect(t, member, s.Results("pi5"))
		stranger := dial(t, br.URL(), "mallory")
		got := make(chan string, 4)
		serr := stranger.Subscribe(context.Background(), s.Results("pi5"), func(_ string, p []byte) { got <- string(p) })
		device := dial(t, br.URL(), "pi5")
		frame := `{"jsonrpc":"2.0","id":"q1","result":{"success":true,"body":{"image":"..."}}}`
		if err := device.Publish(context.Background(), s.Results("pi5"), []byte(frame), false); err != nil {
			t.Fatal(err)
		}
		expect(t, mine, s.Results("pi5"), frame, 5*time.Second)
		select {
		case p := <-got:
			t.Fatalf("a non-member read a device's result: %s", p)
		case <-time.After(300 * time.Millisecond):
		}
		t.Logf("%s: the non-member's subscription: %v", br.Name(), serr)
	})
}

// With several endpoints (issue 31: a clustered broker's nodes), losing
// the one in use moves the client to the next: its subscriptions are
// renewed there, its Birth is published there, and its OnReconnect hooks
// run (what it owns retained is said again).
func TestBrokersFailOverToTheNextEndpoint(t *testing.T) {
	a := bustest.StartEmbedded(t, bustest.Options{})
	b := bustest.StartEmbedded(t, bustest.Options{})
	pt := "chorus/rooms/lr/presence/kyoko"
	var hooks atomic.Int32
	dev := dial(t, a.URL(), "kyoko", func(o *bus.Options) {
		o.Brokers = []string{a.URL(), b.URL()}
		o.Birth = fixed(pt, "online")
	})
	dev.OnReconnect(func() { hooks.Add(1) })
	ch := collect(t, dev, "test/#")
	onA := dial(t, a.URL(), "pub-a")
	if err := onA.Publish(context.Background(), "test/a", []byte("1"), false); err != nil {
		t.Fatal(err)
	}
	expect(t, ch, "test/a", "1", 5*time.Second)

	a.Stop() // the node in use is gone for good

	// On the next node: its presence is there, and what is published there
	// reaches its subscription.
	w := dial(t, b.URL(), "watcher")
	expect(t, collect(t, w, "chorus/rooms/lr/presence/+"), pt, "online", 10*time.Second)
	onB := dial(t, b.URL(), "pub-b")
	deadline := time.Now().Add(10 * time.Second)
	for {
		onB.Publish(context.Background(), "test/b", []byte("2"), false)
		if _, ok := firstOn(ch, "test/b", "2", 300*time.Millisecond); ok {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the subscription was not renewed on the next node")
		}
	}
	if hooks.Load() < 1 {
		t.Fatal("the reconnect hooks did not run on the next node")
	}
}
