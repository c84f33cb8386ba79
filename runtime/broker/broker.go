// Package broker runs the embedded MQTT broker (mochi-mqtt) that lets one
// chorusd host a whole room: a TCP listener (TLS optional), username and
// password authentication, and the per-identity publish rules of
// runtime/topic enforced as an ACL hook.
//
// Runtime code never assumes this broker: it speaks MQTT through runtime/bus,
// which works the same against Mosquitto or a clustered broker.
//
// # Usage
//
//	b, err := broker.Start(ctx, broker.Config{Addr: "127.0.0.1:1883", Scheme: topic.New("")})
//	defer b.Close()
//	b.URL() // tcp://127.0.0.1:1883
package broker

import (
	"bytes"
	"context"
	"crypto/subtle"
	"crypto/tls"
	"fmt"
	"log/slog"
	"net"
	"strings"
	"sync"

	mqtt "github.com/mochi-mqtt/server/v2"
	"github.com/mochi-mqtt/server/v2/listeners"
	"github.com/mochi-mqtt/server/v2/packets"

	"github.com/chorus-robotics/chorus/runtime/metrics"
	"github.com/chorus-robotics/chorus/runtime/protocol"
	"github.com/chorus-robotics/chorus/runtime/topic"
)

// Config configures the embedded broker.
type Config struct {
	// Addr is host:port to listen on; port 0 picks a free one.
	Addr string
	// TLS, when set, makes the listener TLS-only.
	TLS *tls.Config
	// Users maps usernames to passwords. When empty, any username connects
	// without a password (AllowAnonymous must then be true), but the ACL
	// still holds each client to its username.
	Users map[string]string
	// AllowAnonymous lets clients connect without a known username/password.
	AllowAnonymous bool
	// Scheme gives the topic prefix and the floor identities for the ACL.
	Scheme topic.Scheme
	// OpenACL lets every authenticated client publish anywhere: for tests
	// and benchmarks of the transport only, never for a room.
	OpenACL bool
	// Logger receives the broker's logs; nil discards them.
	Logger *slog.Logger
	// Metrics counts denied publishes and connections (nil: a private set).
	Metrics *metrics.Metrics
	// MaxPayload caps what a room topic or a query may carry (default
	// protocol.DefaultMaxBytes); MaxResult what a device's results topic
	// may (default protocol.DefaultMaxResultBytes, camera frames). Larger
	// publishes are refused by the broker, before any receiver parses
	// them, and the largest packet it accepts at all is the larger cap
	// plus room for the topic.
	MaxPayload int
	MaxResult  int
}

// packetSlack is room for a packet's header and topic beside its payload.
const packetSlack = 4 << 10

// clientQueue bounds what the broker holds for one client.
const clientQueue = 1024

// Broker is a running embedded broker.
type Broker struct {
	srv  *mqtt.Server
	addr string
	once sync.Once
}

// Start starts the broker and returns once it accepts connections.
func Start(ctx context.Context, cfg Config) (*Broker, error) {
	if len(cfg.Users) == 0 && !cfg.AllowAnonymous {
		return nil, fmt.Errorf("broker: no users configured and anonymous access not allowed")
	}
	if cfg.Scheme.Prefix == "" {
		cfg.Scheme = topic.New("")
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if cfg.Addr == "" {
		cfg.Addr = DefaultListen
	}
	// Take the port now so that Addr() is exact even for port 0.
	var ln net.Listener
	var err error
	if cfg.TLS != nil {
		ln, err = tls.Listen("tcp", cfg.Addr, cfg.TLS)
	} else {
		ln, err = net.Listen("tcp", cfg.Addr)
	}
	if err != nil {
		return nil, fmt.Errorf("broker: listen on %s: %w", cfg.Addr, err)
	}
	if cfg.MaxPayload <= 0 {
		cfg.MaxPayload = protocol.DefaultMaxBytes
	}
	if cfg.MaxResult <= 0 {
		cfg.MaxResult = protocol.DefaultMaxResultBytes
	}
	caps := mqtt.NewDefaultServerCapabilities()
	caps.MaximumPacketSize = uint32(max(cfg.MaxPayload, cfg.MaxResult) + packetSlack)
	// A client that stops reading holds at most this many messages in the
	// broker (mochi's default is 8,192 queued plus 8,192 in flight, each a
	// packet copy: memory and collector time that slow everyone else);
	// beyond it, its messages are dropped, as with Mosquitto's
	// max_queued_messages 1000 in systemd/mosquitto-chorus.conf.
	caps.MaximumClientWritesPending = clientQueue
	caps.MaximumInflight = clientQueue
	srv := mqtt.New(&mqtt.Options{Logger: slog.New(libraryLog{log.Handler()}).With("component", "broker"), InlineClient: true, Capabilities: caps})
	if err := srv.AddHook(&aclHook{srv: srv, cfg: cfg, log: log, m: metrics.OrNew(cfg.Metrics)}, nil); err != nil {
		ln.Close()
		return nil, fmt.Errorf("broker: add ACL hook: %w", err)
	}
	l := &netListener{Net: listeners.NewNet("tcp", ln), srv: srv}
	if err := srv.AddListener(l); err != nil {
		ln.Close()
		return nil, fmt.Errorf("broker: add listener: %w", err)
	}
	if err := srv.Serve(); err != nil {
		srv.Close()
		return nil, fmt.Errorf("broker: serve: %w", err)
	}
	b := &Broker{srv: srv, addr: ln.Addr().String()}
	return b, nil
}

// Addr is the host:port the broker listens on.
func (b *Broker) Addr() string { return b.addr }

// URL is the broker address in the form runtime/bus dials.
func (b *Broker) URL() string { return "tcp://" + b.addr }

// Server exposes the mochi server, for tests that must cut connections.
func (b *Broker) Server() *mqtt.Server { return b.srv }

// Close stops the broker; it is idempotent.
func (b *Broker) Close() error {
	var err error
	b.once.Do(func() { err = b.srv.Close() })
	return err
}

// netListener is mochi's TCP listener with a close that cannot deadlock.
// mochi's own (Server.closeListenerClients) calls Clients.GetByListener,
// which takes the clients' read lock twice (mochi-mqtt/server issue #488):
// a client that leaves at that moment asks for the write lock between the
// two, and Close hangs forever (seen in a test's cleanup, with bridge
// clients going away as the broker closed). This one takes the lock once
// (Clients.GetAll copies the map) and disconnects the listener's clients
// from the copy.
type netListener struct {
	*listeners.Net
	srv *mqtt.Server
}

// Close stops accepting and disconnects this listener's clients.
func (l *netListener) Close(listeners.CloseFn) {
	l.Net.Close(func(id string) {
		for _, cl := range l.srv.Clients.GetAll() {
			if cl.Net.Listener == id && !cl.Closed() {
				_ = l.srv.DisconnectClient(cl, packets.ErrServerShuttingDown)
			}
		}
	})
}

// aclHook authenticates users and applies the topic scheme's publish rules.
//
// A publish the rules deny is acknowledged and dropped, as Mosquitto does:
// mochi's own ACL check disconnects an MQTT 3.1.1 client for it, and a
// client that publishes again after reconnecting would loop. A client whose
// Last Will names a topic it may not publish is refused at CONNECT: mochi
// sends wills without an ACL check, so a will could forge a grant or mark
// another companion offline.
type aclHook struct {
	mqtt.HookBase
	srv *mqtt.Server // its clients, for takeovers
	cfg Config
	log *slog.Logger
	m   *metrics.Metrics
}

func (h *aclHook) ID() string { return "chorus-acl" }

func (h *aclHook) Provides(b byte) bool {
	return bytes.Contains([]byte{mqtt.OnConnectAuthenticate, mqtt.OnACLCheck, mqtt.OnPublish, mqtt.OnWill, mqtt.OnPublishDropped}, []byte{b})
}

// OnPublishDropped counts a message the broker dropped instead of
// delivering: the client's queue was full (it does not keep up).
func (h *aclHook) OnPublishDropped(cl *mqtt.Client, pk packets.Packet) {
	h.m.QueueDrops.WithLabelValues("broker", "client_queue_full").Inc()
}

func (h *aclHook) denied(user, topic, what string) {
	h.m.Reject(h.log, "acl", user, "denied", fmt.Errorf("broker: %s on %q denied by the ACL for %q", what, topic, user))
}

// OnPublish drops (after acknowledging it) a publish the rules deny, or
// one larger than its topic's cap.
func (h *aclHook) OnPublish(cl *mqtt.Client, pk packets.Packet) (packets.Packet, error) {
	if cl.Net.Inline {
		return pk, nil
	}
	user := string(cl.Properties.Username)
	if limit := h.limit(pk.TopicName); len(pk.Payload) > limit {
		h.m.Reject(h.log, "broker", user, string(protocol.KindOversize),
			fmt.Errorf("broker: %d bytes on %q, cap is %d; dropped before any receiver parses it", len(pk.Payload), pk.TopicName, limit))
		return pk, packets.CodeSuccessIgnore
	}
	if !h.cfg.OpenACL && !h.cfg.Scheme.MayPublish(user, pk.TopicName) {
		h.denied(user, pk.TopicName, "publish")
		return pk, packets.CodeSuccessIgnore
	}
	return pk, nil
}

// limit is the payload cap of topic t: a query's result, and a memory
// answer (a person's facts), as large as a result; a memory request as
// an enrolment's embeddings.
func (h *aclHook) limit(t string) int {
	r, ok := h.cfg.Scheme.Parse(t)
	switch {
	case ok && (r.Kind == topic.KindResult || r.Kind == topic.KindMemoryAnswer):
		return h.cfg.MaxResult
	case ok && r.Kind == topic.KindMemory:
		return max(h.cfg.MaxPayload, protocol.MaxMemoryRequestBytes)
	}
	return h.cfg.MaxPayload
}

// OnWill is a second guard: a will on a denied topic goes nowhere.
func (h *aclHook) OnWill(cl *mqtt.Client, will mqtt.Will) (mqtt.Will, error) {
	user := string(cl.Properties.Username)
	if !h.cfg.OpenACL && !h.cfg.Scheme.MayPublish(user, will.TopicName) {
		h.denied(user, will.TopicName, "last will")
		will.TopicName, will.Retain, will.Payload = "$chorus/denied-will", false, nil
	}
	return will, nil
}

func (h *aclHook) OnConnectAuthenticate(cl *mqtt.Client, pk packets.Packet) bool {
	user := string(pk.Connect.Username)
	if user == "" {
		// An anonymous client, where anonymous clients are allowed (a
		// loopback listener): as with Mosquitto and the rendered ACL, it
		// reads the rooms but no device's results and publishes no more
		// than queries (topic.Scheme's rules for the empty identity).
		if h.cfg.AllowAnonymous && !pk.Connect.WillFlag {
			return h.mayTakeOver(cl, user)
		}
		h.log.Warn("broker: connection without a username refused", "client", cl.ID, "anonymous_allowed", h.cfg.AllowAnonymous)
		return false
	}
	if pk.Connect.WillFlag && !h.cfg.OpenACL && !h.cfg.Scheme.MayPublish(user, pk.Connect.WillTopic) {
		h.denied(user, pk.Connect.WillTopic, "connection with a last will")
		return false
	}
	if want, ok := h.cfg.Users[user]; ok {
		if subtle.ConstantTimeCompare([]byte(want), pk.Connect.Password) == 1 {
			return h.mayTakeOver(cl, user)
		}
		h.log.Warn("broker: bad password", "user", user, "client", cl.ID)
		return false
	}
	// Without a users file (the demo, on loopback) any name connects; with
	// one, a name it lacks is refused as Mosquitto refuses a name its
	// password_file lacks, anonymous clients allowed or not (issue 27: with
	// allow_anonymous, anyone could be homeassistant).
	if h.cfg.AllowAnonymous && len(h.cfg.Users) == 0 {
		return h.mayTakeOver(cl, user)
	}
	h.log.Warn("broker: unknown user refused", "user", user, "client", cl.ID)
	return false
}

// mayTakeOver refuses a connection whose client id a client of another
// name holds: a robot reconnecting takes its own session over, nobody
// else does. (Mosquitto lets any client take over any id; here an
// anonymous mosquitto_sub -i ben left the robot ben connected but deaf —
// mochi 2.7.9 may drop the new session's subscriptions when the old one
// is cleaned up at the same moment. Found by an outside attack, issue 27.)
func (h *aclHook) mayTakeOver(cl *mqtt.Client, user string) bool {
	old, ok := h.srv.Clients.Get(cl.ID)
	if !ok || old == cl || old.Closed() || string(old.Properties.Username) == user {
		return true
	}
	h.m.Reject(h.log, "broker", user, "client_id_taken",
		fmt.Errorf("broker: client id %q is held by %q; refused to %q", cl.ID, old.Properties.Username, user))
	return false
}

// OnACLCheck answers reads; writes are judged in OnPublish.
//
// mochi asks it for a subscription's filter and again for each message's
// topic as it delivers it. As Mosquitto does with the ACL `chorus acl`
// renders, a filter with a wildcard is granted and each delivery is
// judged by its topic: `mosquitto_sub -t 'chorus/#'` by any client gets
// what that client may read, not a refusal of the whole subscription
// (issue 27). A filter without a wildcard is judged as the topic it is —
// refused at once where Mosquitto would grant it and deliver nothing,
// so a client learns it may not read it (chorus phase says so).
func (h *aclHook) OnACLCheck(cl *mqtt.Client, t string, write bool) bool {
	if h.cfg.OpenACL || write {
		return true
	}
	if strings.ContainsAny(t, "+#") {
		return true
	}
	return h.cfg.Scheme.MayRead(string(cl.Properties.Username), t)
}
