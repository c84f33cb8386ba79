package bus_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/chorus-robotics/chorus/runtime/bus"
	"github.com/chorus-robotics/chorus/runtime/bus/bustest"
	"github.com/chorus-robotics/chorus/runtime/topic"
)

// The permissions `chorus acl -format nats` renders hold on a real
// nats-server as the Mosquitto ACL does on Mosquitto (TestACL): nobody
// speaks under another's name, only members vote, only the floor grants,
// and a device's camera frames are for the room's members — except that
// NATS refuses a subscription its allow list does not cover, where
// Mosquitto grants it and filters each message.
func TestNATSPermissions(t *testing.T) {
	s := topic.New("")
	users := map[string]string{"kyoko": "pw-k", "hana": "pw-h", "floor": "pw-f", "alice": "pw-a", "cam": "pw-c"}
	n := bustest.StartNATSCluster(t, 1, bustest.Options{ACL: true, Users: users, Rosters: lrRoster})
	url := n.URLs()[0]
	withPW := func(o *bus.Options) { o.Password = users[o.Username]; o.QoS = bus.QoS(0) }
	alice := dial(t, url, "alice", withPW)
	ch := collect(t, alice, s.States("lr"))
	turns := collect(t, alice, s.Turns("lr"))
	kyoko := dial(t, url, "kyoko", withPW)
	floor := dial(t, url, "floor", withPW)
	hana := dial(t, url, "hana", withPW)
	ctx := context.Background()

	kyoko.Publish(shortCtx(t), s.State("lr", "hana"), []byte("spoofed state"), false)
	alice.Publish(shortCtx(t), s.State("lr", "alice"), []byte("a person's vote"), false)
	hana.Publish(shortCtx(t), s.Turns("lr"), []byte("fake grant"), false)
	if err := floor.Publish(ctx, s.Turns("lr"), []byte("grant"), false); err != nil {
		t.Fatal(err)
	}
	expect(t, turns, s.Turns("lr"), "grant", 5*time.Second)
	if err := kyoko.Publish(ctx, s.State("lr", "kyoko"), []byte("own state"), false); err != nil {
		t.Fatal(err)
	}
	expect(t, ch, s.State("lr", "kyoko"), "own state", 5*time.Second)
	expectNone(t, ch, s.State("lr", "hana"), 200*time.Millisecond)
	expectNone(t, ch, s.State("lr", "alice"), 200*time.Millisecond)

	// A person reads the room but not the devices' camera frames, and
	// cannot ask for everything at once; a member reads the frames.
	for _, f := range []string{s.Results("cam"), "chorus/#"} {
		if err := alice.Subscribe(shortCtx(t), f, func(string, []byte) {}); !errors.Is(err, bus.ErrRefused) {
			t.Errorf("alice subscribing to %s: %v, want refused", f, err)
		}
	}
	frames := collect(t, kyoko, "chorus/devices/+/results")
	cam := dial(t, url, "cam", withPW)
	if err := cam.Publish(ctx, s.Results("cam"), []byte("frame"), false); err != nil {
		t.Fatal(err)
	}
	expect(t, frames, s.Results("cam"), "frame", 5*time.Second)

	// A wrong password never connects.
	c, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	if b, err := bus.Dial(c, bus.Options{Broker: url, ClientID: "intruder", Username: "kyoko", Password: "wrong"}); err == nil {
		b.Close()
		t.Fatal("connected with a wrong password")
	}
}

// On a three-node NATS cluster, a client whose node dies goes on on the
// next node of mqtt.brokers: its retained presence (published again
// there) reads the same from every node, and it hears what is published
// on another node.
func TestNATSClusterFailOver(t *testing.T) {
	n := bustest.StartNATSCluster(t, 3, bustest.Options{})
	urls := n.URLs()
	pt := "chorus/rooms/lr/presence/kyoko"
	q0 := func(o *bus.Options) { o.QoS = bus.QoS(0) }
	dev := dial(t, urls[0], "kyoko", q0, func(o *bus.Options) {
		o.Brokers = urls[1:]
		o.Birth = fixed(pt, "online")
	})
	ch := collect(t, dev, "test/#")
	var watchers []<-chan received
	for i := 1; i < 3; i++ {
		w := dial(t, urls[i], "watcher", q0)
		watchers = append(watchers, collect(t, w, "chorus/rooms/lr/presence/+"))
	}
	for _, w := range watchers {
		expect(t, w, pt, "online", 15*time.Second)
	}
	// Connected before the loss: right after it, a node may refuse a new
	// login while JetStream elects (the clients already in keep going).
	pub := dial(t, urls[2], "pub", q0)
	n.Kill(0)
	// The birth is published again on the next node, and every node
	// passes it on.
	for _, w := range watchers {
		expect(t, w, pt, "online", 15*time.Second)
	}
	deadline := time.Now().Add(15 * time.Second)
	for {
		pub.Publish(context.Background(), "test/b", []byte("2"), false)
		if _, ok := firstOn(ch, "test/b", "2", 300*time.Millisecond); ok {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the client did not hear the cluster after its node died")
		}
	}
	// The node that comes back has the retained presence too (a node
	// may refuse connections while its JetStream catches up: retried).
	n.Restart(t, 0)
	deadline = time.Now().Add(20 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		w, err := bus.Dial(ctx, bus.Options{Broker: urls[0], ClientID: "watcher-back", Username: "watcher", QoS: bus.QoS(0)})
		cancel()
		if err == nil {
			defer w.Close()
			expect(t, collect(t, w, "chorus/rooms/lr/presence/+"), pt, "online", 15*time.Second)
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the restarted node never took a connection: %v", err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}
