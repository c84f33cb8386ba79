// Package bridge is the WebSocket bridge of a room (aikyo's "firehose"):
// clients that are not MQTT peers — speaker apps, avatar front ends,
// browser pages, the room console — connect with a token, receive the
// room's traffic as bare JSON-RPC frames, and send what their role allows:
// a user's message.send, or a device's QueryResults for the queries
// addressed to it and the declaration of its body's actions.
//
// Frames out: a Message and a State as they are on the bus (both are
// JSON-RPC already); a grant, a presence, a speaking status and a
// realtime phase event and the floor's answer to a realtime post as
// JSON-RPC notifications (methods turn.grant, presence.update,
// speaking.update, phase.event, post.ack) whose params are the value; a
// query addressed to the client's device as it is (query.send), except an
// action query for a device that declared delivery "notify", which goes
// out as aikyo's Action frame {"jsonrpc":"2.0","method":"action.send",
// "params":{"from","name","params"}} (protocol.ActionSend), and a
// speak.more, which a body behind the bridge does not serve: the bridge
// answers it with an error (its companion sends such a body the whole
// text in one speak). The first
// frame to a client is a bridge.hello notification: its role, its name
// and the room; then the room as it is (the latest presence and speaking
// status of each member, the latest phase event); then a bridge.replay
// notification with the room's recent Messages (replay.go); then the room
// live.
//
// Frames in: a Message (method message.send), a QueryResult, camera.get
// {device} from a client whose token allows it (the answer goes to that
// client only), memory from a user (below), actions.declare and
// knowledge.declare from a device, or any of them wrapped as {"topic": "messages"|"queries",
// "body": ...} (aikyo's envelope). Anything else gets a JSON-RPC error
// frame (errorCodes: -32700 not JSON, -32600 invalid, -32001 forbidden,
// -32002 not addressed, -32003 rate limited, -32004 not published,
// -32005 camera, -32006 memory; data.reason is the counted reason) and
// is counted; the connection stays up.
//
// # A person's memory
//
// A user's client lists and forgets what a device's companion remembers
// (issue 29):
//
//	{"jsonrpc":"2.0","id":1,"method":"memory",
//	 "params":{"device":D,"op":"list"|"forget","person":P,"fact":F}}
//
// The bridge asks device D (runtime/memory/control) under the client's
// own name, on that name's bus connection, so the device decides by it:
// anyone may list and forget their own facts, an operator
// (memory.operators) anyone's. The answer, to that client only, is
// {"jsonrpc":"2.0","id":1,"result":{"device":D,"facts":[...],"forgotten":N}},
// or an error frame (-32006) with the device's refusal or why no answer
// came (within MemoryTimeout, waited in that client's reader). Params are
// strings with exactly these keys; op export and wipe are refused
// (chorus memory does those).
//
// # A body's own actions
//
// A device's client declares what its body can do (docs/actions.md):
//
//	{"jsonrpc":"2.0","id":1,"method":"actions.declare",
//	 "params":{"actions":[{"name","description","schema"}...],"delivery":"query"|"notify"}}
//
// The params are decoded strictly (protocol.DecodeActionDeclaration: at
// most 32 actions, names unique, not speak or vision) and every schema is
// compiled (runtime/schema) before anything is kept; the answer is
// {"jsonrpc":"2.0","id":1,"result":{"declared":N}}, or an error frame
// naming what is wrong, and the previous declaration stays. A new
// declaration replaces the device's previous one; it is forgotten when
// the device's last client goes. Actions returns what a device declared,
// and Config.OnActions is told of each change.
//
// Delivery "query" (the default): an action query (protocol.TypeAction)
// goes to the body as query.send like any query, and the body answers it
// with a QueryResult whose body is a protocol.ActionResult. Delivery
// "notify" is for aikyo-style bodies, which take a companion's actions as
// action.send and never answer them: the bridge checks the query (a
// declared action, arguments its schema accepts), sends the Action frame
// and publishes the result itself, as the device — protocol.ActionResult
// {name, done: true, detail: SentDetail} — or an error result naming the
// undeclared action and the declared ones, or what is wrong with the
// arguments.
//
// # A body's own knowledge
//
// A device's client declares knowledge tools its companion's model may call
// (issue 29), as it declares actions:
//
//	{"jsonrpc":"2.0","id":2,"method":"knowledge.declare",
//	 "params":{"knowledge":[{"name","description","parameters"}...]}}
//
// The params are decoded strictly (protocol.DecodeKnowledgeDeclaration: at
// most 16 tools, names as actions' and unique, parameters a JSON Schema
// object) and every parameters schema is compiled (runtime/schema) before
// anything is kept; the answer is {"jsonrpc":"2.0","id":2,"result":
// {"declared":N}}, or an error frame naming what is wrong, and the previous
// declaration stays. A new declaration replaces the previous one; it is
// forgotten when the device's last client goes. Knowledge returns what a
// device declared. A knowledge query (protocol.TypeKnowledge,
// {"name","args"}) goes to the body as query.send like any query, and the
// body answers it with a QueryResult whose body is {"text": ...}
// (protocol.KnowledgeResult, at most 2,000 characters).
//
// # Limits
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
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

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
	// Online tells whether a device that is not behind this bridge is
	// present (as query.ClientOptions.Online): camera.get for one whose
	// presence is known offline is answered at once, not after
	// LookTimeout. A device never seen in a presence is asked (a body
	// without a companion announces none); a body behind this bridge is
	// online while its client is connected. nil: every such device is
	// asked.
	Online func(device string) (online, known bool)

	MaxClients int // default 32
	// Replay and ReplayBytes bound the room's recent Messages the bridge
	// keeps for a new client (bridge.replay): the last Replay of them,
	// and no more than ReplayBytes; defaults DefaultReplay and
	// DefaultReplayBytes.
	Replay      int
	ReplayBytes int
	Queue       int   // frames waiting for one client; default 1024
	QueueBytes  int64 // bytes waiting for one client; default 4 MiB
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

	// OnActions, when set, is told the actions a device declared (a
	// copy; nil when it declared none) each time one of its clients
	// sends actions.declare, and nil when the declaration is forgotten
	// because the device's last client has gone. It is called on that
	// client's goroutine, one call at a time and in the order the
	// declarations were made and forgotten; it must not block (hand the
	// work on), and it may call Actions.
	OnActions func(device string, defs []protocol.ActionDef)

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
	recent  *recent              // the room's last Messages, for a new client
	devices map[string]int       // connected clients by device name (Device role)
	// decl is each device's declared actions, while a client of it is
	// connected; bounded by the device tokens (only their clients
	// declare).
	decl map[string]*declaration
	// know is each device's declared knowledge tools, kept as decl is.
	know map[string][]protocol.KnowledgeDef
	// actionsMu orders the changes of decl with their OnActions calls.
	actionsMu sync.Mutex
}

// maxLatest bounds the snapshot a new client gets (the room drops
// presences and statuses of non-members before they get here).
const maxLatest = 1024

// The bridge's defaults: frames queued per client (1,024 frames of the
// largest a room carries would be 64 MiB, hence the byte cap too), the
// largest frame a viewer or a user may send, and the socket's write
// timeout and ping.
const (
	DefaultQueue        = 1024
	DefaultQueueBytes   = 4 << 20
	DefaultMaxFrame     = 64 << 10
	DefaultWriteTimeout = 5 * time.Second
	DefaultPingEvery    = 20 * time.Second
)

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
	def(&cfg.Replay, DefaultReplay)
	def(&cfg.ReplayBytes, DefaultReplayBytes)
	def(&cfg.Queue, DefaultQueue)
	if cfg.QueueBytes <= 0 {
		cfg.QueueBytes = DefaultQueueBytes
	}
	if cfg.MaxFrame <= 0 {
		cfg.MaxFrame = DefaultMaxFrame
	}
	if cfg.MaxDeviceFrame <= 0 {
		cfg.MaxDeviceFrame = protocol.DefaultMaxResultBytes
	}
	if cfg.WriteTimeout <= 0 {
		cfg.WriteTimeout = DefaultWriteTimeout
	}
	if cfg.PingEvery <= 0 {
		cfg.PingEvery = DefaultPingEvery
	}
	if cfg.RatePerSec <= 0 {
		cfg.RatePerSec = 20
	}
	log := cfg.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Bridge{cfg: cfg, log: log, m: metrics.OrNew(cfg.Metrics), clients: map[*client]bool{}, ids: map[string]*identity{}, latest: map[string][]byte{},
		recent: newRecent(cfg.Replay, cfg.ReplayBytes), devices: map[string]int{}, decl: map[string]*declaration{}, know: map[string][]protocol.KnowledgeDef{}}, nil
}

// Run subscribes to the room's traffic and relays it to the clients until
// ctx ends; then it closes every client.
func (b *Bridge) Run(ctx context.Context) error {
	r := b.cfg.Room
	notify := func(method string) func(v any) {
		return func(v any) { b.broadcast(func() []byte { return frame(method, v) }) }
	}
	// A new client first gets the room as it is: who is present, who
	// speaks, the phase; then the room's recent Messages. These are kept
	// as they pass, and under the same lock the clients they go to live
	// are picked (see keepMessage).
	keep := func(key, method string, v any) {
		f := frame(method, v)
		b.mu.Lock()
		if len(b.latest) < maxLatest || b.latest[key] != nil {
			b.latest[key] = f
		}
		cs := b.liveLocked()
		b.mu.Unlock()
		b.deliver(cs, f)
	}
	subs := []func() error{
		func() error {
			return r.OnMessage(ctx, func(m protocol.Message) {
				f := mustJSON(b.aikyoShaped(m))
				b.deliver(b.keepMessage(m, f), f)
			})
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
		func() error { // what each robot heard (the console shows which report the room took)
			f := notify("heard.report")
			return r.OnHeard(ctx, func(h protocol.Heard) { f(h) })
		},
		func() error { // what a person is saying as they say it (the floor's captions)
			f := notify("heard.caption")
			return r.OnCaption(ctx, func(h protocol.Heard) { f(h) })
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
