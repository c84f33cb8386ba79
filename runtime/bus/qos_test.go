package bus_test

import (
	"context"
	"sync"
	"testing"
	"time"

	mqtt "github.com/mochi-mqtt/server/v2"
	"github.com/mochi-mqtt/server/v2/packets"

	"github.com/chorus-robotics/chorus/runtime/bus"
	"github.com/chorus-robotics/chorus/runtime/bus/bustest"
)

// qosSeen records, in the embedded broker, the QoS of the Last Will a
// client's CONNECT asks for and of every PUBLISH the client sends.
type qosSeen struct {
	mqtt.HookBase
	client string // the client id to watch

	mu       sync.Mutex
	will     []byte            // one entry per CONNECT with a will
	publish  map[string][]byte // topic → QoS of each PUBLISH
	received chan string       // the topic of each PUBLISH
}

func (h *qosSeen) ID() string { return "qos-seen" }

func (h *qosSeen) Provides(b byte) bool { return b == mqtt.OnConnect || b == mqtt.OnPublish }

func (h *qosSeen) OnConnect(cl *mqtt.Client, pk packets.Packet) error {
	if cl.ID == h.client && pk.Connect.WillFlag {
		h.mu.Lock()
		h.will = append(h.will, pk.Connect.WillQos)
		h.mu.Unlock()
	}
	return nil
}

func (h *qosSeen) OnPublish(cl *mqtt.Client, pk packets.Packet) (packets.Packet, error) {
	if cl.ID == h.client {
		h.mu.Lock()
		h.publish[pk.TopicName] = append(h.publish[pk.TopicName], pk.FixedHeader.Qos)
		h.mu.Unlock()
		select {
		case h.received <- pk.TopicName:
		default: // more than the test waits for: the counts below tell
		}
	}
	return pk, nil
}

// Every publish follows Options.QoS: the birth and the Last Will too. On a
// NATS cluster a QoS 1 birth waits on JetStream after a node loss, and
// nats-server closes the connection when no ack comes within a second —
// the Will fires and the room reads a running robot as offline; qos 0 is
// the setting that keeps the room's traffic off JetStream.
func TestBirthAndWillFollowTheQoS(t *testing.T) {
	for _, qos := range []byte{0, 1} {
		t.Run(string('0'+qos), func(t *testing.T) {
			br := bustest.StartEmbedded(t, bustest.Options{})
			const presence, said = "test/presence/kyoko", "test/said"
			seen := &qosSeen{client: "kyoko-qos", publish: map[string][]byte{}, received: make(chan string, 16)}
			if err := br.Inner().Server().AddHook(seen, nil); err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			b, err := bus.Dial(ctx, bus.Options{Broker: br.URL(), ClientID: seen.client, Username: "kyoko", QoS: bus.QoS(qos),
				Birth: fixed(presence, "online"),
				Will:  &bus.Retained{Topic: presence, Payload: []byte("offline")}})
			if err != nil {
				t.Fatal(err)
			}
			// The birth goes out on the connection's own goroutine: wait
			// for it, so that Close does not overtake it.
			await := func(what string) {
				select {
				case <-seen.received:
				case <-ctx.Done():
					t.Fatalf("the broker did not get %s: %v", what, ctx.Err())
				}
			}
			await("the birth")
			if err := b.Publish(ctx, said, []byte("hello"), false); err != nil {
				t.Fatal(err)
			}
			b.Close() // publishes the Will itself before a clean disconnect
			await("the publish")
			await("the will")
			seen.mu.Lock()
			defer seen.mu.Unlock()
			if len(seen.will) != 1 || seen.will[0] != qos {
				t.Errorf("CONNECT's will QoS: %v, want [%d]", seen.will, qos)
			}
			for tp, want := range map[string]int{presence: 2, said: 1} {
				got := seen.publish[tp]
				if len(got) != want {
					t.Errorf("%s: %d publishes, want %d", tp, len(got), want)
				}
				for i, q := range got {
					if q != qos {
						t.Errorf("%s: publish %d at QoS %d, want %d", tp, i, q, qos)
					}
				}
			}
		})
	}
}
