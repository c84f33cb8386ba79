package room

import (
	"context"
	"sync"
)

// maxDevices bounds the presence table.
const maxDevices = 1024

// Devices follows which devices of a room are online, from the companions'
// retained presence (each names its device), for query.ClientOptions.Online:
// a query to a device known to be offline fails at once.
type Devices struct {
	mu     sync.Mutex
	online map[string]map[string]bool // device -> companions online on it
	seen   map[string]bool
	byID   map[string]string // companion -> device
}

// FollowDevices subscribes to r's presence and returns the table.
//
// When r's connection is lost the table forgets what it knew (issue 27): a
// broker that stops sends every client's Last Will first, so each device
// looked offline the moment before the connection went, and queries asked
// right after the reconnect — before the devices' presence comes back —
// were refused as "device is offline". Unknown devices are asked (with
// the query's retries and timeout); the retained presence read again
// after the reconnect fills the table anew.
func FollowDevices(ctx context.Context, r *Room) (*Devices, error) {
	d := &Devices{online: map[string]map[string]bool{}, seen: map[string]bool{}, byID: map[string]string{}}
	if l, ok := r.Bus.(interface{ OnLost(func()) }); ok {
		l.OnLost(d.forget)
	}
	return d, r.OnPresence(ctx, d.update)
}

// forget empties the table: nothing is known about any device.
func (d *Devices) forget() {
	d.mu.Lock()
	defer d.mu.Unlock()
	clear(d.online)
	clear(d.seen)
	clear(d.byID)
}

func (d *Devices) update(p PresenceEvent) {
	d.mu.Lock()
	defer d.mu.Unlock()
	dev := p.Presence.Device
	if p.Cleared {
		dev = d.byID[p.ID]
	}
	if dev == "" {
		return
	}
	if !d.seen[dev] && len(d.seen) >= maxDevices {
		return
	}
	d.seen[dev] = true
	if d.online[dev] == nil {
		d.online[dev] = map[string]bool{}
	}
	d.byID[p.ID] = dev
	if !p.Cleared && p.Presence.Online {
		d.online[dev][p.ID] = true
	} else {
		delete(d.online[dev], p.ID)
	}
}

// Online reports whether device is online, and whether its presence was
// ever seen.
func (d *Devices) Online(device string) (online, known bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return len(d.online[device]) > 0, d.seen[device]
}
