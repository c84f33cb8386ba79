package bus

import (
	paho "github.com/eclipse/paho.mqtt.golang"
	"github.com/eclipse/paho.mqtt.golang/packets"
)

// publishlessStore is paho's memory store minus PUBLISH packets, so that
// paho never resends a publish by itself after a reconnect: Publish does
// (see there). paho's own resend, in v1.5.1, sets the DUP flag on the very
// packet its writer may be sending (a data race, paho issue #703), and
// hands the resent packet a new token, so the caller's token never
// completes (a grant "published" across a broker restart timed out).
// Subscribe and unsubscribe packets are stored as before.
type publishlessStore struct{ paho.Store }

func (s publishlessStore) Put(key string, m packets.ControlPacket) {
	if _, ok := m.(*packets.PublishPacket); ok {
		return
	}
	s.Store.Put(key, m)
}
