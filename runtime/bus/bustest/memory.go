package bustest

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chorus-robotics/chorus/runtime/bus"
)

// Memory is an in-process fake of a broker for unit tests. It is as unkind
// as the real pair of paho and a broker (SHARED STYLE: "a fake must be as
// unkind as the real thing"):
//
//   - Delivery is asynchronous: each connection has one delivery goroutine
//     that calls handlers in arrival order, like paho with OrderMatters.
//   - A Publish or Subscribe returns only when its acknowledgement (PUBACK,
//     SUBACK) has been read, and acknowledgements are read by that same
//     goroutine, behind the messages queued before them. A handler that
//     publishes and waits therefore wedges its connection until the
//     caller's context ends — exactly what paho does.
//   - Every handler subscribed to a filter hears every message (as
//     runtime/bus fans out); a (re)subscription gets the retained messages
//     after its SUBACK.
//   - A connection whose queue holds QueueLimit messages has further
//     messages dropped (Mosquitto's max_queued_messages); Dropped counts them.
//   - Options.Duplicate delivers chosen messages twice (a QoS 1 resend);
//     Options.Drop loses chosen messages (a lossy network or a full queue).
//
// Settle waits until every queue is empty, so a test with a fake clock can
// know that everything published so far has been handled.
type Memory struct {
	opts MemoryOptions

	mu       sync.Mutex
	conns    map[*MemConn]bool
	retained map[string][]byte
	dropped  int
}

// MemoryOptions make a Memory broker unkind on purpose.
type MemoryOptions struct {
	// QueueLimit is how many messages wait for one connection before more
	// are dropped; default 1000, as Mosquitto's max_queued_messages.
	QueueLimit int
	// Duplicate, when it returns true for a message, delivers it twice.
	Duplicate func(topic string, payload []byte) bool
	// Drop, when it returns true for a message to a connection, loses it.
	Drop func(to *MemConn, topic string, payload []byte) bool
}

// DefaultQueueLimit is how many messages a memory bus's subscriber may
// have waiting.
const DefaultQueueLimit = 1000

// NewMemory returns an empty fake broker, with at most one MemoryOptions.
// It closes every connection when t ends, so their goroutines end too.
func NewMemory(t testing.TB, o ...MemoryOptions) *Memory {
	var opts MemoryOptions
	if len(o) > 0 {
		opts = o[0]
	}
	if opts.QueueLimit <= 0 {
		opts.QueueLimit = DefaultQueueLimit
	}
	m := &Memory{opts: opts, conns: map[*MemConn]bool{}, retained: map[string][]byte{}}
	t.Cleanup(m.Close)
	return m
}

// item is one thing a connection's delivery goroutine reads: a message or
// an acknowledgement.
type item struct {
	topic   string
	payload []byte
	ack     chan struct{}
}

// MemConn is one client of a Memory broker.
type MemConn struct {
	m    *Memory
	name string
	will *bus.Retained

	mu     sync.Mutex
	subs   map[string][]bus.Handler
	hooks  []func()
	lost   []func()
	queue  []item
	busy   bool // the delivery goroutine is handling an item
	wake   chan struct{}
	closed bool
	done   chan struct{}
}

var _ bus.Bus = (*MemConn)(nil)

// Conn connects a client; birth (if any) is published at once with the
// current time, will on Kill and Close.
func (m *Memory) Conn(birth func(time.Time) *bus.Retained, will *bus.Retained) *MemConn {
	return m.NamedConn("", birth, will)
}

// NamedConn is Conn with a name, for Options.Drop to tell clients apart.
func (m *Memory) NamedConn(name string, birth func(time.Time) *bus.Retained, will *bus.Retained) *MemConn {
	c := &MemConn{m: m, name: name, will: will, subs: map[string][]bus.Handler{}, wake: make(chan struct{}, 1), done: make(chan struct{})}
	m.mu.Lock()
	m.conns[c] = true
	m.mu.Unlock()
	go c.run()
	if birth != nil {
		if r := birth(time.Now()); r != nil {
			c.Publish(context.Background(), r.Topic, r.Payload, true)
		}
	}
	return c
}

// Name is the name given to NamedConn.
func (c *MemConn) Name() string { return c.name }

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

// run is the connection's delivery goroutine (paho's router).
func (c *MemConn) run() {
	for {
		c.mu.Lock()
		for len(c.queue) == 0 && !c.closed {
			c.busy = false
			c.mu.Unlock()
			<-c.wake
			c.mu.Lock()
		}
		if c.closed {
			c.busy = false
			for _, it := range c.queue {
				if it.ack != nil {
					close(it.ack)
				}
			}
			c.queue = nil
			c.mu.Unlock()
			close(c.done)
			return
		}
		it := c.queue[0]
		c.queue = c.queue[1:]
		c.busy = true
		var hs []bus.Handler
		if it.ack == nil {
			for f, fhs := range c.subs {
				if Match(f, it.topic) {
					hs = append(hs, fhs...)
				}
			}
		}
		c.mu.Unlock()
		if it.ack != nil {
			close(it.ack)
			continue
		}
		for _, h := range hs {
			h(it.topic, append([]byte(nil), it.payload...))
		}
	}
}

// enqueue adds it to the connection's queue; messages beyond the queue
// limit are dropped (acknowledgements never are).
func (c *MemConn) enqueue(it item) bool {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return false
	}
	if it.ack == nil && len(c.queue) >= c.m.opts.QueueLimit {
		c.mu.Unlock()
		c.m.mu.Lock()
		c.m.dropped++
		c.m.mu.Unlock()
		return false
	}
	c.queue = append(c.queue, it)
	c.busy = true
	c.mu.Unlock()
	select {
	case c.wake <- struct{}{}:
	default:
	}
	return true
}

func (c *MemConn) subscribed(t string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	for f := range c.subs {
		if Match(f, t) {
			return true
		}
	}
	return false
}

func (c *MemConn) isClosed() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.closed
}

// awaitAck queues an acknowledgement behind everything queued for c and
// waits until c's delivery goroutine reads it.
func (c *MemConn) awaitAck(ctx context.Context, what string) error {
	ack := make(chan struct{})
	if !c.enqueue(item{ack: ack}) {
		return bus.ErrClosed
	}
	select {
	case <-ack:
		if c.isClosed() {
			return bus.ErrClosed
		}
		return nil
	case <-ctx.Done():
		return fmt.Errorf("bustest: %s not acknowledged (is a handler of this connection blocked?): %w", what, ctx.Err())
	}
}

// Publish routes the message to every subscribed connection, then waits
// for the PUBACK, which this connection reads behind what it was already
// sent.
func (c *MemConn) Publish(ctx context.Context, t string, p []byte, retain bool) error {
	if c.isClosed() {
		return bus.ErrClosed
	}
	c.m.route(t, p, retain)
	return c.awaitAck(ctx, "publish "+t)
}

func (m *Memory) route(t string, p []byte, retain bool) {
	p = append([]byte(nil), p...)
	m.mu.Lock()
	if retain {
		if len(p) == 0 {
			delete(m.retained, t)
		} else {
			m.retained[t] = p
		}
	}
	conns := make([]*MemConn, 0, len(m.conns))
	for c := range m.conns {
		conns = append(conns, c)
	}
	m.mu.Unlock()
	times := 1
	if m.opts.Duplicate != nil && m.opts.Duplicate(t, p) {
		times = 2
	}
	for _, c := range conns {
		if !c.subscribed(t) {
			continue
		}
		if m.opts.Drop != nil && m.opts.Drop(c, t, p) {
			m.mu.Lock()
			m.dropped++
			m.mu.Unlock()
			continue
		}
		for range times {
			c.enqueue(item{topic: t, payload: p})
		}
	}
}

// Subscribe registers h (beside any other handler of the filter), waits
// for the SUBACK, and has the matching retained messages delivered after
// it, to every handler of the filter.
func (c *MemConn) Subscribe(ctx context.Context, f string, h bus.Handler) error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return bus.ErrClosed
	}
	c.subs[f] = append(c.subs[f], h)
	c.mu.Unlock()
	if err := c.awaitAck(ctx, "subscribe "+f); err != nil {
		return err
	}
	c.m.mu.Lock()
	var ret []item
	for t, p := range c.m.retained {
		if Match(f, t) {
			ret = append(ret, item{topic: t, payload: p})
		}
	}
	c.m.mu.Unlock()
	for _, it := range ret {
		c.enqueue(it)
	}
	return nil
}

func (c *MemConn) drop() bool {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return false
	}
	c.closed = true
	c.mu.Unlock()
	select {
	case c.wake <- struct{}{}:
	default:
	}
	c.m.mu.Lock()
	delete(c.m.conns, c)
	c.m.mu.Unlock()
	return true
}

// Close leaves cleanly, publishing the will first as runtime/bus does.
func (c *MemConn) Close() error {
	if c.isClosed() {
		return nil
	}
	if c.will != nil {
		c.m.route(c.will.Topic, c.will.Payload, true)
	}
	c.drop()
	return nil
}

// OnReconnect registers f to run on Reconnect, as runtime/bus runs it
// after every reconnect.
func (c *MemConn) OnReconnect(f func()) {
	c.mu.Lock()
	c.hooks = append(c.hooks, f)
	c.mu.Unlock()
}

// OnLost registers f to run on Lose.
func (c *MemConn) OnLost(f func()) {
	c.mu.Lock()
	c.lost = append(c.lost, f)
	c.mu.Unlock()
}

// Lose simulates the loss of the connection: the OnLost hooks run (the
// connection itself keeps working; Options.Drop decides what is lost).
func (c *MemConn) Lose() {
	c.mu.Lock()
	hooks := append([]func(){}, c.lost...)
	c.mu.Unlock()
	for _, h := range hooks {
		h()
	}
}

// Reconnect simulates a connection that came back after a loss: the
// OnReconnect hooks run (whatever was published meanwhile is already lost
// or not, as Options.Drop decided).
func (c *MemConn) Reconnect() {
	c.mu.Lock()
	hooks := append([]func(){}, c.hooks...)
	c.mu.Unlock()
	for _, h := range hooks {
		h()
	}
}

// Kill drops the connection abruptly: the broker publishes the will.
func (c *MemConn) Kill() {
	if c.drop() && c.will != nil {
		c.m.route(c.will.Topic, c.will.Payload, true)
	}
}

// Settle waits until every connection has handled everything queued for
// it (and whatever those handlers published in turn), or 5 s pass.
func (m *Memory) Settle() {
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		idle := true
		m.mu.Lock()
		for c := range m.conns {
			c.mu.Lock()
			if c.busy || len(c.queue) > 0 {
				idle = false
			}
			c.mu.Unlock()
		}
		m.mu.Unlock()
		if idle {
			return
		}
		time.Sleep(100 * time.Microsecond)
	}
}

// Subscriptions lists the filters subscribed so far, over every connection.
func (m *Memory) Subscriptions() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []string
	for c := range m.conns {
		c.mu.Lock()
		for f, hs := range c.subs {
			for range hs {
				out = append(out, f)
			}
		}
		c.mu.Unlock()
	}
	return out
}

// Retained returns the retained payload of topic t.
func (m *Memory) Retained(t string) []byte {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.retained[t]
}

// Dropped counts the messages lost to Options.Drop or a full queue.
func (m *Memory) Dropped() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.dropped
}

// Close drops every connection without their wills and ends their
// delivery goroutines.
func (m *Memory) Close() {
	m.mu.Lock()
	conns := make([]*MemConn, 0, len(m.conns))
	for c := range m.conns {
		conns = append(conns, c)
	}
	m.mu.Unlock()
	for _, c := range conns {
		c.drop()
		select {
		case <-c.done:
		case <-time.After(5 * time.Second): // a handler that never returns; goleak will name it
		}
	}
}
