package bus

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"sync"
	"time"

	paho "github.com/eclipse/paho.mqtt.golang"
	"github.com/eclipse/paho.mqtt.golang/packets"

	"github.com/chorus-robotics/chorus/runtime/metrics"
)

// The connection's defaults.
const (
	DefaultConnectTimeout = 5 * time.Second
	DefaultKeepAlive      = 10 * time.Second
	DefaultMaxReconnect   = 2 * time.Second
	DefaultQuiesce        = 250 * time.Millisecond
)

// Options configures an MQTT connection.
type Options struct {
	Broker string // tcp://host:port, ssl://host:port
	// Brokers are more endpoints of the same room (a clustered broker's
	// nodes): every connect and reconnect tries Broker, then each of
	// these in order, and takes the first that answers (issue 31). The
	// Birth is published again on whichever it reaches, and OnReconnect's
	// hooks run, so what the client owns retained is said again there.
	Brokers  []string
	ClientID string // unique per connection
	Username string // the identity the broker's ACL holds this client to
	Password string
	TLS      *tls.Config

	// QoS of every publish — the Birth and the Will too — and of every
	// subscription: 0 or 1 (default 1, as docs/protocol.md).
	QoS *byte

	// Will is published by the broker if the connection is lost abruptly,
	// and by Close before a clean disconnect.
	Will *Retained
	// Birth builds the message published, retained, on every connect and
	// reconnect; it is given the time of that connect (a presence says
	// since when the device is online). nil publishes nothing.
	Birth func(now time.Time) *Retained

	ConnectTimeout time.Duration // default DefaultConnectTimeout
	KeepAlive      time.Duration // default DefaultKeepAlive
	MaxReconnect   time.Duration // longest wait between reconnect attempts, default DefaultMaxReconnect
	Quiesce        time.Duration // default DefaultQuiesce (NOTES.md: Disconnect(0) fires the Will)

	Logger  *slog.Logger
	Metrics *metrics.Metrics
}

// QoS returns a pointer to q, for Options.QoS.
func QoS(q byte) *byte { return &q }

// MQTT is a Bus over paho.mqtt.golang.
type MQTT struct {
	c       paho.Client
	opts    Options
	qos     byte
	log     *slog.Logger
	metrics *metrics.Metrics

	mu          sync.Mutex
	link        *link // the current connection's state
	done        chan struct{}
	pings       map[string]chan struct{}
	pingTopic   string
	subs        map[string][]Handler // every handler of a filter hears every message
	connected   int                  // successful connections so far
	onReconnect []func()
	onLost      []func()
	closed      bool
	closeOnce   sync.Once
	at          string // the endpoint of the latest connection attempt (Brokers)
}

// broker names the endpoint this client uses (or last tried).
func (b *MQTT) broker() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.at != "" {
		return b.at
	}
	return b.opts.Broker
}

var _ Bus = (*MQTT)(nil)

// link is one connection: up is closed once it is connected, lost once it
// is gone. A new link replaces a lost one.
type link struct{ up, lost chan struct{} }

func newLink() *link { return &link{up: make(chan struct{}), lost: make(chan struct{})} }

func closeOnce(c chan struct{}) {
	select {
	case <-c:
	default:
		close(c)
	}
}

// ErrClosed is returned by operations on a closed bus.
var ErrClosed = errors.New("bus: closed")

// ErrLoginRefused is a connection the broker refused for its identity
// (CONNACK "not authorized" or "bad user name or password"): a user the
// broker's users file lacks, or a wrong password.
var ErrLoginRefused = errors.New("broker refused the login")

// ErrRefused is a subscription the broker refused (an ACL that does not
// let this client read the filter, most often).
var ErrRefused = errors.New("broker refused the subscription")

// Dial connects to the broker and returns when the first connection is up
// or ctx ends.
func Dial(ctx context.Context, o Options) (*MQTT, error) {
	if o.Broker == "" {
		return nil, fmt.Errorf("bus: no broker URL")
	}
	if o.ClientID == "" {
		return nil, fmt.Errorf("bus: no client id")
	}
	qos := byte(1)
	if o.QoS != nil {
		qos = *o.QoS
	}
	if qos > 1 {
		return nil, fmt.Errorf("bus: qos must be 0 or 1, got %d", qos)
	}
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	def(&o.ConnectTimeout, DefaultConnectTimeout)
	def(&o.KeepAlive, DefaultKeepAlive)
	def(&o.MaxReconnect, DefaultMaxReconnect)
	def(&o.Quiesce, DefaultQuiesce)
	log := o.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	b := &MQTT{opts: o, qos: qos, log: log.With("client", o.ClientID), metrics: metrics.OrNew(o.Metrics), subs: map[string][]Handler{},
		link: newLink(), done: make(chan struct{})}

	po := paho.NewClientOptions().
		AddBroker(o.Broker).
		SetClientID(o.ClientID).
		SetUsername(o.Username).
		SetPassword(o.Password).
		SetProtocolVersion(4). // MQTT 3.1.1
		SetCleanSession(true).
		SetOrderMatters(true).
		SetAutoReconnect(true).
		SetConnectRetry(false).
		SetConnectTimeout(o.ConnectTimeout).
		SetKeepAlive(o.KeepAlive).
		SetPingTimeout(o.KeepAlive / 2).
		SetMaxReconnectInterval(o.MaxReconnect).
		SetWriteTimeout(o.ConnectTimeout).
		SetOnConnectHandler(b.onConnect).
		SetStore(publishlessStore{paho.NewMemoryStore()}).
		SetConnectionLostHandler(func(_ paho.Client, err error) {
			b.mu.Lock()
			closeOnce(b.link.lost)
			b.link = newLink()
			hooks := append([]func(){}, b.onLost...)
			b.mu.Unlock()
			b.log.Warn("bus: connection lost", "broker", b.broker(), "err", err)
			for _, h := range hooks {
				h()
			}
		})
	for _, u := range o.Brokers {
		if u != o.Broker {
			po.AddBroker(u)
		}
	}
	if len(o.Brokers) > 0 {
		po.SetConnectionAttemptHandler(func(u *url.URL, tc *tls.Config) *tls.Config {
			b.mu.Lock()
			b.at = u.Scheme + "://" + u.Host
			b.mu.Unlock()
			return tc
		})
	}
	if o.TLS != nil {
		po.SetTLSConfig(o.TLS)
	}
	if o.Will != nil {
		po.SetBinaryWill(o.Will.Topic, o.Will.Payload, qos, true)
	}
	b.c = paho.NewClient(po)
	tok := b.c.Connect()
	if err := wait(ctx, tok, o.ConnectTimeout); err != nil {
		b.c.Disconnect(0)
		if errors.Is(err, packets.ErrorRefusedNotAuthorised) || errors.Is(err, packets.ErrorRefusedBadUsernameOrPassword) {
			return nil, fmt.Errorf("bus: connect to %s as %q: %w: %w", o.Broker, o.Username, ErrLoginRefused, err)
		}
		return nil, fmt.Errorf("bus: connect to %s as %q: %w", o.Broker, o.Username, err)
	}
	return b, nil
}

// onConnect runs (on its own goroutine, started by paho) after every
// successful connect: resubscribe, announce the birth message, and after a
// reconnect tell those who asked (OnReconnect).
func (b *MQTT) onConnect(c paho.Client) {
	b.mu.Lock()
	if c.IsConnectionOpen() {
		closeOnce(b.link.up)
	}
	b.connected++
	first := b.connected == 1
	filters := make([]string, 0, len(b.subs))
	for f := range b.subs {
		filters = append(filters, f)
	}
	hooks := append([]func(){}, b.onReconnect...)
	b.mu.Unlock()
	if !first {
		b.metrics.Reconnects.Inc()
		b.log.Info("bus: reconnected", "broker", b.broker(), "subscriptions", len(filters))
	}
	ctx, cancel := context.WithTimeout(context.Background(), b.opts.ConnectTimeout)
	defer cancel()
	for _, f := range filters {
		if b.isClosed() {
			return // closed while it reconnected: nothing to resubscribe for
		}
		if err := b.subscribe(ctx, f); err != nil {
			b.log.Error("bus: resubscribe failed", "filter", f, "err", err)
		}
	}
	if b.opts.Birth != nil {
		if bm := b.opts.Birth(time.Now()); bm != nil {
			if err := wait(ctx, c.Publish(bm.Topic, b.qos, true, bm.Payload), 0); err != nil {
				b.log.Error("bus: birth message failed", "topic", bm.Topic, "err", err)
			}
		}
	}
	if !first {
		for _, h := range hooks {
			h()
		}
	}
}

// OnReconnect registers f to run after every reconnect, once the
// subscriptions are renewed and the birth message is out (a floor says
// again that it leads; a restarted broker forgot it). f runs on its own
// goroutine's time and must not block for long.
func (b *MQTT) OnReconnect(f func()) {
	b.mu.Lock()
	b.onReconnect = append(b.onReconnect, f)
	b.mu.Unlock()
}

// OnLost registers f to run whenever the connection is lost (a floor stops
// deciding on deadlines it could not hear out). f must not block.
func (b *MQTT) OnLost(f func()) {
	b.mu.Lock()
	b.onLost = append(b.onLost, f)
	b.mu.Unlock()
}

// dispatch is the one paho handler of filter: it hands each message to
// every handler subscribed to that filter, in the order they subscribed.
func (b *MQTT) dispatch(filter string) paho.MessageHandler {
	return func(_ paho.Client, m paho.Message) {
		b.mu.Lock()
		hs := b.subs[filter]
		b.mu.Unlock()
		for _, h := range hs {
			h(m.Topic(), m.Payload())
		}
	}
}

// wait waits for tok, ctx, or (when limit > 0) limit.
func wait(ctx context.Context, tok paho.Token, limit time.Duration) error {
	var timeout <-chan time.Time
	if limit > 0 {
		t := time.NewTimer(limit)
		defer t.Stop()
		timeout = t.C
	}
	select {
	case <-tok.Done():
		return tok.Error()
	case <-ctx.Done():
		return ctx.Err()
	case <-timeout:
		return fmt.Errorf("timed out after %v", limit)
	}
}

// Publish implements Bus. It waits for a live connection, and when that
// connection is lost before the broker acknowledged the message it sends
// it again on the next one (at least once: receivers are idempotent).
func (b *MQTT) Publish(ctx context.Context, topic string, payload []byte, retain bool) error {
	for {
		b.mu.Lock()
		l, closed := b.link, b.closed
		b.mu.Unlock()
		if closed {
			return ErrClosed
		}
		select {
		case <-l.up:
		case <-b.done:
			return ErrClosed
		case <-ctx.Done():
			return fmt.Errorf("bus: publish %s: not connected: %w", topic, ctx.Err())
		}
		tok := b.c.Publish(topic, b.qos, retain, payload)
		if err := b.await(ctx, tok, l); err != errLost {
			if err != nil {
				return fmt.Errorf("bus: publish %s: %w", topic, err)
			}
			return nil
		}
		b.log.Debug("bus: connection lost before the broker acknowledged; publishing again", "topic", topic)
	}
}

// errLost says the connection went away while a publish waited for its
// acknowledgement.
var errLost = errors.New("connection lost")

// await waits for tok on connection l. paho may leave the token of a
// publish caught by a connection loss pending forever, so the loss ends
// the wait too (checked once a second besides the lost signal, since paho
// reports losses on a goroutine of its own).
func (b *MQTT) await(ctx context.Context, tok paho.Token, l *link) error {
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		select {
		case <-tok.Done():
			if err := tok.Error(); err != nil {
				if !b.c.IsConnectionOpen() {
					return errLost
				}
				return err
			}
			return nil
		case <-l.lost:
			return errLost
		case <-tick.C:
			if !b.c.IsConnectionOpen() {
				return errLost
			}
		case <-b.done:
			return ErrClosed
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// Subscribe implements Bus. The subscription is renewed after reconnects.
// Several handlers may subscribe to one filter: each hears every message
// (and the retained ones, which the broker sends again for the new
// SUBSCRIBE; earlier handlers see those twice, as at-least-once allows).
func (b *MQTT) Subscribe(ctx context.Context, filter string, h Handler) error {
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		return ErrClosed
	}
	// A new slice each time: dispatch reads it without the lock.
	b.subs[filter] = append(append([]Handler(nil), b.subs[filter]...), h)
	b.mu.Unlock()
	if !b.c.IsConnectionOpen() {
		return nil // onConnect subscribes it when the connection is back
	}
	if err := b.subscribe(ctx, filter); err != nil {
		if !b.c.IsConnectionOpen() {
			return nil // lost meanwhile; onConnect subscribes it again
		}
		return fmt.Errorf("bus: subscribe %s: %w", filter, err)
	}
	return nil
}

// subscribe sends SUBSCRIBE and checks the granted code. A refusal is
// retried a few times with a new packet id: mochi 2.7.9 shares one inflight
// map between both directions and answers 0x91 "packet identifier in use"
// when paho's SUBSCRIBE id equals the id of a retained QoS 1 message the
// broker is still delivering to us (seen in the demo: a subscription
// silently missing).
// packetIDInUse is the SUBACK code mochi 2.7.9 sends for a packet id it is
// still using itself (subscribe explains).
const packetIDInUse = 0x91

func (b *MQTT) subscribe(ctx context.Context, filter string) error {
	var last error
	for attempt := range 10 {
		if attempt > 0 {
			select {
			case <-time.After(time.Duration(attempt) * 10 * time.Millisecond):
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		tok := b.c.Subscribe(filter, b.qos, b.dispatch(filter))
		if err := wait(ctx, tok, 0); err != nil {
			return err
		}
		code, ok := tok.(*paho.SubscribeToken).Result()[filter]
		if ok && code < 0x80 {
			return nil
		}
		last = fmt.Errorf("%w (code 0x%02x)", ErrRefused, code)
		if code != packetIDInUse {
			return last // not authorized, or another failure: asking again will not help
		}
		b.log.Debug("bus: subscription refused; retrying", "filter", filter, "code", code, "attempt", attempt+1)
	}
	return last
}

func (b *MQTT) isClosed() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.closed
}

// Close publishes the Will (the device is leaving on purpose), then
// disconnects with a quiesce so the broker does not fire the Will itself.
// Closed while paho is between reconnect attempts, paho's reconnect
// goroutine ends at its next attempt (within MaxReconnect), not at once.
func (b *MQTT) Close() error {
	b.closeOnce.Do(func() {
		b.mu.Lock()
		b.closed = true
		b.mu.Unlock()
		defer close(b.done)
		if w := b.opts.Will; w != nil && b.c.IsConnectionOpen() {
			ctx, cancel := context.WithTimeout(context.Background(), b.opts.Quiesce*4)
			if err := wait(ctx, b.c.Publish(w.Topic, b.qos, true, w.Payload), 0); err != nil {
				b.log.Warn("bus: could not announce leaving", "topic", w.Topic, "err", err)
			}
			cancel()
		}
		b.c.Disconnect(uint(b.opts.Quiesce / time.Millisecond))
	})
	return nil
}

// Ping proves the connection turns both ways: it publishes payload on t (a
// topic this client may write) and waits until its own subscription hands
// it back. While the client is reconnecting it returns nil: paho is not
// stuck, the broker is away. The watchdog uses it.
func (b *MQTT) Ping(ctx context.Context, t string, payload []byte) error {
	if !b.c.IsConnectionOpen() {
		return nil
	}
	b.mu.Lock()
	if b.pings == nil {
		b.pings = map[string]chan struct{}{}
	}
	need := b.pingTopic != t
	b.pingTopic = t
	ch := make(chan struct{})
	key := string(payload)
	b.pings[key] = ch
	b.mu.Unlock()
	defer func() {
		b.mu.Lock()
		delete(b.pings, key)
		b.mu.Unlock()
	}()
	if need {
		err := b.Subscribe(ctx, t, func(_ string, p []byte) {
			b.mu.Lock()
			c, ok := b.pings[string(p)]
			if ok {
				delete(b.pings, string(p))
			}
			b.mu.Unlock()
			if ok {
				close(c)
			}
		})
		if err != nil {
			return err
		}
	}
	if err := b.Publish(ctx, t, payload, false); err != nil {
		return err
	}
	select {
	case <-ch:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("bus: ping on %s: %w", t, ctx.Err())
	}
}
