package bridge

import (
	"context"
	"sync"

	"github.com/chorus-robotics/chorus/runtime/bus"
	"github.com/chorus-robotics/chorus/runtime/protocol"
	"github.com/chorus-robotics/chorus/runtime/query"
)

// Identities: one bus connection per name a client acts as, shared by its
// clients, and a device's open queries.

// identity is the bus connection of one name, shared by its clients.
type identity struct {
	b     bus.Bus
	refs  int
	asked *asked // the device's open queries (Device role)
	// results publishes the results the bridge gives for the device (an
	// action sent as action.send), from its bus handler (Device role).
	results *bus.Outbox
	stop    context.CancelFunc // ends results' goroutine
	// memory is the connection as the memory requests of its clients
	// use it (User role): one subscription to its answers.
	memory *query.Client
}

// resultQueue bounds the results the bridge has waiting for one device.
const resultQueue = 64

// acquire returns the bus connection of c's name, opening it (and, for a
// device, its query subscription) for the first client.
func (b *Bridge) acquire(ctx context.Context, c *client) (*identity, error) {
	name := c.tok.Name
	b.mu.Lock()
	if id, ok := b.ids[name]; ok {
		id.refs++
		b.mu.Unlock()
		return id, nil
	}
	b.mu.Unlock()
	conn, err := b.cfg.Dial(ctx, name)
	if err != nil {
		return nil, err
	}
	id := &identity{b: conn, refs: 1, asked: newAsked(256), stop: func() {}, memory: query.NewClient(conn, b.cfg.Room.Scheme, name, query.ClientOptions{Private: true, Log: b.log, Metrics: b.m})}
	if c.tok.Role == Device {
		id.results = &bus.Outbox{Bus: conn, Size: resultQueue, Log: b.log, OnDrop: func(string, error) {
			b.m.BridgeDropped.WithLabelValues("publish_failed").Inc()
		}}
		err := conn.Subscribe(ctx, b.cfg.Room.Scheme.Queries(name), func(_ string, payload []byte) {
			q, err := protocol.DecodeQuery(payload, 0)
			if err != nil {
				b.m.Reject(b.log, "query", name, string(protocol.KindOf(err)), err)
				return
			}
			if !id.asked.add(q.ID) {
				return // a copy (at-least-once): the client has it
			}
			if d := b.notifies(name, q); d != nil {
				b.act(name, id, d, q)
				return
			}
			if q.Method == protocol.MethodQuery && q.Params.Type == protocol.TypeSpeakMore {
				b.refuseMore(name, id, q)
				return
			}
			b.toDevice(name, payload)
		})
		if err != nil {
			conn.Close()
			return nil, err
		}
	}
	b.mu.Lock()
	if other, ok := b.ids[name]; ok { // another client opened it meanwhile
		other.refs++
		b.mu.Unlock()
		conn.Close()
		return other, nil
	}
	b.ids[name] = id
	if id.results != nil {
		octx, stop := context.WithCancel(context.Background())
		id.stop = stop
		go id.results.Run(octx)
	}
	b.mu.Unlock()
	return id, nil
}

// release lets go of a client's identity; the last client closes its
// connection (in the client's own goroutine, outside the lock).
func (b *Bridge) release(name string) {
	b.mu.Lock()
	id := b.ids[name]
	last := id != nil && id.refs <= 1
	if id != nil {
		id.refs--
	}
	if last {
		delete(b.ids, name)
	}
	b.mu.Unlock()
	if last {
		id.stop()
		id.memory.Close() // its questions fail now, not at their timeout
		id.b.Close()
	}
}

// asked is a device's queries not yet answered, bounded: the oldest is
// forgotten first.
type asked struct {
	mu    sync.Mutex
	max   int
	open  map[string]bool
	order []string
}

func newAsked(max int) *asked { return &asked{max: max, open: map[string]bool{}} }

// add records a query id; false when it is known already.
func (a *asked) add(id string) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	if _, ok := a.open[id]; ok {
		return false
	}
	if len(a.order) >= a.max {
		delete(a.open, a.order[0])
		a.order = a.order[1:]
	}
	a.open[id] = true
	a.order = append(a.order, id)
	return true
}

// answer marks id answered; false when it was not asked or is answered.
func (a *asked) answer(id string) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	if !a.open[id] {
		return false
	}
	a.open[id] = false
	return true
}
