package companion_test

import (
	"testing"
	"time"

	"github.com/chorus-robotics/chorus/runtime/companion"
	"github.com/chorus-robotics/chorus/runtime/room"
)

// A broker restarted without its retained messages, or the next node of
// mqtt.brokers, gets the companion's speaking status again once it is
// back (issue 31: on a switch every retained fact a robot owns is
// published again).
func TestSpeakingStatusOutlivesABrokerRestart(t *testing.T) {
	r, _, _ := memRig(t, newMemBrain(), nil)
	r.userSays("Hello there, how are you?")
	r.untilRest(10 * time.Second)
	r.br.Restart(t)
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		got := make(chan room.SpeakingEvent, 4)
		obs := room.New(r.dial("hana", nil, nil), r.s, "lr", nil, nil)
		obs.SetMembers(members)
		if err := obs.OnSpeaking(r.ctx, func(e room.SpeakingEvent) { got <- e }); err == nil {
			select {
			case e := <-got:
				if e.ID == "kyoko" && !e.Cleared && !e.Speaking.Speaking && e.Speaking.MessageID != "" {
					return
				}
				t.Fatalf("the speaking status after the restart: %+v", e)
			case <-time.After(500 * time.Millisecond):
			}
		}
	}
	t.Fatal("no retained speaking status after the broker's restart")
}

// A Last Will of a connection the companion already replaced can reach
// the room after the new connection's birth (a cluster node that closed
// the client, or its session taken over on another node): the room then
// reads a running companion as gone, and the floor publishes nothing for
// it. The companion says its presence again (issue 31, found killing a
// NATS node beside a load).
func TestCompanionOutlivesAStaleLastWill(t *testing.T) {
	r := newRig(t)
	r.startFloor(time.Second)
	r.startCompanion(cards()[0], newMemBrain(), func(c *companion.Config) {
		c.Presence = c.Room.Announce("kyoko", "kyoko", 0)
	})
	waitPresent(t, r, 1)
	got := make(chan room.PresenceEvent, 16)
	obs := room.New(r.dial("hana", nil, nil), r.s, "lr", nil, nil)
	obs.SetMembers(members)
	if err := obs.OnPresence(r.ctx, func(e room.PresenceEvent) {
		if e.ID == "kyoko" {
			got <- e
		}
	}); err != nil {
		t.Fatal(err)
	}
	// The broker sends the will of kyoko's replaced connection.
	_, will := obs.PresenceMessages("kyoko", "kyoko")
	if err := r.dial("kyoko", nil, nil).Publish(r.ctx, will.Topic, will.Payload, true); err != nil {
		t.Fatal(err)
	}
	sawOffline := false
	deadline := time.After(5 * time.Second)
	for {
		select {
		case e := <-got:
			switch {
			case !e.Presence.Online:
				sawOffline = true
			case sawOffline:
				return // online again, after the stale will
			}
		case <-deadline:
			t.Fatalf("kyoko runs, and its presence stayed offline after a stale will (offline seen: %v)", sawOffline)
		}
	}
}
