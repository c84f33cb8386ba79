// Package query asks a device to act or look (aikyo's query system, made
// safe as docs/protocol.md "Queries and the body" describes).
//
// A Client publishes query.send on chorus/devices/{device}/queries and waits
// for the matching QueryResult on that device's results topic only, so no
// other client can answer for it. Pending queries live in a bounded map,
// each with a timeout (default 30 s, per call override) whose timer is
// cleared on answer. A query to a device whose presence is offline fails at
// once instead of waiting. Delivery is at least once and any message may be
// lost: the client sends an unanswered query again, with the same id, after
// RetryEvery and then at growing intervals (up to 2 s), so a lost query or
// result costs seconds, not the whole timeout.
//
// Call asks any query Type (Speak, Vision, Action, Memory …) over any
// Asker: it sends the body runtime/protocol declares and decodes the
// result strictly; whether a call given up is cancelled on the device is
// the Type's (Cancel: Speak, Action, Knowledge), not a rule of its name.
//
// A Private client and server ask and answer on each identity's own
// topics (devices/{device}/memory/{identity} and its answer), for what
// only the asker may read: the broker lets only that identity publish
// and read there, and the server takes the query as that identity's.
//
// A Server subscribes to its device's queries, dispatches each by
// params.type to a registered Handler on its own goroutine (bounded), and
// publishes the result; an unknown type gets an error result naming it.
// query.cancel (body {"id": ...}) cancels the running query with that id.
// A query seen again (a copy, or the client asking again) runs once: a copy
// of a running query is dropped, a copy of a finished one is answered with
// the same result.
//
// # Concurrency
//
// Client and Server are safe for concurrent use. Every goroutine a Server
// starts ends with the context given to Serve.
package query

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/chorus-robotics/chorus/runtime/bus"
	"github.com/chorus-robotics/chorus/runtime/metrics"
	"github.com/chorus-robotics/chorus/runtime/protocol"
	"github.com/chorus-robotics/chorus/runtime/topic"
)

// Defaults.
const (
	DefaultTimeout    = 30 * time.Second
	DefaultMaxPending = 256
	DefaultRetryEvery = time.Second
	maxRetryEvery     = 2 * time.Second
	maxDevices        = 256
)

// Errors a caller can test for.
var (
	ErrTimeout     = errors.New("query: timed out")
	ErrOffline     = errors.New("query: device is offline")
	ErrTooMany     = errors.New("query: too many pending queries")
	ErrClientClose = errors.New("query: client closed")
)

// RemoteError is an error result from the device.
type RemoteError struct {
	Device, Type, Msg string
}

func (e *RemoteError) Error() string {
	return fmt.Sprintf("query: %s on %s failed: %s", e.Type, e.Device, e.Msg)
}

// ClientOptions configure a Client.
type ClientOptions struct {
	Timeout        time.Duration // default 30 s
	MaxPending     int           // default 256
	RetryEvery     time.Duration // first resend of an unanswered query, default 1 s
	MaxResultBytes int           // default protocol.DefaultMaxResultBytes
	// Online tells whether a device is present; known false means no
	// presence was ever seen for it (then the query is sent anyway).
	Online func(device string) (online, known bool)
	// Private asks on the client's own topics to each device, for what
	// only it may read (a person's memory: Server.Private): queries on
	// devices/{device}/memory/{from}, results on its answer topic.
	Private bool
	Log     *slog.Logger
	Metrics *metrics.Metrics
}

// Client sends queries as one identity.
type Client struct {
	bus    bus.Bus
	scheme topic.Scheme
	from   string
	o      ClientOptions
	log    *slog.Logger
	m      *metrics.Metrics
	seq    atomic.Uint64
	prefix string

	mu      sync.Mutex
	pending map[string]*call
	devices map[string]bool // results topics subscribed
	closed  bool
}

type call struct {
	device, typ string
	ch          chan protocol.QueryResult
	off         chan struct{} // closed when the device goes offline (Offline)
	once        sync.Once
}

// NewClient returns a client that asks as from.
func NewClient(b bus.Bus, s topic.Scheme, from string, o ClientOptions) *Client {
	if o.Timeout <= 0 {
		o.Timeout = DefaultTimeout
	}
	if o.MaxPending <= 0 {
		o.MaxPending = DefaultMaxPending
	}
	if o.RetryEvery <= 0 {
		o.RetryEvery = DefaultRetryEvery
	}
	log := o.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Client{bus: b, scheme: s, from: from, o: o, log: log, m: metrics.OrNew(o.Metrics),
		prefix:  from + "-" + strconv.FormatInt(time.Now().UnixNano(), 36) + "-",
		pending: map[string]*call{}, devices: map[string]bool{}}
}

// Pending is the number of queries waiting for a result.
func (c *Client) Pending() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.pending)
}

// Watch subscribes to device's results now, as the first query to it
// would. A SUBSCRIBE changes the client's session on the broker: on a
// NATS cluster whose session stream lost its leader with a node,
// nats-server cannot store it and closes the connection, and its Last
// Will reads a running robot offline. A companion watches its body at
// start, so its first turn after a node loss subscribes to nothing.
func (c *Client) Watch(ctx context.Context, device string) error { return c.watch(ctx, device) }

func (c *Client) watch(ctx context.Context, device string) error {
	c.mu.Lock()
	if c.devices[device] {
		c.mu.Unlock()
		return nil
	}
	if len(c.devices) >= maxDevices {
		c.mu.Unlock()
		return fmt.Errorf("query: more than %d devices asked", maxDevices)
	}
	c.devices[device] = true
	c.mu.Unlock()
	err := c.bus.Subscribe(ctx, c.results(device), func(t string, b []byte) { c.onResult(device, t, b) })
	if err != nil {
		c.mu.Lock()
		delete(c.devices, device)
		c.mu.Unlock()
	}
	return err
}

func (c *Client) onResult(device, t string, b []byte) {
	r, err := protocol.DecodeQueryResult(b, c.o.MaxResultBytes)
	if err != nil {
		c.m.Reject(c.log, "result", device, string(protocol.KindOf(err)), err)
		return
	}
	c.mu.Lock()
	p, ok := c.pending[r.ID]
	if ok && p.device == device {
		delete(c.pending, r.ID)
	}
	c.mu.Unlock()
	if !ok {
		return // another client's query, or one that timed out
	}
	if p.device != device { // [docs/protocol.md: results accepted only from the device asked]
		c.m.Reject(c.log, "result", device, string(protocol.KindSpoof), fmt.Errorf("result for %s's query came from %s", p.device, device))
		return
	}
	p.ch <- r // buffered 1, sent once
}

// Ask sends a query of type typ with body (nil, or anything that encodes
// to a JSON object) to device and returns the result body. timeout 0 means
// the client's default. Call with a query Type (Speak, Vision, Phase …) is the
// usual way in; Ask is for a type no Type declares.
func (c *Client) Ask(ctx context.Context, device, typ string, body any, timeout time.Duration, opts ...CallOption) (json.RawMessage, error) {
	var o callOptions
	for _, opt := range opts {
		opt(&o)
	}
	start := time.Now()
	res, err := c.ask(ctx, device, typ, body, timeout, o)
	if err != nil {
		reason := "error"
		switch {
		case errors.Is(err, ErrTimeout):
			reason = "timeout"
		case errors.Is(err, ErrOffline):
			reason = "offline"
		}
		c.m.QueryErrors.WithLabelValues(typ, reason).Inc()
		return nil, err
	}
	c.m.QueryLatency.WithLabelValues(typ).Observe(time.Since(start).Seconds())
	return res, nil
}

func (c *Client) ask(ctx context.Context, device, typ string, body any, timeout time.Duration, o callOptions) (json.RawMessage, error) {
	if timeout <= 0 {
		timeout = c.o.Timeout
	}
	if c.o.Online != nil {
		if online, known := c.o.Online(device); known && !online {
			return nil, fmt.Errorf("%w: %s", ErrOffline, device)
		}
	}
	q := protocol.Query{JSONRPC: protocol.JSONRPC, Method: protocol.MethodQuery, ID: c.prefix + strconv.FormatUint(c.seq.Add(1), 10),
		Params: protocol.QueryParams{From: c.from, Type: typ}}
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return nil, fmt.Errorf("query: encode %s body: %w", typ, err)
		}
		q.Params.Body = b
	}
	if err := q.Validate(); err != nil {
		return nil, err
	}
	payload, _ := json.Marshal(q)
	if err := c.watch(ctx, device); err != nil {
		return nil, fmt.Errorf("query: subscribe to %s results: %w", device, err)
	}
	p := &call{device: device, typ: typ, ch: make(chan protocol.QueryResult, 1), off: make(chan struct{})}
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil, ErrClientClose
	}
	if len(c.pending) >= c.o.MaxPending {
		c.mu.Unlock()
		return nil, ErrTooMany
	}
	c.pending[q.ID] = p
	c.m.Held.WithLabelValues("query_pending").Set(float64(len(c.pending)))
	c.mu.Unlock()
	defer func() { // always clean up, answered or not
		c.mu.Lock()
		delete(c.pending, q.ID)
		c.m.Held.WithLabelValues("query_pending").Set(float64(len(c.pending)))
		c.mu.Unlock()
	}()
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	send := func() error {
		pctx, cancel := context.WithTimeout(ctx, timeout)
		defer cancel()
		if err := c.bus.Publish(pctx, c.queries(device), payload, false); err != nil {
			return fmt.Errorf("query: send %s to %s: %w", typ, device, err)
		}
		return nil
	}
	if err := send(); err != nil {
		return nil, err
	}
	every := c.o.RetryEvery
	retry := time.NewTimer(every)
	defer retry.Stop()
	for {
		select {
		case r := <-p.ch:
			if r.Error != "" {
				return nil, &RemoteError{Device: device, Type: typ, Msg: r.Error}
			}
			if !r.Result.Success {
				return r.Result.Body, &RemoteError{Device: device, Type: typ, Msg: "success=false: " + string(r.Result.Body)}
			}
			return r.Result.Body, nil
		case <-p.off:
			return nil, fmt.Errorf("%w: %s went away while %s waited", ErrOffline, device, typ)
		case <-retry.C:
			// Not answered yet: the query or its result may be lost. The
			// device runs a query once however often it is asked; a device
			// that went offline meanwhile is not waited for.
			if c.o.Online != nil {
				if online, known := c.o.Online(device); known && !online {
					return nil, fmt.Errorf("%w: %s went offline while %s waited", ErrOffline, device, typ)
				}
			}
			c.m.Resent.WithLabelValues("query").Inc()
			if err := send(); err != nil {
				c.log.Debug("query: resend failed", "type", typ, "device", device, "err", err)
			}
			every = min(2*every, maxRetryEvery)
			retry.Reset(every)
		case <-timer.C:
			if o.cancelOnGiveUp {
				c.cancel(device, q.ID)
			}
			return nil, fmt.Errorf("%w: %s on %s after %v", ErrTimeout, typ, device, timeout)
		case <-ctx.Done():
			if o.cancelOnGiveUp { // e.g. words no longer wanted (barge-in): stop them
				c.cancel(device, q.ID)
			}
			return nil, fmt.Errorf("query: %s on %s: %w", typ, device, ctx.Err())
		}
	}
}

// cancel asks the device to stop query id; best effort.
func (c *Client) cancel(device, id string) {
	body, _ := json.Marshal(protocol.QueryCancel{ID: id})
	q := protocol.Query{JSONRPC: protocol.JSONRPC, Method: protocol.MethodQueryCancel, ID: id + "-cancel",
		Params: protocol.QueryParams{From: c.from, Type: protocol.TypeCancel, Body: body}}
	b, _ := json.Marshal(q)
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	c.bus.Publish(ctx, c.queries(device), b, false)
}

// queries is where the client's queries to device go, and results where
// their results come back.
func (c *Client) queries(device string) string {
	if c.o.Private {
		return c.scheme.Memory(device, c.from)
	}
	return c.scheme.Queries(device)
}

func (c *Client) results(device string) string {
	if c.o.Private {
		return c.scheme.MemoryAnswer(device, c.from)
	}
	return c.scheme.Results(device)
}

// Offline fails every pending query to device with ErrOffline at once:
// its owner knows it is gone (a bridge body whose connection dropped).
// Queries asked later are refused by ClientOptions.Online.
func (c *Client) Offline(device string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, p := range c.pending {
		if p.device == device {
			p.once.Do(func() { close(p.off) })
		}
	}
}

// Close fails every pending query; later Asks fail at once.
func (c *Client) Close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.closed = true
	for id, p := range c.pending {
		p.ch <- protocol.QueryResult{JSONRPC: protocol.JSONRPC, ID: id, Error: ErrClientClose.Error()}
		delete(c.pending, id)
	}
}
