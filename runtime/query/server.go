package query

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/chorus-robotics/chorus/runtime/bus"
	"github.com/chorus-robotics/chorus/runtime/metrics"
	"github.com/chorus-robotics/chorus/runtime/protocol"
	"github.com/chorus-robotics/chorus/runtime/topic"
)

// Handler answers one query type. body is the query's params.body (may be
// nil). The returned value becomes result.body; an error becomes an error
// result whose text should say what failed.
type Handler func(ctx context.Context, from string, body json.RawMessage) (any, error)

// DefaultMaxRunning bounds the queries a server runs at once.
const DefaultMaxRunning = 16

// Bounds of the reply queues. Results of queries that ran go first; error
// replies to bad input wait in a small queue of their own and are dropped
// (counted) when a flood fills it, so a burst of bad queries never delays
// the answer to a good one.
const (
	resultQueue = 64
	rejectQueue = 64
	queryQueue  = 64
	// A query id is remembered for recentQueries queries, with its result
	// when that is at most maxCachedResult bytes (a speak result; a camera
	// frame is not kept, a copy of a vision query runs again).
	recentQueries   = 256
	maxCachedResult = 16 << 10
)

// Server answers the queries addressed to one device.
type Server struct {
	Bus        bus.Bus
	Scheme     topic.Scheme
	Device     string
	MaxBytes   int // cap on query payloads; 0 means protocol.DefaultMaxBytes
	MaxRunning int
	// Lanes gives query types a queue, a limit of running queries and a
	// result queue of their own (type → how many run at once): a flood of
	// one type (a body's actions) never delays another (speech).
	Lanes map[string]int
	// Private serves each identity's queries on its own topics, for what
	// only the asker may read (a person's memory): a query published on
	// devices/{device}/memory/{identity}, which the broker lets only that
	// identity publish — it is from that identity, whatever its
	// params.from says (a query that names another is refused) — answered
	// on that topic's answer, which only that identity reads. Otherwise
	// the server answers the device's queries topic on its results topic.
	Private bool
	Log     *slog.Logger
	Metrics *metrics.Metrics

	mu       sync.Mutex
	handlers map[string]Handler
	running  map[string]context.CancelFunc // by key (keyOf)
	results  *bus.Outbox
	rejects  *bus.Outbox
	recent   map[string]*seenQuery // by key: what became of a query
	order    []string              // recent's keys, oldest first
}

// Handle registers h for queries of type typ.
func (s *Server) Handle(typ string, h Handler) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.handlers == nil {
		s.handlers = map[string]Handler{}
	}
	s.handlers[typ] = h
}

// Serve subscribes and answers until ctx ends; it returns after every
// running handler has returned.
func (s *Server) Serve(ctx context.Context) error {
	if s.Log == nil {
		s.Log = slog.New(slog.DiscardHandler)
	}
	s.Metrics = metrics.OrNew(s.Metrics)
	if s.MaxRunning <= 0 {
		s.MaxRunning = DefaultMaxRunning
	}
	s.mu.Lock()
	s.running = map[string]context.CancelFunc{}
	s.recent = map[string]*seenQuery{}
	s.mu.Unlock()
	var wg sync.WaitGroup
	defer wg.Wait()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	// No bus handler waits on the network (docs/protocol.md, "Delivery"): every
	// reply goes through an outbox, published by its own goroutine.
	dropped := func(topic string, err error) {
		s.Metrics.QueryErrors.WithLabelValues("reply", "dropped").Inc()
	}
	s.results = &bus.Outbox{Bus: s.Bus, Size: resultQueue, Log: s.Log, OnDrop: dropped}
	s.rejects = &bus.Outbox{Bus: s.Bus, Size: rejectQueue, Timeout: 2 * time.Second, OnDrop: dropped}
	for _, o := range []*bus.Outbox{s.results, s.rejects} {
		wg.Add(1)
		go func() { defer wg.Done(); o.Run(ctx) }()
	}
	main := &lane{queue: make(chan job, queryQueue), sem: make(chan struct{}, s.MaxRunning), results: s.results}
	lanes := map[string]*lane{}
	for typ, n := range s.Lanes {
		l := &lane{queue: make(chan job, queryQueue), sem: make(chan struct{}, max(1, n)),
			results: &bus.Outbox{Bus: s.Bus, Size: resultQueue, Log: s.Log, OnDrop: dropped}}
		lanes[typ] = l
		wg.Add(1)
		go func() { defer wg.Done(); l.results.Run(ctx) }()
	}
	filter := s.Scheme.Queries(s.Device)
	if s.Private {
		filter = s.Scheme.MemoryRequests(s.Device)
	}
	err := s.Bus.Subscribe(ctx, filter, func(t string, b []byte) {
		j := job{to: s.Scheme.Results(s.Device)}
		if s.Private {
			r, ok := s.Scheme.Parse(t)
			if !ok || r.Kind != topic.KindMemory || r.Device != s.Device {
				return
			}
			j.from, j.to = r.Identity, s.Scheme.MemoryAnswer(s.Device, r.Identity)
		}
		q, err := protocol.DecodeQuery(b, s.MaxBytes)
		if err == nil && j.from != "" && q.Params.From != j.from {
			err = fmt.Errorf("query: params.from %q is not %s, whose topic it came on", q.Params.From, j.from)
		}
		if err != nil {
			peer := s.Device
			if j.from != "" {
				peer = j.from // one identity's flood is told as theirs
			}
			s.Metrics.Reject(s.Log, "query", peer, string(protocol.KindOf(err)), err)
			// Answer whenever the id can be read, so the asker does not wait
			// out its timeout (an oversize query included).
			if id := protocol.QueryIDOf(b); id != "" {
				s.reply(s.rejects, j, protocol.QueryResult{JSONRPC: protocol.JSONRPC, ID: id, Error: err.Error()})
			}
			return
		}
		j.q = q
		if q.Method == protocol.MethodQuery && !s.first(j) {
			return // a copy: running, or answered again from the cache
		}
		l := main
		if q.Method == protocol.MethodQuery && lanes[q.Params.Type] != nil {
			l = lanes[q.Params.Type]
		}
		select {
		case l.queue <- j:
		default:
			s.forget(j)
			s.reply(s.rejects, j, protocol.QueryResult{JSONRPC: protocol.JSONRPC, ID: q.ID, Error: "device busy: query queue full"})
		}
	})
	if err != nil {
		return fmt.Errorf("query server %s: %w", s.Device, err)
	}
	for _, l := range lanes {
		wg.Add(1)
		go func() { defer wg.Done(); s.drain(ctx, l, &wg) }()
	}
	s.drain(ctx, main, &wg)
	return nil
}

// job is a query and where its result goes; from is the identity whose
// own topic it came on (Private), "" otherwise.
type job struct {
	q        protocol.Query
	from, to string
}

// key is what j's query is known by: its id, among the queries of whoever
// reads its result.
func (j job) key(id string) string { return j.to + "\x00" + id }

// lane is a queue of queries, how many of them run at once, and where
// their results go.
type lane struct {
	queue   chan job
	sem     chan struct{}
	results *bus.Outbox
}

// drain runs l's queries until ctx ends.
func (s *Server) drain(ctx context.Context, l *lane, wg *sync.WaitGroup) {
	for {
		select {
		case <-ctx.Done():
			return
		case j := <-l.queue:
			if j.q.Method == protocol.MethodQueryCancel {
				s.cancel(j)
				continue
			}
			select {
			case l.sem <- struct{}{}:
			case <-ctx.Done():
				return
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer func() { <-l.sem }()
				s.run(ctx, j, l.results)
			}()
		}
	}
}

func (s *Server) cancel(j job) {
	body, err := protocol.DecodeQueryCancel(j.q.Params.Body, 0)
	if err != nil {
		s.Metrics.Reject(s.Log, "query", j.q.Params.From, string(protocol.KindOf(err)), fmt.Errorf("query.cancel: %w", err))
		return
	}
	s.mu.Lock()
	stop := s.running[j.key(body.ID)]
	s.mu.Unlock()
	if stop != nil {
		stop()
	}
}

func (s *Server) run(ctx context.Context, j job, results *bus.Outbox) {
	q := j.q
	s.mu.Lock()
	h := s.handlers[q.Params.Type]
	qctx, cancel := context.WithCancel(ctx)
	s.running[j.key(q.ID)] = cancel
	s.heldLocked()
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		delete(s.running, j.key(q.ID))
		s.heldLocked()
		s.mu.Unlock()
		cancel()
	}()
	res := protocol.QueryResult{JSONRPC: protocol.JSONRPC, ID: q.ID}
	if h == nil {
		res.Error = fmt.Sprintf("unknown query type %q", q.Params.Type)
		s.reply(s.rejects, j, res)
		return
	}
	body, err := safeCall(qctx, h, q)
	if err != nil {
		res.Error = err.Error()
	} else {
		b, err := json.Marshal(body)
		if err != nil || len(b) == 0 || b[0] != '{' {
			res.Error = fmt.Sprintf("%s handler returned a body that is not a JSON object", q.Params.Type)
		} else {
			res.Result = &protocol.ResultBody{Success: true, Body: b}
		}
	}
	s.reply(results, j, res)
}

// seenQuery is what the server remembers of a recent query id.
type seenQuery struct {
	done   bool
	result []byte // the encoded result, when small enough to keep
}

// first reports whether q should run: it was not seen before, or it
// finished with a result too large to keep. A copy of a query that is
// queued or running is dropped; a copy of a finished one is answered with
// the kept result.
func (s *Server) first(j job) bool {
	key := j.key(j.q.ID)
	s.mu.Lock()
	e, seen := s.recent[key]
	if !seen {
		s.recent[key] = &seenQuery{}
		s.order = append(s.order, key)
		if len(s.order) > recentQueries {
			delete(s.recent, s.order[0])
			s.order = s.order[1:]
		}
		s.heldLocked()
		s.mu.Unlock()
		return true
	}
	var cached []byte
	again := false
	switch {
	case e.result != nil:
		cached = e.result
	case e.done:
		e.done, again = false, true
	}
	s.mu.Unlock()
	s.Metrics.Duplicates.WithLabelValues("query", "query").Inc()
	if cached != nil {
		s.results.Send(j.to, cached, false)
	}
	return again
}

func (s *Server) forget(j job) {
	s.mu.Lock()
	delete(s.recent, j.key(j.q.ID))
	s.heldLocked()
	s.mu.Unlock()
}

// heldLocked reports the running queries (0 when idle) and the book of
// recent query ids (bounded); s.mu is held.
func (s *Server) heldLocked() {
	lane := "query"
	if s.Private { // a device serves both: each its own gauges
		lane = "query_private"
	}
	s.Metrics.Held.WithLabelValues(lane + "_running").Set(float64(len(s.running)))
	s.Metrics.Held.WithLabelValues(lane + "_recent_ids").Set(float64(len(s.recent)))
}

// safeCall turns a handler panic into an error result: one bad query must
// not take the device down.
func safeCall(ctx context.Context, h Handler, q protocol.Query) (body any, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%s handler panicked: %v", q.Params.Type, r)
		}
	}()
	return h(ctx, q.Params.From, q.Params.Body)
}

// reply queues r on o; it never waits on the network. The result of a
// query is kept for its copies when it is small.
func (s *Server) reply(o *bus.Outbox, j job, r protocol.QueryResult) {
	b, _ := json.Marshal(r)
	s.mu.Lock()
	if e, ok := s.recent[j.key(r.ID)]; ok {
		e.done = true
		if len(b) <= maxCachedResult {
			e.result = b
		}
	}
	s.mu.Unlock()
	o.Send(j.to, b, false)
}
