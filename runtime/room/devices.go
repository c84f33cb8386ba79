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
func FollowDevices(ctx context.Context, r *Room) (*Devices, error) {
	d := &Devices{online: map[string]map[string]bool{}, seen: map[string]bool{}, byID: map[string]string{}}
	return d, r.OnPresence(ctx, d.update)
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
