package realtime_test

import (
	"context"
	"sync"
	"testing"

	"github.com/chorus-robotics/chorus/runtime/bus/bustest"
	"github.com/chorus-robotics/chorus/runtime/metrics"
	"github.com/chorus-robotics/chorus/runtime/realtime"
	"github.com/chorus-robotics/chorus/runtime/room"
	"github.com/chorus-robotics/chorus/runtime/topic"
)

// memRoom is a realtime room on the memory broker: its members' rooms
// (mk), goroutines that end with the test (run), one metrics set.
type memRoom struct {
	mem *bustest.Memory
	s   topic.Scheme
	m   *metrics.Metrics
	ctx context.Context
	wg  sync.WaitGroup
}

func newMemRoom(t *testing.T) *memRoom {
	ctx, cancel := context.WithCancel(context.Background())
	r := &memRoom{mem: bustest.NewMemory(t), s: topic.New("").WithRoster("lr", members), m: metrics.New(), ctx: ctx}
	t.Cleanup(func() { cancel(); r.wg.Wait() })
	return r
}

// run runs f until the test ends.
func (r *memRoom) run(f func(context.Context) error) {
	r.wg.Add(1)
	go func() { defer r.wg.Done(); f(r.ctx) }()
}

// mk connects id to the room, with its presence.
func (r *memRoom) mk(id string) *room.Room {
	rm := room.New(nil, r.s, "lr", nil, r.m)
	rm.SetMembers(members)
	birth, will := rm.PresenceMessages(id, id)
	rm.Bus = r.mem.NamedConn(id, birth, will)
	return rm
}

// runFloor runs the room's floor, which a message opens, with limits l.
func (r *memRoom) runFloor(t *testing.T, l realtime.Limits) {
	t.Helper()
	f, err := realtime.NewFloor(realtime.FloorConfig{Room: r.mk("floor"), Members: members, ID: "floor", Limits: l, OpenOnMessage: true})
	if err != nil {
		t.Fatal(err)
	}
	r.run(f.Run)
}
