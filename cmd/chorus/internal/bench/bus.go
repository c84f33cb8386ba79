package bench

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	paho "github.com/eclipse/paho.mqtt.golang"

	"github.com/chorus-robotics/chorus/cmd/chorus/internal/localroom"
	"github.com/chorus-robotics/chorus/device/robot"
	"github.com/chorus-robotics/chorus/runtime/bus"
	"github.com/chorus-robotics/chorus/runtime/protocol"
	"github.com/chorus-robotics/chorus/runtime/room"
	"github.com/chorus-robotics/chorus/runtime/topic"
)

// Stats summarizes latencies.
type Stats struct {
	N        int
	P50, P90 time.Duration
	P99      time.Duration
	Max      time.Duration
}

// Summarize computes the percentiles of ds.
func Summarize(ds []time.Duration) Stats {
	if len(ds) == 0 {
		return Stats{}
	}
	s := slices.Clone(ds)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	at := func(p float64) time.Duration { return s[min(len(s)-1, int(p*float64(len(s))))] }
	return Stats{N: len(s), P50: at(0.50), P90: at(0.90), P99: at(0.99), Max: s[len(s)-1]}
}

func (s Stats) String() string {
	return fmt.Sprintf("n=%d p50=%v p99=%v max=%v", s.N, s.P50.Round(time.Microsecond), s.P99.Round(time.Microsecond), s.Max.Round(time.Microsecond))
}

// payload is 64 bytes, as NOTES.md's baseline.
var payload = []byte("0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef")

// BusRoundTrip publishes n messages one after the other through runtime/bus
// (two connections) and times each until the subscriber has it.
func BusRoundTrip(ctx context.Context, url string, qos byte, n int) ([]time.Duration, error) {
	id := strconv.FormatInt(time.Now().UnixNano(), 36)
	dial := func(name string) (*bus.MQTT, error) {
		return bus.Dial(ctx, bus.Options{Broker: url, ClientID: name + id, Username: name, QoS: bus.QoS(qos)})
	}
	pub, err := dial("bench-pub")
	if err != nil {
		return nil, err
	}
	defer pub.Close()
	sub, err := dial("bench-sub")
	if err != nil {
		return nil, err
	}
	defer sub.Close()
	got := make(chan struct{}, 1)
	// A topic the room ACL lets the publisher write: its own message topic.
	t := topic.New("").Message("bench"+id, "bench-pub")
	if err := sub.Subscribe(ctx, t, func(string, []byte) { got <- struct{}{} }); err != nil {
		return nil, err
	}
	return timeLoop(ctx, n, got, func() error { return pub.Publish(ctx, t, payload, false) })
}

// RawRoundTrip is BusRoundTrip with paho used directly: the baseline.
func RawRoundTrip(ctx context.Context, url string, qos byte, n int) ([]time.Duration, error) {
	id := strconv.FormatInt(time.Now().UnixNano(), 36)
	dial := func(name string) (paho.Client, error) {
		c := paho.NewClient(paho.NewClientOptions().AddBroker(url).SetClientID(name + id).SetUsername(name).SetProtocolVersion(4))
		tok := c.Connect()
		tok.Wait()
		return c, tok.Error()
	}
	pub, err := dial("raw-pub")
	if err != nil {
		return nil, err
	}
	defer pub.Disconnect(100)
	sub, err := dial("raw-sub")
	if err != nil {
		return nil, err
	}
	defer sub.Disconnect(100)
	got := make(chan struct{}, 1)
	t := topic.New("").Message("bench"+id, "raw-pub")
	tok := sub.Subscribe(t, qos, func(paho.Client, paho.Message) { got <- struct{}{} })
	if tok.Wait(); tok.Error() != nil {
		return nil, tok.Error()
	}
	return timeLoop(ctx, n, got, func() error {
		tok := pub.Publish(t, qos, false, payload)
		tok.Wait()
		return tok.Error()
	})
}

func timeLoop(ctx context.Context, n int, got <-chan struct{}, send func() error) ([]time.Duration, error) {
	out := make([]time.Duration, 0, n)
	for range n {
		start := time.Now()
		if err := send(); err != nil {
			return out, err
		}
		select {
		case <-got:
			out = append(out, time.Since(start))
		case <-time.After(5 * time.Second):
			return out, fmt.Errorf("message lost")
		case <-ctx.Done():
			return out, ctx.Err()
		}
	}
	return out, nil
}

// floorDevice is the floor benchmark's floor: a device that runs only the
// room's floor, for voters v00...
const floorDevice = `version: 1
device: {id: bench-floor}
room: {name: bench, members: [%s], floor: true}
mqtt: {broker: "tcp://127.0.0.1:1"}
drivers: {audio: {kind: null}, tts: {kind: tone}}
http: {listen: "off"}
`

// The room the floor benchmark uses, and its roster: a broker with an ACL
// must know it (Scheme).
const (
	FloorRoom = "bench"
	maxVoters = 500
)

func voterIDs(n int) []string {
	ids := make([]string, n)
	for i := range ids {
		ids[i] = fmt.Sprintf("v%02d", i)
	}
	return ids
}

// Rosters is the benchmark room's members, for a broker's ACL.
func Rosters() map[string][]string {
	return map[string][]string{FloorRoom: voterIDs(maxVoters), RealtimeRoom: realtimeIDs()}
}

// Scheme is the default topic scheme with the benchmark room's roster.
func Scheme() topic.Scheme {
	s := topic.New("")
	for room, m := range Rosters() {
		s = s.WithRoster(room, m)
	}
	return s
}

// FloorLatency runs a floor and n voters that answer every message at once
// (the instant brain: a State straight from the room callback), sends
// rounds messages one after the other, and times each from its publish to
// its grant reaching every voter.
func FloorLatency(ctx context.Context, url string, n, rounds int) ([]time.Duration, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	voters := voterIDs(n)
	c, err := robot.Decode(strings.NewReader(fmt.Sprintf(floorDevice, strings.Join(voters, ", "))))
	if err != nil {
		return nil, err
	}
	lr, err := localroom.Start(ctx, []*robot.Config{c}, localroom.Options{Broker: url})
	if err != nil {
		return nil, err
	}
	defer lr.Close()
	s, roomName := lr.Scheme, lr.Name
	var closers []func() error
	defer func() {
		for _, c := range closers {
			c()
		}
	}()
	dial := func(clientID, user string, birth func(time.Time) *bus.Retained, will *bus.Retained) (*bus.MQTT, error) {
		b, err := bus.Dial(ctx, bus.Options{Broker: url, ClientID: clientID + roomName, Username: user, Birth: birth, Will: will})
		if err == nil {
			closers = append(closers, b.Close)
		}
		return b, err
	}

	type arrival struct {
		id string
		at time.Time
	}
	arrivals := make(chan arrival, n*4)
	for i := range n {
		id := fmt.Sprintf("v%02d", i)
		r := room.New(nil, s, roomName, nil, nil)
		birth, will := r.PresenceMessages(id, id)
		b, err := dial(id, id, birth, will)
		if err != nil {
			return nil, err
		}
		r.Bus = b
		if err := r.OnGrant(ctx, func(g protocol.TurnGrant) { arrivals <- arrival{g.MessageID, time.Now()} }); err != nil {
			return nil, err
		}
		err = r.OnMessage(ctx, func(m protocol.Message) {
			st := protocol.NewState(protocol.StateParams{From: id, MessageID: m.Params.ID, State: protocol.Listen, Importance: float64(i % 10)})
			go r.SendState(ctx, st) // never wait inside a bus callback
		})
		if err != nil {
			return nil, err
		}
	}
	ub, err := dial("user", "user", nil, nil)
	if err != nil {
		return nil, err
	}
	user := room.New(ub, s, roomName, nil, nil)
	time.Sleep(200 * time.Millisecond) // the floor sees every voter present

	out := make([]time.Duration, 0, rounds)
	for r := range rounds + 1 {
		mid := fmt.Sprintf("m%d", r)
		start := time.Now()
		if err := user.SendMessage(ctx, protocol.NewMessage(mid, "user", nil, "hello", "")); err != nil {
			return out, err
		}
		var last time.Time
		for seen := 0; seen < n; {
			select {
			case a := <-arrivals:
				if a.id == mid {
					seen++
					last = a.at
				}
			case <-time.After(10 * time.Second):
				return out, fmt.Errorf("round %d: %d of %d voters got the grant", r, seen, n)
			case <-ctx.Done():
				return out, ctx.Err()
			}
		}
		if r > 0 { // round 0 warms up the connections
			out = append(out, last.Sub(start))
		}
	}
	return out, nil
}
