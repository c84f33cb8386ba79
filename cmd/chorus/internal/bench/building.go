package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/chorus-robotics/chorus/cmd/chorus/internal/localroom"
	"github.com/chorus-robotics/chorus/cmd/chorus/internal/timeline"
	"github.com/chorus-robotics/chorus/device/robot"
	"github.com/chorus-robotics/chorus/runtime/bus"
	"github.com/chorus-robotics/chorus/runtime/protocol"
	"github.com/chorus-robotics/chorus/runtime/room"
)

// BuildingOptions are a building of rooms on one broker (issue 31, item
// 4): one step per room count, each room a floor and Companions
// companions with rule brains and tone voices, a person in each room
// starting Turns conversations (or as many as Duration allows).
type BuildingOptions struct {
	Broker  string   // the broker's URL, tcp://host:port
	Brokers []string // the cluster's other nodes (mqtt.brokers)
	QoS     int      // mqtt.qos, 0 or 1 (0 on NATS)
	// Spread, with Brokers, gives the rooms the cluster's nodes in turn:
	// room k's connections use endpoint k-1 (mod the endpoints) first and
	// the others after it. Without it every connection uses Broker first.
	Spread     bool
	Rooms      []int // room counts, one step each
	Companions int   // companions in each room
	Turns      int   // person messages per room and step, when Duration is 0
	// Duration, when set, is how long each room keeps starting person
	// turns (a turn that started is finished).
	Duration time.Duration
	// BrokerPIDs are the broker's processes (one, or a cluster's nodes on
	// this machine): their CPU over each step is read from /proc.
	BrokerPIDs []int
}

// BuildingRow is what one step measured.
type BuildingRow struct {
	Rooms  int
	Grants []time.Duration // a person's Message → its grant, at the person's connection
	// Votes and Floors split each grant at the person's connection:
	// the Message → the last companion's vote on it (the Message's way to
	// the companions and their votes' way back), and that vote → the
	// grant (the floor's decision and the grant's way out).
	Votes, Floors []time.Duration
	// RoomP99 is each room's own grant p99, over its turns alone: a
	// room's p99 from as many grants as one room gives (the step's p99 is
	// over R times more, so it reaches further into the tail).
	RoomP99  []time.Duration
	Gaps     []time.Duration // silences between robots: one's audio end → the next one's start
	Overlaps int             // gaps below zero: two robots at once
	Wall     time.Duration   // the step, from the first person turn to the last rest
	// BrokerCPU is the broker processes' user and system time over the
	// step, -1 without BrokerPIDs; BenchCPU is this process's.
	BrokerCPU, BenchCPU time.Duration
	Messages            int64 // what the observers received during the step
}

// buildingLines are what the rule brains say of themselves: short, so
// that a tone voice (60 ms a character) says a line in a second or two.
const buildingLines = `["I like tea.", "The sun is out.", "I sang today.", "Cats are nice.", "I read a book."]`

// buildingCompanion is a companion of a building's room: %[1]s its id,
// %[2]s the room, %[3]s the members, %[4]s the mqtt section's endpoints
// and qos. closing_after 1: after the answer to the person, one more
// robot says it is late and one says thank you, then the room rests.
const buildingCompanion = `version: 1
device: {id: %[1]s-body}
room: {name: %[2]s, members: [%[3]s], pause: 200ms}
mqtt: {broker: "tcp://127.0.0.1:1"%[4]s}
companion: {id: %[1]s, name: %[1]s, language: en, sample_lines: ` + buildingLines + `}
brain: {provider: rule, closing_after: 1}
drivers: {audio: {kind: null, paced: true}, tts: {kind: tone}}
http: {listen: "off"}
`

// buildingFloor is the floor device of a building's room.
const buildingFloor = `version: 1
device: {id: %[1]s-floor}
room: {name: %[1]s, members: [%[2]s], floor: true}
mqtt: {broker: "tcp://127.0.0.1:1"%[3]s}
drivers: {audio: {kind: null}, tts: {kind: tone}}
http: {listen: "off"}
`

// buildingPerson is the person who speaks in every room, and the words.
const (
	buildingPerson = "person"
	buildingSay    = "Hello everyone, what shall we do today?"
)

// Building runs one step per room count in o.Rooms, writes a row for
// each to w as it ends, and returns the rows.
func Building(ctx context.Context, w io.Writer, o BuildingOptions) ([]BuildingRow, error) {
	if err := o.check(); err != nil {
		return nil, err
	}
	length := fmt.Sprintf("%d person turns per room", o.Turns)
	if o.Duration > 0 {
		length = fmt.Sprintf("person turns for %v per room", o.Duration)
	}
	fmt.Fprintf(w, "building: rooms × %d companions (rule brains, tone voices, paced audio), broker %s, qos %d, %s\n",
		o.Companions, strings.Join(append([]string{o.Broker}, o.Brokers...), ","), o.QoS, length)
	if len(o.BrokerPIDs) > 0 {
		const idle = 3 * time.Second
		cpu, err := cpuOver(ctx, o.BrokerPIDs, idle)
		if err != nil {
			return nil, err
		}
		fmt.Fprintf(w, "  the broker with no room, over %v: %.1f%% of one core\n", idle, 100*cpu.Seconds()/idle.Seconds())
	}
	fmt.Fprintf(w, "  %5s %6s %9s %9s %9s %17s %10s %15s %15s %8s %9s %9s %8s %11s %9s %7s %6s\n", "rooms", "grants", "grant p50", "grant p99",
		"p99 ratio", "room p99 med/max", "room ratio", "votes p50/p99", "floor p50/p99", "silences", "sil. p50", "sil. p99", "overlaps", "broker/room", "bench cpu", "msgs/s", "step")
	var rows []BuildingRow
	for _, n := range o.Rooms {
		row, err := buildingStep(ctx, o, n)
		if err != nil {
			return rows, fmt.Errorf("building, %d rooms: %w", n, err)
		}
		rows = append(rows, row)
		g, s, v, f := Summarize(row.Grants), Summarize(row.Gaps), Summarize(row.Votes), Summarize(row.Floors)
		ratio := float64(g.P99) / float64(Summarize(rows[0].Grants).P99)
		rp := Summarize(row.RoomP99)
		roomRatio := float64(rp.P50) / float64(Summarize(rows[0].RoomP99).P50)
		broker := "-"
		if row.BrokerCPU >= 0 {
			broker = fmt.Sprintf("%.1f%%", 100*row.BrokerCPU.Seconds()/row.Wall.Seconds()/float64(n))
		}
		fmt.Fprintf(w, "  %5d %6d %9s %9s %8.2f× %17s %9.2f× %15s %15s %8d %9s %9s %8d %11s %8.1f%% %7.0f %5.0fs\n", n, g.N, ms(g.P50), ms(g.P99), ratio,
			ms(rp.P50)+"/"+ms(rp.Max), roomRatio, ms(v.P50)+"/"+ms(v.P99), ms(f.P50)+"/"+ms(f.P99), s.N, ms(s.P50), ms(s.P99), row.Overlaps, broker, 100*row.BenchCPU.Seconds()/row.Wall.Seconds(),
			float64(row.Messages)/row.Wall.Seconds(), row.Wall.Seconds())
	}
	fmt.Fprintf(w, "  p99 ratio: the grant p99 ÷ the grant p99 at %[1]d room(s); room p99: each room's own grant p99 (over its turns alone), the median room's and the worst room's; room ratio: the median room's p99 ÷ that at %[1]d room(s); votes: the Message → the last companion's vote on it, floor: that vote → the grant, both at the person's connection; broker/room: the broker processes' CPU ÷ wall time ÷ rooms, %% of one core; bench cpu: this process, %% of one core; msgs/s: what an observer per room subscribed to each of the room's topics by name received; step: the step's wall time, from its first person turn to its last room's rest\n", o.Rooms[0])
	return rows, nil
}

func (o BuildingOptions) check() error {
	switch {
	case o.Broker == "":
		return errors.New("building: no broker")
	case len(o.Rooms) == 0:
		return errors.New("building: no room counts")
	case o.Companions < 2 || o.Companions > 20:
		return fmt.Errorf("building: want 2 to 20 companions a room, got %d", o.Companions)
	case o.Turns < 1 && o.Duration <= 0:
		return errors.New("building: want a number of turns or a duration")
	case o.QoS != 0 && o.QoS != 1:
		return fmt.Errorf("building: qos must be 0 or 1, got %d", o.QoS)
	}
	for _, n := range o.Rooms {
		if n < 1 || n > 99 {
			return fmt.Errorf("building: want 1 to 99 rooms, got %d", n)
		}
	}
	return nil
}

func ms(d time.Duration) string { return fmt.Sprintf("%.1fms", float64(d.Microseconds())/1000) }

// buildingRoom is one room of a step, with the person's view of it.
type buildingRoom struct {
	name   string
	person *room.Room
	grants chan grantAt
	rec    *timeline.Recorder
	votes  lastVote
}

// lastVote is when the person's connection last received a companion's
// vote (State) on the Message the person is waiting on.
type lastVote struct {
	mu sync.Mutex
	id string // the Message
	at time.Time
}

func (v *lastVote) wait(id string) {
	v.mu.Lock()
	v.id, v.at = id, time.Time{}
	v.mu.Unlock()
}

func (v *lastVote) saw(id string, at time.Time) {
	v.mu.Lock()
	if id == v.id {
		v.at = at
	}
	v.mu.Unlock()
}

func (v *lastVote) last() time.Time {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.at
}

// grantAt is a grant as the person's connection received it.
type grantAt struct {
	g  protocol.TurnGrant
	at time.Time
}

// buildingStep starts n rooms, lets each room's person start its turns,
// and measures them.
func buildingStep(ctx context.Context, o BuildingOptions, n int) (BuildingRow, error) {
	row := BuildingRow{Rooms: n}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var closers []func()
	defer func() {
		for i := len(closers) - 1; i >= 0; i-- {
			closers[i]()
		}
	}()
	var seen atomic.Int64
	rooms := make([]*buildingRoom, n)
	for i := range rooms {
		br, closeRoom, err := startBuildingRoom(ctx, o, i+1, &seen)
		if closeRoom != nil {
			closers = append(closers, closeRoom)
		}
		if err != nil {
			return row, err
		}
		rooms[i] = br
	}
	time.Sleep(200 * time.Millisecond) // the observers' retained messages are in
	brokerBefore, err := cpuOf(o.BrokerPIDs)
	if err != nil {
		return row, err
	}
	benchBefore, err := cpuOf([]int{os.Getpid()})
	if err != nil {
		return row, err
	}
	seenBefore, start := seen.Load(), time.Now()

	results := make([]roomTurns, n)
	g, gctx := errgroup.WithContext(ctx)
	for i, br := range rooms {
		g.Go(func() error {
			// The rooms start a second apart in all, not in step.
			stagger := time.Duration(i) * time.Second / time.Duration(n)
			var err error
			results[i], err = br.run(gctx, o, stagger, start)
			return err
		})
	}
	if err := g.Wait(); err != nil {
		return row, err
	}

	row.Wall = time.Since(start)
	row.Messages = seen.Load() - seenBefore
	brokerAfter, err := cpuOf(o.BrokerPIDs)
	if err != nil {
		return row, err
	}
	benchAfter, err := cpuOf([]int{os.Getpid()})
	if err != nil {
		return row, err
	}
	row.BrokerCPU, row.BenchCPU = brokerAfter-brokerBefore, benchAfter-benchBefore
	if len(o.BrokerPIDs) == 0 {
		row.BrokerCPU = -1
	}
	for _, r := range results {
		row.Grants = append(row.Grants, r.grants...)
		row.RoomP99 = append(row.RoomP99, Summarize(r.grants).P99)
		row.Votes = append(row.Votes, r.votes...)
		row.Floors = append(row.Floors, r.floors...)
		row.Gaps = append(row.Gaps, r.gaps...)
	}
	row.Overlaps = timeline.Overlaps(row.Gaps)
	return row, nil
}

// startBuildingRoom starts room number k of a step on o's broker: its
// floor and companions (each on its own connections), the person's
// connection and the room's observer, which adds what it receives to
// seen. The returned func closes what was started, also on an error.
func startBuildingRoom(ctx context.Context, o BuildingOptions, k int, seen *atomic.Int64) (*buildingRoom, func(), error) {
	name := fmt.Sprintf("room-%02d", k)
	ids := make([]string, o.Companions)
	for i := range ids {
		ids[i] = fmt.Sprintf("r%02d-c%d", k, i+1)
	}
	first, others := o.endpoints(k)
	mqtt := fmt.Sprintf(", qos: %d", o.QoS)
	if len(others) > 0 {
		mqtt += fmt.Sprintf(", brokers: [%s]", quoteAll(others))
	}
	members := strings.Join(ids, ", ")
	docs := []string{fmt.Sprintf(buildingFloor, name, members, mqtt)}
	for _, id := range ids {
		docs = append(docs, fmt.Sprintf(buildingCompanion, id, name, members, mqtt))
	}
	var cfgs []*robot.Config
	for _, y := range docs {
		cfg, err := robot.Decode(strings.NewReader(y))
		if err != nil {
			return nil, nil, fmt.Errorf("%s: config: %w", name, err)
		}
		cfgs = append(cfgs, cfg)
	}
	lr, err := localroom.Start(ctx, cfgs, localroom.Options{Broker: first, Quiet: true})
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", name, err)
	}
	closers := []func(){lr.Close}
	closeAll := func() {
		for i := len(closers) - 1; i >= 0; i-- {
			closers[i]()
		}
	}
	dial := func(user string) (*bus.MQTT, error) {
		b, err := bus.Dial(ctx, bus.Options{Broker: first, Brokers: others, ClientID: user + "-" + protocol.NewID()[:8],
			Username: user, QoS: bus.QoS(byte(o.QoS))})
		if err != nil {
			return nil, fmt.Errorf("%s: %s's connection: %w", name, user, err)
		}
		closers = append(closers, func() { b.Close() })
		return b, nil
	}

	pb, err := dial(buildingPerson)
	if err != nil {
		return nil, closeAll, err
	}
	br := &buildingRoom{name: name, person: room.New(pb, lr.Scheme, name, nil, nil), grants: make(chan grantAt, 64)}
	err = br.person.OnGrant(ctx, func(g protocol.TurnGrant) {
		select { // a bus handler never blocks
		case br.grants <- grantAt{g, time.Now()}:
		default:
		}
	})
	if err != nil {
		return nil, closeAll, fmt.Errorf("%s: grants: %w", name, err)
	}
	err = br.person.OnState(ctx, func(s protocol.State) { br.votes.saw(s.Params.MessageID, time.Now()) })
	if err != nil {
		return nil, closeAll, fmt.Errorf("%s: votes: %w", name, err)
	}
	if br.rec, err = timeline.Follow(ctx, br.person); err != nil {
		return nil, closeAll, fmt.Errorf("%s: speaking statuses: %w", name, err)
	}

	// The observer: every topic the room's devices and person publish on,
	// each by its name (no wildcard).
	ob, err := dial("observer")
	if err != nil {
		return nil, closeAll, err
	}
	s := lr.Scheme
	topics := []string{s.Turns(name), s.FloorLeader(name), s.Message(name, buildingPerson), s.Probe(name + "-floor")}
	for _, id := range ids {
		dev := id + "-body"
		topics = append(topics, s.Message(name, id), s.State(name, id), s.Speaking(name, id), s.Presence(name, id),
			s.Queries(dev), s.Results(dev), s.Probe(dev))
	}
	for _, t := range topics {
		if err := ob.Subscribe(ctx, t, func(string, []byte) { seen.Add(1) }); err != nil {
			return nil, closeAll, fmt.Errorf("%s: observer: %s: %w", name, t, err)
		}
	}
	return br, closeAll, nil
}

// endpoints are room k's broker and its fallbacks (mqtt.broker and
// mqtt.brokers): o.Broker and o.Brokers, or with o.Spread the same
// endpoints turned to start at number k-1.
func (o BuildingOptions) endpoints(k int) (string, []string) {
	all := append([]string{o.Broker}, o.Brokers...)
	if o.Spread {
		i := (k - 1) % len(all)
		all = append(all[i:len(all):len(all)], all[:i]...)
	}
	return all[0], all[1:]
}

func quoteAll(ss []string) string {
	q := make([]string, len(ss))
	for i, s := range ss {
		q[i] = strconv.Quote(s)
	}
	return strings.Join(q, ", ")
}

// roomTurns is what one room measured in a step.
type roomTurns struct {
	grants, votes, floors, gaps []time.Duration
}

// run is the person's part in room r: after stagger, send a Message,
// time its grant, wait for the robots' conversation to end (a grant
// naming nobody) and their voices to stop; again, for o.Turns turns or
// until o.Duration has passed since start. The silences are those
// between the robots' utterances within each turn.
func (r *buildingRoom) run(ctx context.Context, o BuildingOptions, stagger time.Duration, start time.Time) (roomTurns, error) {
	var res roomTurns
	select {
	case <-time.After(stagger):
	case <-ctx.Done():
		return res, ctx.Err()
	}
	var sends []time.Time
	more := func(k int) bool {
		if o.Duration > 0 {
			return k == 0 || time.Since(start) < o.Duration
		}
		return k < o.Turns
	}
	for k := 0; more(k); k++ {
		id := protocol.NewID()
		r.votes.wait(id)
		sent := time.Now()
		sends = append(sends, sent)
		if err := r.person.SendMessage(ctx, protocol.NewMessage(id, buildingPerson, nil, buildingSay, "")); err != nil {
			return res, fmt.Errorf("%s: turn %d: %w", r.name, k, err)
		}
		g, err := r.nextGrant(ctx, 10*time.Second, func(g protocol.TurnGrant) bool { return g.MessageID == id })
		if err != nil {
			return res, fmt.Errorf("%s: turn %d: the person's grant: %w", r.name, k, err)
		}
		res.grants = append(res.grants, g.at.Sub(sent))
		if v := r.votes.last(); !v.IsZero() && !v.After(g.at) {
			res.votes = append(res.votes, v.Sub(sent))
			res.floors = append(res.floors, g.at.Sub(v))
		}
		if g.g.Speaker != nil {
			if _, err := r.nextGrant(ctx, time.Minute, func(g protocol.TurnGrant) bool { return g.Speaker == nil }); err != nil {
				return res, fmt.Errorf("%s: turn %d: the room's rest: %w", r.name, k, err)
			}
		}
		if err := r.rec.Quiet(ctx, 15*time.Second); err != nil {
			return res, fmt.Errorf("%s: turn %d: %w", r.name, k, err)
		}
	}
	us := r.rec.Utterances()
	for k, from := range sends {
		var turn []timeline.Utterance
		for _, u := range us {
			if !u.Start.Before(from) && (k == len(sends)-1 || u.Start.Before(sends[k+1])) {
				turn = append(turn, u)
			}
		}
		res.gaps = append(res.gaps, timeline.Gaps(turn)...)
	}
	return res, nil
}

// nextGrant waits up to within for the next grant that matches, and
// drops the others.
func (r *buildingRoom) nextGrant(ctx context.Context, within time.Duration, match func(protocol.TurnGrant) bool) (grantAt, error) {
	deadline := time.NewTimer(within)
	defer deadline.Stop()
	for {
		select {
		case g := <-r.grants:
			if match(g.g) {
				return g, nil
			}
		case <-deadline.C:
			return grantAt{}, fmt.Errorf("none within %v", within)
		case <-ctx.Done():
			return grantAt{}, ctx.Err()
		}
	}
}

// cpuOver is the CPU the processes pids use over the next d: what a
// broker spends with no room, beside which a room's share is read (a
// NATS cluster keeps its JetStream busy).
func cpuOver(ctx context.Context, pids []int, d time.Duration) (time.Duration, error) {
	before, err := cpuOf(pids)
	if err != nil {
		return 0, err
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
		return 0, ctx.Err()
	}
	after, err := cpuOf(pids)
	return after - before, err
}

// clockTick is the unit of /proc/<pid>/stat's times (USER_HZ, 100 on
// Linux whatever the kernel's HZ).
const clockTick = 10 * time.Millisecond

// cpuOf is the user and system time the processes pids have used so far.
func cpuOf(pids []int) (time.Duration, error) {
	var sum time.Duration
	for _, pid := range pids {
		path := fmt.Sprintf("/proc/%d/stat", pid)
		b, err := os.ReadFile(path)
		if err != nil {
			return 0, fmt.Errorf("cpu of process %d: %w", pid, err)
		}
		// The command's name, in parentheses, may hold spaces: the fields
		// that follow it start at the third (state); utime and stime are
		// the 14th and 15th.
		s := string(b)
		f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
		if len(f) < 13 {
			return 0, fmt.Errorf("cpu of process %d: %s: %d fields after the name, want 13 or more", pid, path, len(f))
		}
		for _, v := range f[11:13] {
			t, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				return 0, fmt.Errorf("cpu of process %d: %s: %w", pid, path, err)
			}
			sum += time.Duration(t) * clockTick
		}
	}
	return sum, nil
}
