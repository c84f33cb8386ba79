package bench

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/chorus-robotics/chorus/runtime/bus/bustest"
)

// A tiny building, on the embedded broker and on a real Mosquitto as an
// operator runs it: one room, then two, of two companions, two person
// turns each. Every step grants every person's Message, the robots answer
// one another (silences measured), the observers see the traffic, and the
// broker's CPU is read (the embedded broker's is this process's). On the
// embedded broker, -race once caught mochi v2.7.9 reading a topic's
// retained path while another client's retained publish wrote it; the
// module's patched copy reads it under its lock (RELIABILITY.md).
func TestBuildingSmoke(t *testing.T) {
	for _, b := range []struct {
		name  string
		start func(t *testing.T) (url string, pid int)
	}{
		{"embedded", func(t *testing.T) (string, int) {
			return bustest.StartEmbedded(t, bustest.Options{}).URL(), os.Getpid()
		}},
		{"mosquitto", func(t *testing.T) (string, int) {
			mq := bustest.StartMosquitto(t, bustest.Options{})
			return mq.URL(), mq.PID()
		}},
	} {
		t.Run(b.name, func(t *testing.T) {
			url, pid := b.start(t)
			buildingSmoke(t, BuildingOptions{Broker: url, QoS: 1, Rooms: []int{1, 2}, Companions: 2, Turns: 2, BrokerPIDs: []int{pid}})
		})
	}
}

func buildingSmoke(t *testing.T, o BuildingOptions) {
	var out strings.Builder
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	rows, err := Building(ctx, &out, o)
	t.Log("\n" + out.String())
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 2 {
		t.Fatalf("%d rows, want 2", len(rows))
	}
	for _, r := range rows {
		if want := r.Rooms * o.Turns; len(r.Grants) != want {
			t.Errorf("%d rooms: %d grants, want %d", r.Rooms, len(r.Grants), want)
		}
		if len(r.Gaps) == 0 {
			t.Errorf("%d rooms: no silence between robots measured", r.Rooms)
		}
		if len(r.Votes) == 0 || len(r.Votes) != len(r.Floors) || len(r.Votes) > len(r.Grants) {
			t.Errorf("%d rooms: %d grants split into %d votes and %d floor times", r.Rooms, len(r.Grants), len(r.Votes), len(r.Floors))
		}
		for i := range r.Votes {
			if r.Votes[i] < 0 || r.Floors[i] < 0 {
				t.Errorf("%d rooms: a grant split into votes %v and floor %v", r.Rooms, r.Votes[i], r.Floors[i])
			}
		}
		if len(r.RoomP99) != r.Rooms {
			t.Errorf("%d rooms: %d rooms' own p99", r.Rooms, len(r.RoomP99))
		}
		if r.Messages <= 0 || r.Wall <= 0 || r.BrokerCPU <= 0 {
			t.Errorf("%d rooms: %d messages in %v, broker CPU %v", r.Rooms, r.Messages, r.Wall, r.BrokerCPU)
		}
	}
}

// -spread gives room k the endpoints turned to start at number k-1, the
// others after it as fallbacks; without it every room uses -broker first.
func TestBuildingEndpoints(t *testing.T) {
	o := BuildingOptions{Broker: "tcp://n1", Brokers: []string{"tcp://n2", "tcp://n3"}}
	spread := o
	spread.Spread = true
	solo := BuildingOptions{Broker: "tcp://m", Spread: true}
	for _, c := range []struct {
		o      BuildingOptions
		k      int
		first  string
		others string
	}{
		{o, 1, "tcp://n1", "tcp://n2,tcp://n3"},
		{o, 2, "tcp://n1", "tcp://n2,tcp://n3"},
		{spread, 1, "tcp://n1", "tcp://n2,tcp://n3"},
		{spread, 2, "tcp://n2", "tcp://n3,tcp://n1"},
		{spread, 3, "tcp://n3", "tcp://n1,tcp://n2"},
		{spread, 4, "tcp://n1", "tcp://n2,tcp://n3"},
		{solo, 5, "tcp://m", ""},
	} {
		first, others := c.o.endpoints(c.k)
		if first != c.first || strings.Join(others, ",") != c.others {
			t.Errorf("spread %v, room %d: %s then %v, want %s then %s", c.o.Spread, c.k, first, others, c.first, c.others)
		}
	}
	if first, others := spread.endpoints(2); first != "tcp://n2" || len(spread.Brokers) != 2 || spread.Brokers[0] != "tcp://n2" || len(others) != 2 {
		t.Errorf("turning the endpoints changed the options: %v", spread.Brokers)
	}
}
