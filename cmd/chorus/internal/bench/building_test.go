package bench

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/chorus-robotics/chorus/runtime/bus/bustest"
)

// A tiny building on the embedded broker: one room, then two, of two
// companions, two person turns each. Every step grants every person's
// Message, the robots answer one another (silences measured), the
// observers see the traffic, and this process's CPU is read.
func TestBuildingSmoke(t *testing.T) {
	url := bustest.StartEmbedded(t, bustest.Options{}).URL()
	var out strings.Builder
	o := BuildingOptions{Broker: url, QoS: 1, Rooms: []int{1, 2}, Companions: 2, Turns: 2, BrokerPIDs: []int{os.Getpid()}}
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
		if r.Messages <= 0 || r.Wall <= 0 || r.BrokerCPU <= 0 {
			t.Errorf("%d rooms: %d messages in %v, broker CPU %v", r.Rooms, r.Messages, r.Wall, r.BrokerCPU)
		}
	}
}
