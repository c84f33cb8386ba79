package bench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strconv"
	"sync"
	"time"

	paho "github.com/eclipse/paho.mqtt.golang"
	"github.com/eclipse/paho.mqtt.golang/packets"

	"github.com/chorus-robotics/chorus/runtime/bus"
	"github.com/chorus-robotics/chorus/runtime/protocol"
	"github.com/chorus-robotics/chorus/runtime/realtime"
	"github.com/chorus-robotics/chorus/runtime/room"
	"github.com/chorus-robotics/chorus/runtime/topic"
)

// RealtimeRoom is the realtime benchmark's room: the seed's 13 players,
// and one more identity for the client that never reads.
const (
	RealtimeRoom    = "rtbench"
	RealtimePlayers = 13
)

func realtimeIDs() []string {
	ids := make([]string, RealtimePlayers+1)
	for i := range ids {
		ids[i] = fmt.Sprintf("p%02d", i)
	}
	return ids
}

// rateLimit is the realtime benchmark floor's rate_limit.
const rateLimit = 5 * time.Millisecond

// RealtimeCase is one run of the realtime benchmark.
type RealtimeCase struct {
	URL   string
	Rate  float64 // posts a second, from all players together
	Posts int
	// SlowReader adds a client subscribed to the room's broadcasts that
	// never reads its socket (its TCP receive buffer is never drained).
	SlowReader bool
	// Silence is the phase's silence_timeout; the run ends with it, and
	// TimerLate says how late the floor's end came.
	Silence time.Duration
}

// RealtimeResult is what one run measured.
type RealtimeResult struct {
	Latencies []time.Duration // each accepted post: its send time → the broadcast at every player
	First     []time.Duration // the same, to the first player that had it
	// Refused is how many posts the floor refused, Refusals how many for
	// each reason. On an idle machine none is: at 400 posts a second a
	// player posts every 32.5 ms, far from the 5 ms rate limit. A stall on
	// the way to the floor (a loaded machine) can bring two posts of a
	// player to it closer than that, and the floor refuses the second.
	Refused  int
	Refusals map[string]int
	// Unexplained lists the refusals the floor's limits cannot explain
	// (none from a correct floor): a reason other than rate_limited, or a
	// post sent rate_limit or more after its player had the answer to its
	// previous accepted post (the floor accepted that one before it
	// answered, and judged this one after it was sent).
	Unexplained []string
	// TimerLate is the silence end's arrival at the first player, minus
	// the last accepted post's send, minus Silence. The floor counts the
	// silence from its last acceptance, which comes after that send, so
	// a floor that keeps its silence never gives less than 0: the
	// figure is how late the end came plus the post's trip to the floor
	// and the end's trip back (an upper bound of the lateness).
	TimerLate time.Duration
	// EndAfterBroadcast is the silence end's arrival at the first player
	// minus the arrival there of the last broadcast, which the floor
	// publishes at the acceptance the silence counts from: Silence plus
	// the lateness and the end's trip, less the broadcast's trip. A
	// broadcast delivered late makes it less than Silence, so it bounds
	// the end from above only.
	EndAfterBroadcast time.Duration
}

// DefaultRealtimeSilence is the silence the realtime benchmark ends a
// phase on.
const DefaultRealtimeSilence = time.Second

// Realtime runs a realtime floor and RealtimePlayers players, each on its
// own connection, opens a phase and sends c.Posts posts at c.Rate (open
// loop: a post's clock starts when it is due, so a stall shows as
// latency), round robin over the players. The floor enforces generous
// limits (a 5 ms rate limit, no quota in reach, overlap true: a text
// room, as the aiwolf server it is compared with).
func Realtime(ctx context.Context, c RealtimeCase) (RealtimeResult, error) {
	var res RealtimeResult
	if c.Silence <= 0 {
		c.Silence = DefaultRealtimeSilence
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	scheme := topic.New("")
	run := strconv.FormatInt(time.Now().UnixNano(), 36)
	dial := func(user string) (*bus.MQTT, error) {
		return bus.Dial(ctx, bus.Options{Broker: c.URL, ClientID: user + "-" + run, Username: user})
	}
	ids := realtimeIDs()
	players, slowID := ids[:RealtimePlayers], ids[RealtimePlayers]

	fb, err := dial(topic.DefaultFloorID)
	if err != nil {
		return res, err
	}
	defer fb.Close()
	fr := room.New(fb, scheme, RealtimeRoom, nil, nil)
	fr.SetMembers(players)
	f, err := realtime.NewFloor(realtime.FloorConfig{Room: fr, Members: players, ID: topic.DefaultFloorID,
		Limits: realtime.Limits{PhaseTimeout: time.Hour, SilenceTimeout: c.Silence, RateLimit: rateLimit,
			PerAgent: 1 << 30, PerDay: 1 << 30, PerTalk: 200, Overlap: true}})
	if err != nil {
		return res, err
	}
	floorDone := make(chan error, 1)
	go func() { floorDone <- f.Run(ctx) }()
	defer func() { cancel(); <-floorDone }()

	if c.SlowReader {
		conn, err := stalledSubscriber(c.URL, slowID+"-"+run, slowID, scheme.Message(RealtimeRoom, "+"))
		if err != nil {
			return res, err
		}
		defer conn.Close()
	}

	type seen struct {
		count       int
		first, last time.Time
	}
	var mu sync.Mutex
	got := map[string]*seen{} // by text: when every player had it
	var phaseID string
	var ended time.Time
	var lastSeen time.Time // the last broadcast at the first player
	started := make(chan struct{})
	finished := make(chan struct{})
	var acks sync.WaitGroup
	// Each post by its id; each player's posts in the order sent.
	type post struct {
		text      string
		due, sent time.Time // when it was due, when its publish began
		answered  time.Time
		ack       protocol.PostAck
	}
	posts := map[string]*post{}
	byPlayer := make([][]*post, len(players))
	var conns []*bus.MQTT
	defer func() {
		for _, b := range conns {
			b.Close()
		}
	}()
	for _, id := range players {
		b, err := dial(id)
		if err != nil {
			return res, err
		}
		conns = append(conns, b)
		r := room.New(b, scheme, RealtimeRoom, nil, nil)
		r.SetMembers(players)
		first := id == players[0]
		if err := r.OnMessage(ctx, func(m protocol.Message) {
			now := time.Now()
			if m.Params.From != topic.DefaultFloorID {
				return
			}
			mu.Lock()
			defer mu.Unlock()
			s := got[m.Params.Message]
			if s == nil {
				s = &seen{}
				got[m.Params.Message] = s
			}
			s.count++
			if s.first.IsZero() {
				s.first = now
			}
			s.last = now
			// The end is timed at the first player: so is the last
			// broadcast, on the same connection (another player's
			// socket may have been served later).
			if first && now.After(lastSeen) {
				lastSeen = now
			}
		}); err != nil {
			return res, err
		}
		if err := r.OnPhase(ctx, "", func(p protocol.Phase) {
			if !first {
				return
			}
			mu.Lock()
			defer mu.Unlock()
			switch {
			case p.Event == protocol.PhaseStart && phaseID == "":
				phaseID = p.Phase
				close(started)
			case p.Event == protocol.PhaseEnd && p.Phase == phaseID && ended.IsZero():
				ended = time.Now()
				close(finished)
			}
		}); err != nil {
			return res, err
		}
		if err := r.OnAcks(ctx, "", id, func(_ string, a protocol.PostAck) {
			now := time.Now()
			mu.Lock()
			defer mu.Unlock()
			p := posts[a.PostID]
			if p == nil || !p.answered.IsZero() {
				return // not ours, or a copy (QoS 1)
			}
			p.answered, p.ack = now, a
			acks.Done()
		}); err != nil {
			return res, err
		}
	}
	time.Sleep(200 * time.Millisecond) // every subscription is in place
	if err := f.Start(ctx); err != nil {
		return res, err
	}
	select {
	case <-started:
	case <-time.After(5 * time.Second):
		return res, errors.New("realtime bench: the phase start never arrived")
	}

	// Each player publishes from its own goroutine, so one player's
	// publish never delays another's.
	type due struct {
		text string
		at   time.Time
	}
	queues := make([]chan due, len(players))
	var wg sync.WaitGroup
	errs := make(chan error, len(players))
	for i, id := range players {
		queues[i] = make(chan due, c.Posts)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for d := range queues[i] {
				pid := protocol.NewID()
				b, _ := json.Marshal(protocol.Post{From: id, Phase: phaseID, ID: pid, Text: d.text})
				mu.Lock()
				p := &post{text: d.text, due: d.at, sent: time.Now()}
				posts[pid] = p
				byPlayer[i] = append(byPlayer[i], p)
				mu.Unlock()
				if err := conns[i].Publish(ctx, scheme.PostIn(RealtimeRoom, "", id), b, false); err != nil {
					errs <- fmt.Errorf("realtime bench: %s posts: %w", id, err)
					return
				}
			}
		}()
	}
	every := time.Duration(float64(time.Second) / c.Rate)
	begin := time.Now()
	acks.Add(c.Posts)
	for n := range c.Posts {
		at := begin.Add(time.Duration(n) * every)
		time.Sleep(time.Until(at))
		text := "post " + strconv.Itoa(n)
		queues[n%len(players)] <- due{text: text, at: at}
	}
	for _, q := range queues {
		close(q)
	}
	wg.Wait()
	select {
	case err := <-errs:
		return res, err
	default:
	}
	waited := make(chan struct{})
	go func() { acks.Wait(); close(waited) }()
	select {
	case <-waited:
	case <-time.After(10 * time.Second):
		return res, errors.New("realtime bench: posts unanswered after 10 s")
	}
	select {
	case <-finished:
	case <-time.After(c.Silence + 10*time.Second):
		return res, errors.New("realtime bench: the silence end never arrived")
	}
	// The end is timed at the first player; the others may still be
	// working through their broadcasts: wait until every accepted post
	// is at every player.
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		mu.Lock()
		all := true
		for _, p := range posts {
			if s := got[p.text]; p.ack.Accepted && (s == nil || s.count < len(players)) {
				all = false
				break
			}
		}
		mu.Unlock()
		if all || time.Now().After(deadline) {
			break
		}
	}
	mu.Lock()
	defer mu.Unlock()
	res.Refusals = map[string]int{}
	var lastPost time.Time // the last accepted post's send
	for _, p := range posts {
		s := got[p.text]
		if !p.ack.Accepted {
			if s != nil {
				return res, fmt.Errorf("realtime bench: %q was refused (%s) and broadcast", p.text, p.ack.Reason)
			}
			res.Refused++
			res.Refusals[p.ack.Reason]++
			continue
		}
		if s == nil {
			return res, fmt.Errorf("realtime bench: %q reached no player", p.text)
		}
		if s.count < len(players) {
			return res, fmt.Errorf("realtime bench: %q reached %d of %d players", p.text, s.count, len(players))
		}
		if p.sent.After(lastPost) {
			lastPost = p.sent
		}
		res.Latencies = append(res.Latencies, s.last.Sub(p.due))
		res.First = append(res.First, s.first.Sub(p.due))
	}
	for _, ps := range byPlayer {
		var prev *post // the player's last accepted post
		for _, p := range ps {
			switch {
			case p.ack.Accepted:
				prev = p
			case p.ack.Reason != protocol.RejectRateLimited:
				res.Unexplained = append(res.Unexplained, fmt.Sprintf("%q refused: %s", p.text, p.ack.Reason))
			case prev == nil:
				res.Unexplained = append(res.Unexplained, fmt.Sprintf("%q refused as rate limited, no post of its player accepted before it", p.text))
			case p.sent.Sub(prev.answered) >= rateLimit:
				res.Unexplained = append(res.Unexplained, fmt.Sprintf("%q refused as rate limited, sent %v after the answer to %q", p.text, p.sent.Sub(prev.answered), prev.text))
			}
		}
	}
	res.TimerLate = ended.Sub(lastPost) - c.Silence
	res.EndAfterBroadcast = ended.Sub(lastSeen)
	return res, nil
}

// stalledSubscriber connects to the broker at rawURL as user, subscribes
// to filter at QoS 1 and then never reads: the broker's writes fill the
// socket's small receive buffer and stay there, and nothing is acked.
func stalledSubscriber(rawURL, clientID, user, filter string) (net.Conn, error) {
	u, err := url.Parse(rawURL)
	if err != nil || u.Scheme != "tcp" {
		return nil, fmt.Errorf("slow reader: broker %q: want tcp://host:port", rawURL)
	}
	conn, err := net.DialTimeout("tcp", u.Host, 5*time.Second)
	if err != nil {
		return nil, fmt.Errorf("slow reader: %w", err)
	}
	if tc, ok := conn.(*net.TCPConn); ok {
		tc.SetReadBuffer(4096)
	}
	cp := packets.NewControlPacket(packets.Connect).(*packets.ConnectPacket)
	cp.ProtocolName, cp.ProtocolVersion, cp.CleanSession = "MQTT", 4, true
	cp.ClientIdentifier, cp.UsernameFlag, cp.Username = clientID, true, user
	sp := packets.NewControlPacket(packets.Subscribe).(*packets.SubscribePacket)
	sp.MessageID, sp.Topics, sp.Qoss = 1, []string{filter}, []byte{1}
	conn.SetWriteDeadline(time.Now().Add(5 * time.Second))
	if err := cp.Write(conn); err != nil {
		conn.Close()
		return nil, fmt.Errorf("slow reader: connect: %w", err)
	}
	if err := sp.Write(conn); err != nil {
		conn.Close()
		return nil, fmt.Errorf("slow reader: subscribe: %w", err)
	}
	return conn, nil
}

// RawFanout is the baseline of Realtime: plain paho clients, one
// publisher sending posts payloads at rate (open loop) straight to the
// broadcast topic, and subscribers of it; each message is timed from its
// due time until the last subscriber has it. No floor, no JSON.
func RawFanout(ctx context.Context, url string, subscribers int, rate float64, n int) ([]time.Duration, error) {
	run := strconv.FormatInt(time.Now().UnixNano(), 36)
	ids := realtimeIDs()
	t := topic.New("").Message(RealtimeRoom, topic.DefaultFloorID)
	dial := func(user, id string) (paho.Client, error) {
		c := paho.NewClient(paho.NewClientOptions().AddBroker(url).SetClientID(id + run).SetUsername(user).SetProtocolVersion(4).SetOrderMatters(true))
		tok := c.Connect()
		tok.Wait()
		return c, tok.Error()
	}
	pub, err := dial(topic.DefaultFloorID, "raw-floor")
	if err != nil {
		return nil, err
	}
	defer pub.Disconnect(100)
	var mu sync.Mutex
	count := make([]int, n)
	last := make([]time.Time, n)
	for i := range subscribers {
		c, err := dial(ids[i%len(ids)], fmt.Sprintf("raw-sub-%d", i))
		if err != nil {
			return nil, err
		}
		defer c.Disconnect(100)
		tok := c.Subscribe(t, 1, func(_ paho.Client, m paho.Message) {
			now := time.Now()
			k, err := strconv.Atoi(string(m.Payload()))
			if err != nil || k < 0 || k >= n {
				return
			}
			mu.Lock()
			count[k]++
			last[k] = now
			mu.Unlock()
		})
		if tok.Wait(); tok.Error() != nil {
			return nil, tok.Error()
		}
	}
	every := time.Duration(float64(time.Second) / rate)
	begin := time.Now()
	for k := range n {
		time.Sleep(time.Until(begin.Add(time.Duration(k) * every)))
		pub.Publish(t, 1, false, []byte(strconv.Itoa(k)))
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		mu.Lock()
		done := true
		for _, c := range count {
			done = done && c >= subscribers
		}
		mu.Unlock()
		if done {
			break
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return nil, errors.New("raw fan-out: messages lost")
		}
		time.Sleep(10 * time.Millisecond)
	}
	out := make([]time.Duration, n)
	for k := range n {
		out[k] = last[k].Sub(begin.Add(time.Duration(k) * every))
	}
	return out, nil
}
