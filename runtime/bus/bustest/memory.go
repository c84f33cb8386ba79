package bustest

import (
	"context"
	"strings"
	"sync"

	"github.com/chorus-robotics/chorus/runtime/bus"
)

// Memory is an in-process fake of a broker for unit tests: it matches MQTT
// filters (+ and #), keeps retained messages, and delivers synchronously on
// the publisher's goroutine. Conns made with Conn share it.
type Memory struct {
	mu       sync.Mutex
	subs     []memSub
	retained map[string][]byte
}

type memSub struct {
	conn   *MemConn
	filter string
	h      bus.Handler
}

// NewMemory returns an empty fake broker.
func NewMemory() *Memory { return &Memory{retained: map[string][]byte{}} }

// MemConn is one client of a Memory broker.
type MemConn struct {
	m      *Memory
	will   *bus.Retained
	mu     sync.Mutex
	closed bool
}

var _ bus.Bus = (*MemConn)(nil)

// Conn connects a client; birth is published at once, will on Kill.
func (m *Memory) Conn(birth, will *bus.Retained) *MemConn {
	c := &MemConn{m: m, will: will}
	if birth != nil {
		c.Publish(context.Background(), birth.Topic, birth.Payload, true)
	}
	return c
}

// Match reports whether topic t matches MQTT filter f.
func Match(f, t string) bool {
	fs, ts := strings.Split(f, "/"), strings.Split(t, "/")
	for i, p := range fs {
		if p == "#" {
			return true
		}
		if i >= len(ts) || (p != "+" && p != ts[i]) {
			return false
		}
	}
	return len(fs) == len(ts)
}

func (c *MemConn) isClosed() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.closed
}

// Publish delivers to every matching subscription before it returns.
func (c *MemConn) Publish(_ context.Context, t string, p []byte, retain bool) error {
	if c.isClosed() {
		return bus.ErrClosed
	}
	c.m.deliver(t, p, retain)
	return nil
}

func (m *Memory) deliver(t string, p []byte, retain bool) {
	m.mu.Lock()
	if retain {
		if len(p) == 0 {
			delete(m.retained, t)
		} else {
			m.retained[t] = append([]byte(nil), p...)
		}
	}
	var hs []bus.Handler
	for _, s := range m.subs {
		if Match(s.filter, t) {
			hs = append(hs, s.h)
		}
	}
	m.mu.Unlock()
	for _, h := range hs {
		h(t, append([]byte(nil), p...))
	}
}

// Subscribe registers h and delivers matching retained messages at once.
func (c *MemConn) Subscribe(_ context.Context, f string, h bus.Handler) error {
	if c.isClosed() {
		return bus.ErrClosed
	}
	c.m.mu.Lock()
	c.m.subs = append(c.m.subs, memSub{conn: c, filter: f, h: h})
	type kv struct {
		t string
		p []byte
	}
	var ret []kv
	for t, p := range c.m.retained {
		if Match(f, t) {
			ret = append(ret, kv{t, p})
		}
	}
	c.m.mu.Unlock()
	for _, r := range ret {
		h(r.t, r.p)
	}
	return nil
}

func (c *MemConn) drop() {
	c.mu.Lock()
	c.closed = true
	c.mu.Unlock()
	c.m.mu.Lock()
	kept := c.m.subs[:0]
	for _, s := range c.m.subs {
		if s.conn != c {
			kept = append(kept, s)
		}
	}
	c.m.subs = kept
	c.m.mu.Unlock()
}

// Close leaves cleanly, publishing the will as runtime/bus does.
func (c *MemConn) Close() error {
	if c.isClosed() {
		return nil
	}
	c.drop()
	if c.will != nil {
		c.m.deliver(c.will.Topic, c.will.Payload, true)
	}
	return nil
}

// Kill drops the connection abruptly: the broker publishes the will.
func (c *MemConn) Kill() { c.Close() }

// Subscriptions lists the filters subscribed so far.
func (m *Memory) Subscriptions() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]string, len(m.subs))
	for i, s := range m.subs {
		out[i] = s.filter
	}
	return out
}

// Retained returns the retained payload of topic t.
func (m *Memory) Retained(t string) []byte {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.retained[t]
}
