package config

import (
	"strings"
	"testing"
	"time"

	"github.com/chorus-robotics/chorus/runtime/floor"
	"github.com/chorus-robotics/chorus/runtime/realtime"
)

// The room's sections alone are a Document: decoded strictly, filled from
// their owners' defaults, every bad field named at once. A robot's whole
// file is device/robot's (its tests cover the shipped configs).
func TestRoomSectionsAlone(t *testing.T) {
	const room = "version: 1\ndevice: {id: dev1}\nroom: {name: lab, members: [k]}\nmqtt: {broker: \"tcp://127.0.0.1:1883\"}\n"
	c := &Config{}
	if err := Decode(strings.NewReader(room), c); err != nil {
		t.Fatal(err)
	}
	if c.Room.VoteTimeout != floor.DefaultVoteTimeout || c.Room.Realtime.PhaseTimeout != realtime.DefaultPhaseTimeout ||
		c.Room.FloorInstance != "dev1" || c.MQTT.Username != "dev1" || !c.InFile("room") || c.InFile("drivers") {
		t.Fatalf("defaults: %+v", c.Room)
	}
	for _, tc := range []struct{ yaml, want string }{
		{room + "drivers: {}\n", "drivers: unknown field"}, // a body section is a robot's
		{strings.Replace(room, "members: [k]", "members: [k], vote_timeout: soon", 1), `room.vote_timeout: must be a duration such as 3s or 500ms, got "soon"`},
		{strings.Replace(room, "members: [k]", "members: [k, k], pause: 2m", 1), "room.pause: must be from 0 to 1m, got 2m0s\nroom.members[1]: \"k\" is listed twice"},
	} {
		err := Decode(strings.NewReader(tc.yaml), &Config{})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: got %v, want %q", tc.yaml, err, tc.want)
		}
	}
	c = &Config{}
	c.Room.Realtime = realtime.DefaultSettings()
	c.Room.Realtime.RateLimit = time.Hour
	if err := Decode(strings.NewReader(room), c); err != nil || c.Room.Realtime.RateLimit != realtime.DefaultRateLimit {
		t.Fatalf("a parse starts from the defaults, not from what the value held: %v %v", err, c.Room.Realtime.RateLimit)
	}
}
