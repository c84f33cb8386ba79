// Package bus is how every Chorus component talks to the room: a small Bus
// interface (publish, subscribe, close) and its MQTT 3.1.1 implementation on
// paho.mqtt.golang.
//
// # Usage
//
//	b, err := bus.Dial(ctx, bus.Options{Broker: "tcp://127.0.0.1:1883", ClientID: "kyoko", Username: "kyoko",
//		Will: &bus.Retained{Topic: presenceTopic, Payload: offline},
//		Birth: func(now time.Time) *bus.Retained { return &bus.Retained{Topic: presenceTopic, Payload: online(now)} }})
//	b.Subscribe(ctx, "chorus/rooms/lr/messages/+", func(topic string, payload []byte) { ... })
//	b.Publish(ctx, topic, payload, false)
//	b.Close()
//
// # Concurrency
//
// Handlers are called one at a time, in arrival order, on the client's
// delivery goroutine: a handler must not block (hand the payload to a bounded
// queue and return), or every subscription of that client stalls. Publish and
// Subscribe are safe from any goroutine, including from inside a handler as
// long as the handler does not wait for the result.
//
// # Reconnects
//
// The client reconnects on its own; on every (re)connect it subscribes again
// to every filter and republishes the Birth message, so a restarted broker
// (which forgets sessions and retained messages) sees the device come back.
package bus

import (
	"context"
)

// Handler receives one message. It must not block.
type Handler func(topic string, payload []byte)

// Bus is a publish/subscribe connection to the room's broker.
type Bus interface {
	// Publish sends payload on topic and returns when the broker has it (QoS
	// 1) or when ctx ends.
	Publish(ctx context.Context, topic string, payload []byte, retain bool) error
	// Subscribe calls h for every message matching filter, until Close.
	Subscribe(ctx context.Context, filter string, h Handler) error
	// Close leaves the broker cleanly; it is idempotent.
	Close() error
}

// Retained is a retained message: a Last Will or a birth announcement.
type Retained struct {
	Topic   string
	Payload []byte
}
