package bridge

import (
	"encoding/json"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/coder/websocket"

	"github.com/chorus-robotics/chorus/runtime/protocol"
)

// Frames out: JSON-RPC frames and error frames, and each client's bounded
// queues (a device's queries apart and first); a client that does not keep
// up is dropped, never waited for.

type client struct {
	tok     Token
	conn    *websocket.Conn
	out     chan []byte
	queries chan []byte  // a device's queries, apart from the room's traffic
	bytes   atomic.Int64 // bytes waiting in out, capped at Config.QueueBytes
	max     int64
	gone    chan struct{}
	once    sync.Once
	why     string
	// live: the room's traffic goes to this client (its hello, the room
	// as it is and the replay are queued); guarded by Bridge.mu.
	live bool
}

func frame(method string, params any) []byte {
	return mustJSON(map[string]any{"jsonrpc": protocol.JSONRPC, "method": method, "params": params})
}

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("bridge: a value of ours does not encode: %v", err))
	}
	return b
}

// errorCodes are the JSON-RPC codes of the refusals: the standard ones
// where they fit, else server errors (-32000 and below); data.reason has
// the counted reason. The package doc lists them (a test keeps the two,
// and every reason refused with, in step).
var errorCodes = map[string]int{"not_json": -32700, "invalid": -32600, "forbidden": -32001, "not_addressed": -32002,
	"rate_limited": -32003, "publish_failed": -32004, "camera": -32005, "memory": -32006}

// answerID is the id of an answer to a frame whose id is id: null unless
// the frame had a string or number id.
func answerID(id json.RawMessage) any {
	if len(id) > 0 && len(id) <= 2*protocol.MaxIDLen && (id[0] == '"' || id[0] == '-' || (id[0] >= '0' && id[0] <= '9')) {
		return id
	}
	return nil
}

// errorFrame is a JSON-RPC error answer to a frame (id may be absent).
func errorFrame(id json.RawMessage, reason, msg string) []byte {
	return mustJSON(map[string]any{"jsonrpc": protocol.JSONRPC, "id": answerID(id),
		"error": map[string]any{"code": errorCodes[reason], "message": msg, "data": map[string]string{"reason": reason}}})
}

// broadcast queues the frame enc makes for every live client; it never
// blocks (a bus handler), and with no client connected it encodes nothing.
func (b *Bridge) broadcast(enc func() []byte) {
	cs := b.those(func(c *client) bool { return c.live })
	if len(cs) == 0 {
		return
	}
	b.deliver(cs, enc())
}

// liveLocked returns the live clients; b.mu is held.
func (b *Bridge) liveLocked() []*client {
	var cs []*client
	for c := range b.clients {
		if c.live {
			cs = append(cs, c)
		}
	}
	return cs
}

// deliver queues f for each of cs; it never blocks.
func (b *Bridge) deliver(cs []*client, f []byte) {
	for _, c := range cs {
		if c.tok.Role == Device {
			if !c.reserve(len(f)) {
				b.m.BridgeDropped.WithLabelValues("frame_dropped").Inc()
				continue
			}
			select { // a body keeps its place whatever the room says
			case c.out <- f:
			default:
				c.bytes.Add(-int64(len(f)))
				b.m.BridgeDropped.WithLabelValues("frame_dropped").Inc()
			}
			continue
		}
		b.send(c, f)
	}
}

// those returns the clients ok picks, taken under the lock.
func (b *Bridge) those(ok func(*client) bool) []*client {
	b.mu.Lock()
	defer b.mu.Unlock()
	var cs []*client
	for c := range b.clients {
		if ok(c) {
			cs = append(cs, c)
		}
	}
	return cs
}

// send queues f for c, or drops c when its queue is full.
func (b *Bridge) send(c *client, f []byte) {
	if !c.reserve(len(f)) {
		if c.drop("too slow: the send queue is full") {
			b.m.BridgeDropped.WithLabelValues("slow").Inc()
			b.log.Warn("bridge: a client does not keep up; dropped", "role", c.tok.Role, "name", c.tok.Name, "queued_bytes", c.bytes.Load())
		}
		return
	}
	select {
	case <-c.gone: // dropped already: it is on its way out
	case c.out <- f:
		return
	default:
		if c.drop("too slow: the send queue is full") {
			b.m.BridgeDropped.WithLabelValues("slow").Inc()
			b.log.Warn("bridge: a client does not keep up; dropped", "role", c.tok.Role, "name", c.tok.Name, "queued", cap(c.out))
		}
	}
	c.bytes.Add(-int64(len(f)))
}

// reserve counts n more bytes waiting for c; false past the cap.
func (c *client) reserve(n int) bool {
	if c.bytes.Add(int64(n)) > c.max {
		c.bytes.Add(-int64(n))
		return false
	}
	return true
}

// sendQuery queues a query for a device client on its own queue, so that
// the room's chatter never crowds out the body's work; chatter that does
// not fit is what gets dropped for a device (counted), never the client.
func (b *Bridge) sendQuery(c *client, f []byte) {
	select {
	case <-c.gone:
	case c.queries <- f:
	default:
		if c.drop("too slow: its queries are not answered") {
			b.m.BridgeDropped.WithLabelValues("slow").Inc()
			b.log.Warn("bridge: a device does not take its queries; dropped", "name", c.tok.Name, "queued", cap(c.queries))
		}
	}
}

// drop ends c once; true for the call that did.
func (c *client) drop(why string) (first bool) {
	c.once.Do(func() {
		c.why = why
		close(c.gone)
		first = true
	})
	return first
}

// toDevice queues a query for every client registered as device name and
// says how many there were.
func (b *Bridge) toDevice(name string, f []byte) int {
	cs := b.those(func(c *client) bool { return c.tok.Role == Device && c.tok.Name == name })
	for _, c := range cs {
		b.sendQuery(c, f)
	}
	return len(cs)
}
