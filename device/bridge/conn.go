package bridge

import (
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/coder/websocket"

	"github.com/chorus-robotics/chorus/runtime/bus"
	"github.com/chorus-robotics/chorus/runtime/protocol"
)

// A client's connection: the token checked, the WebSocket accepted, its
// read and write loops, and a body going offline when its last client goes.

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
			if errors.Is(err, bus.ErrLoginRefused) { // the token's identity, not the broker, is wrong
				http.Error(w, fmt.Sprintf("the broker refused this token's identity %q (a user of its users file? mqtt_password_env set?)", tok.Name), http.StatusServiceUnavailable)
				return
			}
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
	// then the room as it is, and its recent Messages (bridge.replay).
	b.send(c, frame("bridge.hello", map[string]any{"role": tok.Role, "name": tok.Name, "room": b.cfg.Room.Name, "camera": tok.Camera && b.cfg.Look != nil}))
	// Queued under the lock the room's traffic takes to pick its clients
	// (send never blocks): nothing is missed or sent twice in between.
	b.mu.Lock()
	for _, f := range b.latest {
		b.send(c, f)
	}
	b.send(c, b.recent.frame())
	c.live = true
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
// device offline (OnDeviceGone) and forgets the actions it declared
// (OnActions with nil) and its knowledge.
func (b *Bridge) deviceGone(name string) {
	b.actionsMu.Lock()
	b.mu.Lock()
	b.devices[name]--
	last := b.devices[name] <= 0
	var declared bool
	if last {
		delete(b.devices, name)
		_, declared = b.decl[name]
		delete(b.decl, name)
		delete(b.know, name)
	}
	b.mu.Unlock()
	if declared && b.cfg.OnActions != nil {
		b.cfg.OnActions(name, nil)
	}
	b.actionsMu.Unlock()
	if last {
		b.log.Warn("bridge: a body went offline: its last client is gone", "body", name)
		if b.cfg.OnDeviceGone != nil {
			b.cfg.OnDeviceGone(name)
		}
	}
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
