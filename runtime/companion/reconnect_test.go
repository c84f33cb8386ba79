package companion_test

import (
	"testing"
	"time"

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
