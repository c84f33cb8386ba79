// Package bridge is the WebSocket bridge of a room (aikyo's "firehose"):
// clients that are not MQTT peers — speaker apps, avatar front ends,
// browser pages, the room console — connect with a token, receive the
// room's traffic as bare JSON-RPC frames, and send what their role allows:
// a user's message.send, or a device's QueryResults for the queries
// addressed to it.
//
// Frames out: a Message and a State as they are on the bus (both are
// JSON-RPC already); a grant, a presence, a speaking status and a
// realtime phase event and the floor's answer to a realtime post as
// JSON-RPC notifications (methods turn.grant, presence.update,
// speaking.update, phase.event, post.ack) whose params are the value; a query addressed to the client's device as it is (query.send).
// The first frame to a client is a bridge.hello notification: its role,
// its name and the room; then the room as it is (the latest presence and
// speaking status of each member, the latest phase event). Frames in: a Message (method message.send), a QueryResult, or either
// wrapped as {"topic": "messages"|"queries", "body": ...} (aikyo's
// envelope), and camera.get {device} from a client whose token allows it
// (the answer goes to that client only). Anything else gets a JSON-RPC
// error frame and is counted;
// the connection stays up.
//
// Every client has a bounded send queue: a client that does not keep up
// is dropped, never waited for. Frames in are rate limited per client,
// capped in size, and validated by the protocol's decoders before they
// reach the bus; each identity (the user's name, the device's id)
// publishes under its own MQTT connection, so the broker's ACL holds the
// bridge to what that identity may do.
package bridge

import (
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/coder/websocket"

	"github.com/chorus-robotics/chorus/runtime/bus"
	"github.com/chorus-robotics/chorus/runtime/metrics"
	"github.com/chorus-robotics/chorus/runtime/protocol"
	"github.com/chorus-robotics/chorus/runtime/room"
)

// Role is what a token lets its client do.
type Role string

const (
	// Viewer receives the room's traffic and sends nothing.
	Viewer Role = "viewer"
	// User is a viewer that may also speak to the room as its name.
	User Role = "user"
	// Device is a viewer that also answers the queries addressed to its
	// device id (its name): a body written in another language.
	Device Role = "device"
)

// Token is one credential: its secret, its role, and the name its client
// acts as (a user name, or a device id).
type Token struct {
	Secret string
	Role   Role
	Name   string
	// Camera lets the client ask for a device's latest camera frame
	// (camera.get): frames are for the room's members, so only tokens
	// given to the people of the house carry it.
	Camera bool
}

// Looker fetches a device's latest camera frame (a vision query) as a
// room member: the body of the vision result.
type Looker func(ctx context.Context, device string) (json.RawMessage, error)

// Dialer opens a bus connection under identity (its MQTT username).
type Dialer func(ctx context.Context, identity string) (bus.Bus, error)

// Config configures a Bridge.
type Config struct {
	Room   *room.Room // the room's traffic, read on the device's own connection
	Dial   Dialer     // connections for the identities clients act as
	Tokens []Token
	// Anonymous, when set, is the role and name of a client without a
	// token (a console on loopback); nil: a token is required.
	Anonymous *Token
	// Look serves camera.get; nil: no camera frames through the bridge.
	Look Looker

	MaxClients int   // default 32
	Queue      int   // frames waiting for one client; default 1024
	QueueBytes int64 // bytes waiting for one client; default 4 MiB
	// MaxFrame is the most bytes a viewer's or a user's frame in may
	// have (default 64 KiB: a Message). MaxDeviceFrame is a device's
	// (default protocol.DefaultMaxResultBytes): a body answers vision
	// queries with camera frames, and a 720p JPEG in base64 is several
	// hundred KB. A larger frame closes the connection with 1009.
	MaxFrame       int64
	MaxDeviceFrame int64
	WriteTimeout   time.Duration // default 5 s
	PingEvery      time.Duration // default 20 s
	RatePerSec     float64       // frames in per client per second; default 20 (burst 40)

	// OnDeviceGone, when set, is told the name of a device whose last
	// client has gone (on that client's goroutine; it must not block):
	// the device's connection is its presence, and queries waiting on it
	// can fail now instead of at their timeout.
	OnDeviceGone func(device string)

	Log     *slog.Logger
	Metrics *metrics.Metrics
}

// Bridge serves the WebSocket endpoint.
type Bridge struct {
	cfg Config
	log *slog.Logger
	m   *metrics.Metrics

	mu      sync.Mutex
	clients map[*client]bool
	ids     map[string]*identity // open connections by identity
	latest  map[string][]byte    // the last presence, speaking status and phase event, for a new client
	devices map[string]int       // connected clients by device name (Device role)
}

// maxLatest bounds the snapshot a new client gets (the room drops
// presences and statuses of non-members before they get here).
const maxLatest = 1024

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
}

// identity is the bus connection of one name, shared by its clients.
type identity struct {
	b     bus.Bus
	refs  int
	asked *asked // the device's open queries (Device role)
}

// New checks cfg and returns a Bridge; Run starts its room subscriptions.
func New(cfg Config) (*Bridge, error) {
	if cfg.Room == nil || cfg.Dial == nil {
		return nil, errors.New("bridge: a room and a dialer are required")
	}
	for i, t := range cfg.Tokens {
		if len(t.Secret) < 16 {
			return nil, fmt.Errorf("bridge: token %d (%s %s): a secret of at least 16 characters is required", i+1, t.Role, t.Name)
		}
		if t.Role != Viewer && t.Role != User && t.Role != Device {
			return nil, fmt.Errorf("bridge: token %d: role %q: must be viewer, user or device", i+1, t.Role)
		}
		if why := protocol.ValidIdentity(t.Name); t.Role != Viewer && why != "" {
			return nil, fmt.Errorf("bridge: token %d: name: %s", i+1, why)
		}
	}
	def := func(v *int, d int) {
		if *v <= 0 {
			*v = d
		}
	}
	def(&cfg.MaxClients, 32)
	def(&cfg.Queue, 1024)
	if cfg.QueueBytes <= 0 { // 1,024 frames of the largest a room carries would be 64 MiB
		cfg.QueueBytes = 4 << 20
	}
	if cfg.MaxFrame <= 0 {
		cfg.MaxFrame = 64 << 10
	}
	if cfg.MaxDeviceFrame <= 0 {
		cfg.MaxDeviceFrame = protocol.DefaultMaxResultBytes
	}
	if cfg.WriteTimeout <= 0 {
		cfg.WriteTimeout = 5 * time.Second
	}
	if cfg.PingEvery <= 0 {
		cfg.PingEvery = 20 * time.Second
	}
	if cfg.RatePerSec <= 0 {
		cfg.RatePerSec = 20
	}
	log := cfg.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Bridge{cfg: cfg, log: log, m: metrics.OrNew(cfg.Metrics), clients: map[*client]bool{}, ids: map[string]*identity{}, latest: map[string][]byte{},
		devices: map[string]int{}}, nil
}

// Run subscribes to the room's traffic and relays it to the clients until
// ctx ends; then it closes every client.
func (b *Bridge) Run(ctx context.Context) error {
	r := b.cfg.Room
	notify := func(method string) func(v any) {
		return func(v any) { b.broadcast(func() []byte { return frame(method, v) }) }
	}
	// A new client first gets the room as it is: who is present, who
	// speaks, the phase; these are kept as they pass.
	keep := func(key, method string, v any) {
		f := frame(method, v)
		b.mu.Lock()
		if len(b.latest) < maxLatest || b.latest[key] != nil {
			b.latest[key] = f
		}
		b.mu.Unlock()
		b.broadcast(func() []byte { return f })
	}
	subs := []func() error{
		func() error {
			return r.OnMessage(ctx, func(m protocol.Message) { b.broadcast(func() []byte { return mustJSON(b.aikyoShaped(m)) }) })
		},
		func() error {
			return r.OnState(ctx, func(s protocol.State) { b.broadcast(func() []byte { return mustJSON(s) }) })
		},
		func() error {
			f := notify("turn.grant")
			return r.OnGrant(ctx, func(g protocol.TurnGrant) { f(g) })
		},
		func() error {
			return r.OnPresence(ctx, func(p room.PresenceEvent) {
				keep("presence/"+p.ID, "presence.update", map[string]any{"id": p.ID, "presence": p.Presence, "cleared": p.Cleared})
			})
		},
		func() error {
			return r.OnSpeaking(ctx, func(s room.SpeakingEvent) {
				keep("speaking/"+s.ID, "speaking.update", map[string]any{"id": s.ID, "speaking": s.Speaking, "cleared": s.Cleared})
			})
		},
		func() error {
			return r.OnPhase(ctx, "", func(p protocol.Phase) { keep("phase", "phase.event", p) })
		},
	}
	for id := range r.Members { // the floor's answers to realtime posts
		f := notify("post.ack")
		subs = append(subs, func() error {
			return r.OnAcks(ctx, "", id, func(to string, a protocol.PostAck) { f(map[string]any{"to": to, "ack": a}) })
		})
	}
	for _, s := range subs {
		if err := s(); err != nil {
			return fmt.Errorf("bridge: %w", err)
		}
	}
	<-ctx.Done()
	for _, c := range b.those(func(*client) bool { return true }) {
		c.drop("the device is stopping")
	}
	return nil
}

// aikyoShaped is a Message as an aikyo client shows it: a realtime
// broadcast is signed by the floor on the bus, but its words are the
// speaker's (metadata.speaker), so the frame names the speaker as from
// and keeps the floor's signature in metadata.floor. Anything else is
// unchanged.
func (b *Bridge) aikyoShaped(m protocol.Message) protocol.Message {
	speaker, _ := m.Params.Metadata[protocol.MetaSpeaker].(string)
	if !b.cfg.Room.Scheme.IsFloor(m.Params.From) || speaker == "" || protocol.ValidIdentity(speaker) != "" || !b.cfg.Room.IsMember(speaker) {
		return m
	}
	md := make(map[string]any, len(m.Params.Metadata)+1) // the map is shared with the room's other handlers
	for k, v := range m.Params.Metadata {
		md[k] = v
	}
	md[MetaFloor] = m.Params.From
	m.Params.From, m.Params.Metadata = speaker, md
	return m
}

// MetaFloor is the metadata key under which a bridge frame of a realtime
// broadcast keeps the floor identity that signed it on the bus.
const MetaFloor = "floor"

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
// the counted reason.
var errorCodes = map[string]int{"not_json": -32700, "invalid": -32600, "forbidden": -32001, "not_addressed": -32002,
	"rate_limited": -32003, "publish_failed": -32004, "camera": -32005}

// errorFrame is a JSON-RPC error answer to a frame (id may be absent).
func errorFrame(id json.RawMessage, reason, msg string) []byte {
	var rid any // null unless the frame had a string or number id
	if len(id) > 0 && len(id) <= 2*protocol.MaxIDLen && (id[0] == '"' || id[0] == '-' || (id[0] >= '0' && id[0] <= '9')) {
		rid = id
	}
	return mustJSON(map[string]any{"jsonrpc": protocol.JSONRPC, "id": rid,
		"error": map[string]any{"code": errorCodes[reason], "message": msg, "data": map[string]string{"reason": reason}}})
}

// broadcast queues the frame enc makes for every client; it never blocks
// (a bus handler), and with no client connected it encodes nothing.
func (b *Bridge) broadcast(enc func() []byte) {
	cs := b.those(func(*client) bool { return true })
	if len(cs) == 0 {
		return
	}
	f := enc()
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

// authenticate finds the token of a request: the Authorization header
// ("Bearer T") or the token query parameter (browsers cannot set headers
// on a WebSocket).
func (b *Bridge) authenticate(r *http.Request) (Token, string) {
	secret := r.URL.Query().Get("token")
	if h := r.Header.Get("Authorization"); h != "" {
		scheme, value, _ := strings.Cut(h, " ")
		if !strings.EqualFold(scheme, "Bearer") {
			return Token{}, "bad_token" // a header that is not a bearer token is not ignored
		}
		secret = strings.TrimSpace(value)
	}
	if secret == "" {
		if b.cfg.Anonymous != nil {
			return *b.cfg.Anonymous, ""
		}
		return Token{}, "no_token"
	}
	for _, t := range b.cfg.Tokens {
		if subtle.ConstantTimeCompare([]byte(t.Secret), []byte(secret)) == 1 {
			return t, ""
		}
	}
	return Token{}, "bad_token"
}

// OrPage serves a WebSocket upgrade at "/" with the bridge and anything
// else with page (the console): a client written for aikyo's
// ws://host:port connects with only its host, port and ?token= changed,
// while a browser's plain GET of "/" still gets the page.
func (b *Bridge) OrPage(page http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/" && isUpgrade(r) {
			b.ServeHTTP(w, r)
			return
		}
		page.ServeHTTP(w, r)
	})
}

// isUpgrade reports whether r asks for a WebSocket (RFC 6455 §4.1: an
// Upgrade header naming websocket, a Connection header naming upgrade).
func isUpgrade(r *http.Request) bool {
	return headerHas(r.Header, "Upgrade", "websocket") && headerHas(r.Header, "Connection", "upgrade")
}

func headerHas(h http.Header, key, token string) bool {
	for _, v := range h.Values(key) {
		for _, t := range strings.Split(v, ",") {
			if strings.EqualFold(strings.TrimSpace(t), token) {
				return true
			}
		}
	}
	return false
}

// ServeHTTP accepts one client.
func (b *Bridge) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	tok, why := b.authenticate(r)
	if why != "" {
		b.m.BridgeDropped.WithLabelValues(why).Inc()
		b.m.Reject(b.log, "bridge", r.RemoteAddr, why, errors.New("bridge: a client without a valid token"))
		http.Error(w, "a valid token is required", http.StatusUnauthorized)
		return
	}
	c := &client{tok: tok, out: make(chan []byte, b.cfg.Queue), queries: make(chan []byte, 64), max: b.cfg.QueueBytes, gone: make(chan struct{})}
	b.mu.Lock()
	if len(b.clients) >= b.cfg.MaxClients {
		b.mu.Unlock()
		b.m.BridgeDropped.WithLabelValues("too_many").Inc()
		http.Error(w, fmt.Sprintf("the bridge serves at most %d clients", b.cfg.MaxClients), http.StatusServiceUnavailable)
		return
	}
	b.clients[c] = true // reserved, so the cap holds while it connects
	b.mu.Unlock()
	defer func() {
		b.mu.Lock()
		delete(b.clients, c)
		n := len(b.clients)
		b.mu.Unlock()
		b.m.BridgeClients.Set(float64(n))
	}()
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	var id *identity
	if tok.Role != Viewer {
		var err error
		if id, err = b.acquire(ctx, c); err != nil {
			b.m.BridgeDropped.WithLabelValues("publish_failed").Inc()
			b.log.Error("bridge: no bus connection for a client", "name", tok.Name, "err", err)
			http.Error(w, "the room's broker cannot be reached", http.StatusBadGateway)
			return
		}
		defer b.release(tok.Name)
	}
	conn, err := websocket.Accept(w, r, nil)
	if err != nil {
		return // Accept has answered
	}
	c.conn = conn
	limit := b.cfg.MaxFrame
	if tok.Role == Device {
		limit = b.cfg.MaxDeviceFrame
		b.mu.Lock()
		b.devices[tok.Name]++
		b.mu.Unlock()
		defer b.deviceGone(tok.Name)
	}
	conn.SetReadLimit(limit)
	// The first frame says who the client is (a console names its user);
	// then the room as it is.
	b.send(c, frame("bridge.hello", map[string]any{"role": tok.Role, "name": tok.Name, "room": b.cfg.Room.Name, "camera": tok.Camera && b.cfg.Look != nil}))
	b.mu.Lock()
	snapshot := make([][]byte, 0, len(b.latest))
	for _, f := range b.latest {
		snapshot = append(snapshot, f)
	}
	b.mu.Unlock()
	for _, f := range snapshot {
		b.send(c, f)
	}
	b.mu.Lock()
	b.m.BridgeClients.Set(float64(len(b.clients)))
	b.mu.Unlock()
	b.log.Info("bridge: client connected", "role", tok.Role, "name", tok.Name, "remote", r.RemoteAddr)

	var wg sync.WaitGroup
	defer wg.Wait()
	wg.Add(2)
	go func() { defer wg.Done(); b.write(ctx, c) }()
	go func() { defer wg.Done(); b.read(ctx, c, id) }()
	select {
	case <-c.gone:
	case <-ctx.Done():
		c.drop("the request ended")
	}
	cancel()
	b.log.Info("bridge: client gone", "role", tok.Role, "name", tok.Name, "why", c.why)
	conn.Close(websocket.StatusGoingAway, c.why)
}

// deviceGone counts a device's client out; the last one out makes the
// device offline (OnDeviceGone).
func (b *Bridge) deviceGone(name string) {
	b.mu.Lock()
	b.devices[name]--
	last := b.devices[name] <= 0
	if last {
		delete(b.devices, name)
	}
	b.mu.Unlock()
	if last {
		b.log.Warn("bridge: a body went offline: its last client is gone", "body", name)
		if b.cfg.OnDeviceGone != nil {
			b.cfg.OnDeviceGone(name)
		}
	}
}

// Serves reports whether device is a body behind this bridge (a device
// token names it): its presence is its connection.
func (b *Bridge) Serves(device string) bool {
	for _, t := range b.cfg.Tokens {
		if t.Role == Device && t.Name == device {
			return true
		}
	}
	return false
}

// DeviceOnline reports whether a client of device is connected.
func (b *Bridge) DeviceOnline(device string) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.devices[device] > 0
}

// write sends c's queues — a device's queries before anything else — and
// pings. Frames waiting together go out under one write deadline.
func (b *Bridge) write(ctx context.Context, c *client) {
	ping := time.NewTicker(b.cfg.PingEvery)
	defer ping.Stop()
	put := func(wctx context.Context, f []byte) bool {
		if err := c.conn.Write(wctx, websocket.MessageText, f); err != nil {
			if c.drop("write: " + err.Error()) {
				b.m.BridgeDropped.WithLabelValues("slow").Inc()
			}
			return false
		}
		b.m.BridgeFrames.WithLabelValues("out").Inc()
		return true
	}
	for {
		var f []byte
		select {
		case <-c.gone:
			return
		case <-ctx.Done():
			return
		case f = <-c.queries:
		case f = <-c.out:
			c.bytes.Add(-int64(len(f)))
		case <-ping.C:
			pctx, cancel := context.WithTimeout(ctx, b.cfg.WriteTimeout)
			err := c.conn.Ping(pctx)
			cancel()
			if err != nil {
				if c.drop("no pong: " + err.Error()) {
					b.m.BridgeDropped.WithLabelValues("no_pong").Inc()
				}
				return
			}
			continue
		}
		wctx, cancel := context.WithTimeout(ctx, b.cfg.WriteTimeout)
		ok := put(wctx, f)
		for n := 0; ok && n < 64; n++ { // what queued meanwhile, queries first
			select {
			case f = <-c.queries:
			default:
				select {
				case f = <-c.out:
					c.bytes.Add(-int64(len(f)))
				default:
					n = 64
					continue
				}
			}
			ok = put(wctx, f)
		}
		cancel()
		if !ok {
			return
		}
	}
}

// read handles c's frames in until the connection ends.
func (b *Bridge) read(ctx context.Context, c *client, id *identity) {
	burst := 2 * b.cfg.RatePerSec
	tokens, last := burst, time.Now()
	for {
		typ, data, err := c.conn.Read(ctx)
		if err != nil {
			if errors.Is(err, websocket.ErrMessageTooBig) {
				limit := b.cfg.MaxFrame
				if c.tok.Role == Device {
					limit = b.cfg.MaxDeviceFrame
				}
				b.m.BridgeDropped.WithLabelValues("oversize").Inc()
				b.m.Reject(b.log, "bridge", c.tok.Name, string(protocol.KindOversize), fmt.Errorf("bridge: a %s's frame over %d bytes; the connection is closed", c.tok.Role, limit))
				c.drop(fmt.Sprintf("a frame over %d bytes", limit))
				return
			}
			c.drop("read: " + err.Error())
			return
		}
		now := time.Now()
		tokens = min(burst, tokens+now.Sub(last).Seconds()*b.cfg.RatePerSec)
		last = now
		if tokens < 1 {
			b.refuse(c, nil, "rate_limited", fmt.Sprintf("more than %g frames a second; this one is dropped", b.cfg.RatePerSec))
			continue
		}
		tokens--
		if typ != websocket.MessageText {
			b.refuse(c, nil, "not_json", "frames are JSON text")
			continue
		}
		b.m.BridgeFrames.WithLabelValues("in").Inc()
		b.handle(ctx, c, id, data)
	}
}

// refuse answers a bad frame with an error frame and counts it.
func (b *Bridge) refuse(c *client, id json.RawMessage, reason, msg string) {
	b.m.BridgeDropped.WithLabelValues(reason).Inc()
	b.m.Reject(b.log, "bridge", c.tok.Name, reason, errors.New("bridge: "+msg))
	b.send(c, errorFrame(id, reason, msg))
}

// inFrame is what a client may send: a Message, a QueryResult, or either
// inside aikyo's {topic, body} envelope.
type inFrame struct {
	Method string          `json:"method"`
	ID     json.RawMessage `json:"id"`
	Topic  string          `json:"topic"`
	Body   json.RawMessage `json:"body"`
	Result json.RawMessage `json:"result"`
	Error  json.RawMessage `json:"error"`
}

// frameIn is a parsed frame in: what it asks, its id (for the answer),
// and the JSON-RPC object itself (unwrapped from an envelope).
type frameIn struct {
	kind string          // "message", "result", "camera", or "" with err set
	rid  json.RawMessage // the frame's id, echoed in the answer
	data []byte
	// method names an unknown method (kind ""), for the refusal.
	method string
}

// maxDepth is how deep a frame may nest: a Message's metadata is a few
// levels; thousands would break clients that re-encode what they get.
const maxDepth = 32

// depth is how deep data's arrays and objects nest (outside strings).
func depth(data []byte) int {
	d, most, inString, escaped := 0, 0, false, false
	for _, ch := range data {
		switch {
		case escaped:
			escaped = false
		case inString && ch == '\\':
			escaped = true
		case ch == '"':
			inString = !inString
		case inString:
		case ch == '{' || ch == '[':
			d++
			most = max(most, d)
		case ch == '}' || ch == ']':
			d--
		}
	}
	return most
}

// frameError is why a frame is refused: a counted reason and a message.
type frameError struct{ reason, msg string }

func (e *frameError) Error() string { return e.reason + ": " + e.msg }

// parseFrame reads a frame in without acting on it: aikyo's envelope is
// unwrapped, and the frame is classified by what it asks.
func parseFrame(data []byte) (frameIn, error) {
	if !utf8.Valid(data) {
		return frameIn{}, &frameError{"invalid", "the frame is not valid UTF-8"}
	}
	var f inFrame
	if err := json.Unmarshal(data, &f); err != nil {
		return frameIn{}, &frameError{"not_json", "the frame is not a JSON object"}
	}
	if d := depth(data); d > maxDepth {
		return frameIn{rid: f.ID}, &frameError{"invalid", fmt.Sprintf("the frame nests %d deep; at most %d", d, maxDepth)}
	}
	if f.Topic != "" || f.Body != nil {
		switch {
		case f.Method != "":
			return frameIn{}, &frameError{"forbidden", "a frame has a method or an envelope's topic and body, not both"}
		case f.Topic != "messages" && f.Topic != "queries":
			return frameIn{}, &frameError{"forbidden", fmt.Sprintf("an envelope names topic %.64q; a client may send on messages or queries only", f.Topic)}
		}
		data = f.Body
		f = inFrame{}
		if err := json.Unmarshal(data, &f); err != nil {
			return frameIn{}, &frameError{"not_json", "the envelope's body is not a JSON object"}
		}
	}
	in := frameIn{data: data, rid: f.ID}
	switch {
	case f.Method == protocol.MethodMessage:
		in.kind = "message"
	case f.Method == "camera.get":
		in.kind = "camera"
	case f.Method == "" && (f.Result != nil || f.Error != nil):
		in.kind = "result"
	case f.Method != "":
		return in, &frameError{"forbidden", fmt.Sprintf("method %.64q is not one a client may send (message.send, camera.get, or a query result)", f.Method)}
	default:
		return in, &frameError{"invalid", "a frame needs a method (message.send) or a result or error (a query result)"}
	}
	return in, nil
}

func (b *Bridge) handle(ctx context.Context, c *client, id *identity, raw []byte) {
	in, err := parseFrame(raw)
	var fe *frameError
	if errors.As(err, &fe) {
		b.refuse(c, in.rid, fe.reason, fe.msg)
		return
	}
	rid, data := in.rid, in.data
	switch in.kind {
	case "message":
		if c.tok.Role != User {
			b.refuse(c, rid, "forbidden", fmt.Sprintf("a %s may not send message.send", c.tok.Role))
			return
		}
		m, err := protocol.DecodeMessage(data, 0)
		if err != nil {
			b.refuse(c, rid, "invalid", err.Error())
			return
		}
		if m.Params.From != c.tok.Name {
			b.refuse(c, rid, "forbidden", fmt.Sprintf("params.from is %q; this client speaks as %q", m.Params.From, c.tok.Name))
			return
		}
		// What goes on the bus is the checked value, encoded anew: never
		// the client's bytes (duplicate keys, odd encodings).
		b.publish(ctx, c, id, b.cfg.Room.Scheme.Message(b.cfg.Room.Name, c.tok.Name), mustJSON(m), rid)
	case "result":
		if c.tok.Role != Device {
			b.refuse(c, rid, "forbidden", fmt.Sprintf("a %s may not send query results", c.tok.Role))
			return
		}
		res, err := protocol.DecodeQueryResult(data, int(b.cfg.MaxDeviceFrame))
		if err != nil {
			b.refuse(c, rid, "invalid", err.Error())
			return
		}
		if !id.asked.answer(res.ID) {
			b.refuse(c, rid, "not_addressed", fmt.Sprintf("query %s was not addressed to device %s (or is answered already)", res.ID, c.tok.Name))
			return
		}
		b.publish(ctx, c, id, b.cfg.Room.Scheme.Results(c.tok.Name), mustJSON(res), rid)
	case "camera":
		b.camera(ctx, c, rid, data)
	}
}

// camera answers camera.get {device} with the device's latest frame, to
// this client only. It waits in this client's reader (at most
// LookTimeout): a client that asks pauses its own frames, nobody else's.
func (b *Bridge) camera(ctx context.Context, c *client, rid json.RawMessage, data []byte) {
	if !c.tok.Camera || b.cfg.Look == nil {
		b.refuse(c, rid, "forbidden", "this client may not ask for camera frames")
		return
	}
	var req struct {
		Params struct {
			Device string `json:"device"`
		} `json:"params"`
	}
	if err := json.Unmarshal(data, &req); err != nil || protocol.ValidIdentity(req.Params.Device) != "" {
		b.refuse(c, rid, "invalid", `camera.get needs params {"device": a device id}`)
		return
	}
	lctx, cancel := context.WithTimeout(ctx, LookTimeout)
	defer cancel()
	body, err := b.cfg.Look(lctx, req.Params.Device)
	if err != nil {
		b.send(c, errorFrame(rid, "camera", fmt.Sprintf("camera of %s: %v", req.Params.Device, err)))
		return
	}
	var id any
	if len(rid) > 0 {
		id = rid
	}
	b.send(c, mustJSON(map[string]any{"jsonrpc": protocol.JSONRPC, "id": id, "result": map[string]any{"device": req.Params.Device, "frame": body}}))
}

// LookTimeout bounds one camera.get.
const LookTimeout = 10 * time.Second

// publish sends a client's frame under its identity; a client that
// floods waits for its own publishes (its reads stop), nobody else.
func (b *Bridge) publish(ctx context.Context, c *client, id *identity, topic string, payload []byte, what json.RawMessage) {
	pctx, cancel := context.WithTimeout(ctx, b.cfg.WriteTimeout)
	defer cancel()
	if err := id.b.Publish(pctx, topic, payload, false); err != nil {
		b.refuse(c, what, "publish_failed", "not published: "+err.Error())
	}
}

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
	id := &identity{b: conn, refs: 1, asked: newAsked(256)}
	if c.tok.Role == Device {
		err := conn.Subscribe(ctx, b.cfg.Room.Scheme.Queries(name), func(_ string, payload []byte) {
			q, err := protocol.DecodeQuery(payload, 0)
			if err != nil {
				b.m.Reject(b.log, "query", name, string(protocol.KindOf(err)), err)
				return
			}
			if !id.asked.add(q.ID) {
				return // a copy (at-least-once): the client has it
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
		id.b.Close()
	}
}

// toDevice queues a query for every client registered as device name.
func (b *Bridge) toDevice(name string, f []byte) {
	for _, c := range b.those(func(c *client) bool { return c.tok.Role == Device && c.tok.Name == name }) {
		b.sendQuery(c, f)
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
