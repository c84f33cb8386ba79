package system

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chorus-robotics/chorus/runtime/bus/bustest"
	"github.com/chorus-robotics/chorus/runtime/protocol"
)

// junkLines are malformed payloads of every kind a receiver must refuse:
// not JSON, wrong types, unknown fields, missing fields, bad enums, a
// "from" that is not the topic's identity. Each is one line for
// mosquitto_pub -l.
var junkLines = []string{
	`{"jsonrpc":"2.0","method":"message.send","params":`,
	`not json at all`,
	`{"jsonrpc":"2.0","method":"message.send","params":{"id":5,"from":"user","to":[],"message":7}}`,
	`{"jsonrpc":"2.0","method":"message.send","params":{"id":"x","from":"user","message":"hi","extra":true}}`,
	`{"jsonrpc":"2.0","method":"message.send","params":{"id":"","from":"user","message":""}}`,
	`{"jsonrpc":"2.0","method":"message.send","params":{"id":"x","from":"ann","message":"I am not ann"}}`,
	`[1,2,3]`,
	`{"jsonrpc":"1.0","method":"nope"}`,
	`{"jsonrpc":"2.0","method":"query.send","id":7,"params":{"from":"user","type":["vision"]}}`,
	`{"jsonrpc":"2.0","method":"query.send","id":"q","params":{"from":"user","type":"vision"}} trailing`,
}

// flooder publishes a file of lines with mosquitto_pub -l, over and over,
// until stopped, and counts what it sent.
type flooder struct {
	sent    atomic.Int64
	stop    chan struct{}
	once    sync.Once
	wg      sync.WaitGroup
	started time.Time
	elapsed time.Duration
	err     error // why it stopped before it was halted (read after halt)
}

// newFlooder returns a flooder that t's end halts too: a test that fails
// before it halts its floods leaves no mosquitto_pub running (a failed
// CI run left three flooding a dead port).
func (o *outside) newFlooder() *flooder {
	f := &flooder{stop: make(chan struct{}), started: time.Now()}
	o.t.Cleanup(f.halt)
	return f
}

// flood runs one mosquitto_pub -l as user at qos on topic and writes it
// perSecond of lines a second, cycling through lines, until halted.
func (o *outside) flood(user string, qos, perSecond int, topic string, lines []string) *flooder {
	f := o.newFlooder()
	cmd := exec.Command("mosquitto_pub", "-h", "127.0.0.1", "-p", strconv.Itoa(o.mq.Port()), "-u", user, "-P", password(user),
		"-q", strconv.Itoa(qos), "-t", topic, "-l")
	in, err := cmd.StdinPipe()
	if err != nil {
		o.t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		o.t.Fatalf("mosquitto_pub: %v", err)
	}
	const tick = 10 * time.Millisecond
	var batch strings.Builder
	for i := range perSecond / int(time.Second/tick) {
		batch.WriteString(lines[i%len(lines)])
		batch.WriteByte('\n')
	}
	n := int64(perSecond / int(time.Second/tick))
	f.wg.Add(1)
	go func() {
		defer f.wg.Done()
		defer func() { in.Close(); cmd.Process.Kill(); cmd.Wait() }()
		next := time.Now()
		for {
			select {
			case <-f.stop:
				return
			default:
			}
			if _, err := io.WriteString(in, batch.String()); err != nil {
				select {
				case <-f.stop:
				default:
					f.err = fmt.Errorf("mosquitto_pub stopped reading: %w", err)
				}
				return
			}
			f.sent.Add(n)
			next = next.Add(tick)
			time.Sleep(time.Until(next))
		}
	}()
	return f
}

// bigFlood publishes a payload file of about 1 MB with mosquitto_pub -f,
// again and again, on topics.
func (o *outside) bigFlood(user, file string, topics ...string) *flooder {
	f := o.newFlooder()
	f.wg.Add(1)
	go func() {
		defer f.wg.Done()
		for i := 0; ; i++ {
			select {
			case <-f.stop:
				return
			default:
			}
			cmd := exec.Command("mosquitto_pub", "-h", "127.0.0.1", "-p", strconv.Itoa(o.mq.Port()), "-u", user, "-P", password(user),
				"-q", "1", "-t", topics[i%len(topics)], "-f", file)
			if cmd.Run() == nil {
				f.sent.Add(1)
			}
		}
	}()
	return f
}

func (f *flooder) halt() {
	f.once.Do(func() {
		close(f.stop)
		f.wg.Wait()
		f.elapsed = time.Since(f.started)
	})
}

// badInputs sums a process's chorus_bad_input_total by source/kind.
func (o *outside) badInputs(id string) map[string]float64 {
	o.t.Helper()
	out := map[string]float64{}
	for _, src := range []string{"message", "state", "grant", "presence", "query", "result", "hold"} {
		for _, k := range protocol.Kinds {
			if v := o.metric(id, fmt.Sprintf(`chorus_bad_input_total{kind="%s",source="%s"}`, k, src)); v > 0 {
				out[src+"/"+string(k)] = v
			}
		}
	}
	return out
}

func total(m map[string]float64) float64 {
	var n float64
	for _, v := range m {
		n += v
	}
	return n
}

// summary is m's counts by name, "a=1 b=2".
func summary(m map[string]float64) string {
	var keys []string
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var parts []string
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%s=%.0f", k, m[k]))
	}
	return strings.Join(parts, " ")
}

// voteTimeout is the outside rooms' vote_timeout (outsideCompanionYAML).
const voteTimeout = 3 * time.Second

// Hostile input with the ACL on, while a conversation runs: an
// authenticated client floods the room's message topic and a device's
// query topic with malformed payloads (12,000 a second are sent) and 1 MB
// payloads; a compromised member and an outsider spoof States, grants,
// presence, holds and query results. The conversation runs until the room
// rests, no step of it takes longer than vote_timeout + 2 s beyond what
// the floor waits by design, nobody speaks twice, the spoofs change
// nothing, every bad input is counted by kind, and once the flood stops
// every member votes on the next message and the floor decides it.
//
// What holds on two loaded cores (issue 27): Mosquitto drops messages for
// a client whose queue the flood has filled (it logs a notice, which this
// broker logs), valid ones too, so a companion may miss a Message, and the
// room may rest before terminal; a query may be lost and is asked again,
// as the query client does. How many payloads a second the flooders got
// out is the machine's figure, logged, not asserted; the floods must run
// through the whole conversation.
func TestSuiteFloodAndSpoofsWhileTalking(t *testing.T) {
	// Mosquitto's "Outgoing messages are being dropped" is a notice.
	o := newOutside(t, bustest.Options{MosquittoConf: []string{"log_type notice"}})
	o.brainDelay = "150ms"
	topics := []string{"chorus/rooms/lab/turns", "chorus/rooms/lab/presence/+", "chorus/rooms/lab/states/+", "chorus/rooms/lab/floor/leader"}
	for _, id := range o.members {
		topics = append(topics, "chorus/rooms/lab/messages/"+id)
	}
	w := o.watch(topics...) // not the flooded topics: the watcher keeps true times
	defer w.dumpOnFailure(t)
	o.room(w)
	results := o.watchAs("ben", "chorus/devices/dev-ann/results")

	big := filepath.Join(o.dir, "big.json")
	os.WriteFile(big, []byte(`{"jsonrpc":"2.0","method":"message.send","params":{"id":"big","from":"user","message":"`+strings.Repeat("a", 1<<20)+`"}}`), 0o644)

	// Flood first, then talk into the flood: 12,000 malformed payloads a
	// second in all, 10,000 of them into the room (every robot and the
	// floor receive those), some at QoS 1, some at a device's queries.
	floods := []*flooder{
		o.flood("user", 0, 8000, "chorus/rooms/lab/messages/user", junkLines),
		o.flood("user", 1, 2000, "chorus/rooms/lab/messages/user", junkLines),
		o.flood("user", 0, 2000, "chorus/devices/dev-ann/queries", junkLines),
	}
	bigs := o.bigFlood("user", big, "chorus/rooms/lab/messages/user", "chorus/devices/dev-ann/queries")
	spoofs := o.spoof(t)
	time.Sleep(time.Second)
	start := time.Now()
	atStart := make([]int64, len(floods))
	for i, f := range floods {
		atStart[i] = f.sent.Load()
	}
	first := o.say("Hello robots, can you hear me through all this?")
	// A member asks ann's device for a frame while an outsider and ben's
	// device try to answer in its place.
	ask := o.pubLines("ben", "chorus/devices/dev-ann/queries")
	fake := o.pubLines("mallory", "chorus/devices/dev-ann/results")
	fakeDev := o.pubLines("dev-ben", "chorus/devices/dev-ann/results")
	// Mosquitto may drop the query from the device's queue, full of the
	// flood: the member asks again with the same id, as the query client
	// does (runtime/query: after 1 s, then every 2 s), and the device
	// answers a query once.
	for i := range 3 {
		qid := fmt.Sprintf("flood-q%d", i)
		forged := fmt.Sprintf(`{"jsonrpc":"2.0","id":%q,"result":{"success":true,"body":{"image":"forged"}}}`, qid)
		var r line
		asked, answered := 0, false
		for wait, until := time.Second, time.Now().Add(10*time.Second); !answered; wait = 2 * time.Second {
			if time.Now().After(until) {
				t.Fatalf("no result of %s within 10 s (asked %d times)", qid, asked)
			}
			fake.send(forged)
			fakeDev.send(forged)
			ask.send(fmt.Sprintf(`{"jsonrpc":"2.0","method":"query.send","id":%q,"params":{"from":"ben","type":"vision"}}`, qid))
			asked++
			r, answered = results.lookFor(wait, func(l line) bool { return strings.Contains(l.payload, `"id":"`+qid+`"`) })
		}
		if !strings.Contains(r.payload, `"success":true`) || strings.Contains(r.payload, "forged") {
			t.Fatalf("result of %s under the flood: %.200s", qid, r.payload)
		}
		if asked > 1 {
			t.Logf("%s was asked %d times", qid, asked)
		}
	}
	// The conversation runs until the room rests. Under this flood a
	// companion can miss a message (Mosquitto drops from a client's full
	// queue): its turn count then lags the others', so the room may rest
	// with some voters at closing rather than terminal, or by the deadline
	// with a vote missing. Either is the room deciding, not stalling, as
	// docs/protocol.md asks (no single lost message may stop a conversation);
	// terminal would need every robot to hear every message, which an
	// overloaded broker does not give. So this test holds the room to
	// resting (within 60 s), every step within its bound, no valid message
	// lost, nobody speaking twice, and every member voting once the flood
	// stops (below); the rest reached and whom Mosquitto dropped messages
	// for are logged.
	rl := w.waitFor(t, 60*time.Second, "the room resting", func(l line) bool {
		if l.topic != "chorus/rooms/lab/turns" || l.at.Before(start) {
			return false
		}
		g, err := protocol.DecodeTurnGrant([]byte(l.payload), 0)
		return err == nil && g.Speaker == nil && len(g.Votes)+len(g.Missing) > 0
	})
	rest, _ := protocol.DecodeTurnGrant([]byte(rl.payload), 0)
	t.Logf("the room rested: at terminal %v, decided by %s, missing %v", rest.RestsAtTerminal(), rest.DecidedBy, rest.Missing)
	end := time.Now()
	var sent int64
	for i, f := range floods {
		n := f.sent.Load()
		f.halt()
		if atStart[i] == 0 || n == atStart[i] || f.err != nil {
			t.Errorf("flood %d did not run through the conversation: %d payloads sent before it, %d by its rest (%v)", i, atStart[i], n, f.err)
		}
		sent += f.sent.Load()
	}
	floodFor := floods[0].elapsed
	bigs.halt()
	spoofs.halt()

	// Every step of the conversation, in order: the user's message, each
	// grant and each companion's message. A grant decided by the deadline
	// is a vote_timeout the floor waits by design (a vote was lost or
	// late); beyond that wait every step gets the same allowance.
	lines, _ := w.snapshot()
	type step struct {
		at   time.Time
		wait time.Duration // the floor's own wait that ended it
	}
	steps := []step{{at: start}}
	for _, l := range lines {
		if l.at.Before(start) || l.at.After(end) {
			continue
		}
		switch {
		case l.topic == "chorus/rooms/lab/turns":
			s := step{at: l.at}
			if g, err := protocol.DecodeTurnGrant([]byte(l.payload), 0); err == nil && g.DecidedBy == protocol.DecidedDeadline {
				s.wait = voteTimeout
			}
			steps = append(steps, s)
		case strings.HasPrefix(l.topic, "chorus/rooms/lab/messages/"):
			steps = append(steps, step{at: l.at})
		}
	}
	var gap, beyond time.Duration // the longest step, and beyond the floor's own wait
	for i := 1; i < len(steps); i++ {
		d := steps[i].at.Sub(steps[i-1].at)
		gap, beyond = max(gap, d), max(beyond, d-steps[i].wait)
	}
	turns := len(w.companionMessages())
	rate := float64(sent) / floodFor.Seconds()
	each := make([]string, len(floods))
	for i, f := range floods {
		each[i] = fmt.Sprintf("%.0f", float64(f.sent.Load())/f.elapsed.Seconds())
	}
	t.Logf("flood: %.0f malformed payloads/s (%s; %d in %v), %d payloads of 1 MB, %d spoofs; the conversation (%d companion turns) took %v, its longest step %v (%v beyond the floor's own wait); rest %s",
		rate, strings.Join(each, " + "), sent, floodFor.Round(time.Millisecond), bigs.sent.Load(), spoofs.sent.Load(), turns,
		end.Sub(start).Round(time.Millisecond), gap.Round(time.Millisecond), beyond.Round(time.Millisecond), rest.Reason)
	if bigs.sent.Load() == 0 {
		t.Error("no 1 MB payload was sent")
	}
	if beyond > voteTimeout+2*time.Second {
		t.Errorf("a step of the conversation took %v beyond the floor's own wait, want at most vote_timeout + 2 s", beyond)
	}
	if turns < 1 {
		t.Error("no companion turn under the flood")
	}
	// No valid message lost: every grant's speaker answered it.
	granted, said := map[string]int{}, map[string]map[string]bool{}
	for _, g := range decisions(t, w.grants()) {
		granted[g.SpeakerID()]++
	}
	for _, m := range w.messages() {
		if said[m.Params.From] == nil {
			said[m.Params.From] = map[string]bool{}
		}
		said[m.Params.From][m.Params.ID] = true
	}
	for _, id := range o.members {
		if len(said[id]) != granted[id] {
			t.Errorf("%s was granted %d turns and answered %d", id, granted[id], len(said[id]))
		}
	}
	if _, ok := decisions(t, w.grants())[first]; !ok {
		t.Error("the user's message was never decided")
	}
	o.spokeOncePerGrant(w)
	// The spoofs changed nothing: nobody but the members spoke, no grant
	// came from anyone but the floor, and no presence went offline.
	for _, m := range w.messages() {
		if m.Params.From == "mallory" {
			t.Errorf("a spoofed message reached the room: %+v", m.Params)
		}
	}
	for _, g := range w.grants() {
		if g.MessageID == "spoofed-grant" {
			t.Errorf("a spoofed grant reached the room: %+v", g)
		}
	}
	for _, l := range lines {
		if strings.Contains(l.topic, "/presence/") && strings.Contains(l.payload, `"online":false`) {
			t.Errorf("a presence went offline: %s %s", l.topic, l.payload)
		}
	}

	// Every bad input counted, by kind.
	floor := o.badInputs("floor-box")
	t.Logf("floor counted %.0f/s: %s", total(floor)/floodFor.Seconds(), summary(floor))
	for _, id := range o.members {
		m := o.badInputs(id)
		t.Logf("%s counted %.0f/s: %s", id, total(m)/floodFor.Seconds(), summary(m))
	}
	var dropped []string
	for _, l := range strings.Split(o.mq.Log(), "\n") {
		if _, client, ok := strings.Cut(l, "Outgoing messages are being dropped for client "); ok {
			dropped = append(dropped, strings.TrimSuffix(client, "."))
		}
	}
	t.Logf("Mosquitto dropped messages for: %v", dropped)
	ann := o.badInputs("ann")
	for _, want := range []struct {
		where string
		m     map[string]float64
		key   string
	}{
		{"the floor", floor, "message/syntax"}, {"the floor", floor, "message/invalid"}, {"the floor", floor, "message/oversize"},
		{"the floor", floor, "message/spoof"}, {"the floor", floor, "state/spoof"}, {"the floor", floor, "presence/invalid"},
		{"the floor", floor, "hold/spoof"}, {"the floor", floor, "presence/syntax"},
		{"ann", ann, "query/syntax"}, {"ann", ann, "query/oversize"}, {"ann", ann, "message/unknown_field"},
	} {
		if want.m[want.key] == 0 {
			t.Errorf("%s counted no %s", want.where, want.key)
		}
	}

	// The flood wedged nobody: once it stops, every member votes on the
	// next message and the floor decides it (a robot still working
	// through the flood's backlog may take a while; a wedged one never
	// does).
	next := o.say("Is it quiet now?")
	for _, id := range o.members {
		w.waitFor(t, 30*time.Second, id+"'s vote on the message after the flood", func(l line) bool {
			s, err := protocol.DecodeState([]byte(l.payload), 0)
			return l.topic == "chorus/rooms/lab/states/"+id && err == nil && s.Params.From == id && s.Params.MessageID == next
		})
	}
	w.waitFor(t, 30*time.Second, "the decision on the message after the flood", func(l line) bool {
		g, err := protocol.DecodeTurnGrant([]byte(l.payload), 0)
		return l.topic == "chorus/rooms/lab/turns" && err == nil && g.MessageID == next
	})
}

// spoof sends spoofed States, grants, presence and holds for as long as it
// runs: from an outsider (refused by the broker's ACL) and from a member's
// stolen credentials (ann's: refused by the floor, since each names
// someone else), and messages in the name of a companion.
func (o *outside) spoof(t *testing.T) *flooder {
	f := o.newFlooder()
	type spoofed struct{ user, topic, payload string }
	state := func(from, msg string) string {
		b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "method": "state.send", "params": map[string]any{
			"id": protocol.NewID(), "from": from, "messageId": msg, "state": "speak", "importance": 10, "selected": true, "closing": "none"}})
		return string(b)
	}
	list := []spoofed{
		{"mallory", "chorus/rooms/lab/states/ann", state("ann", "x")},
		{"mallory", "chorus/rooms/lab/turns", `{"jsonrpc":"2.0","method":"turn.grant","params":{"messageId":"spoofed-grant","speaker":"mallory"}}`},
		{"mallory", "chorus/rooms/lab/presence/ann", `{"id":"ann","online":false}`},
		{"mallory", "chorus/rooms/lab/floor/hold/ann", `{"from":"ann","held":true,"since":"2026-01-01T00:00:00Z"}`},
		{"mallory", "chorus/rooms/lab/messages/ann", `{"jsonrpc":"2.0","method":"message.send","params":{"id":"m","from":"ann","message":"hi"}}`},
		{"dan", "chorus/rooms/lab/states/dan", state("dan", "x")}, // dan is no member of lab
		{"ann", "chorus/rooms/lab/states/ann", state("ben", "x")},
		{"ann", "chorus/rooms/lab/presence/ann", `{"online":"no","device":7}`},
		{"ann", "chorus/rooms/lab/presence/ann", `{"online":`},
		{"ann", "chorus/rooms/lab/floor/hold/ann", `{"from":"ben","held":true,"since":"2026-01-01T00:00:00Z"}`},
		{"user", "chorus/rooms/lab/messages/user", `{"jsonrpc":"2.0","method":"message.send","params":{"id":"m2","from":"mallory","message":"I am mallory"}}`},
	}
	pubs := map[string]lines{}
	for _, s := range list {
		k := s.user + " " + s.topic
		if _, ok := pubs[k]; !ok {
			pubs[k] = o.pubLines(s.user, s.topic)
		}
	}
	f.wg.Add(1)
	go func() {
		defer f.wg.Done()
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-f.stop:
				return
			case <-tick.C:
			}
			for _, s := range list {
				pubs[s.user+" "+s.topic].send(s.payload)
				f.sent.Add(1)
			}
		}
	}()
	return f
}

// A flood far beyond what the broker and the robots can take — as fast as
// mosquitto_pub goes, at QoS 0 and 1 — while a conversation runs: once it
// stops, the room answers the next message within vote_timeout + 2 s and
// runs to its end, nobody speaking twice.
func TestSuiteOverloadThenRecover(t *testing.T) {
	o := newOutside(t, bustest.Options{})
	o.brainDelay = "300ms"
	topics := []string{"chorus/rooms/lab/turns", "chorus/rooms/lab/presence/+", "chorus/rooms/lab/floor/leader"}
	for _, id := range o.members {
		topics = append(topics, "chorus/rooms/lab/messages/"+id)
	}
	w := o.watch(topics...)
	defer w.dumpOnFailure(t)
	o.room(w)
	floods := []*flooder{
		o.flood("user", 0, 1_000_000, "chorus/rooms/lab/messages/user", junkLines),
		o.flood("user", 1, 1_000_000, "chorus/rooms/lab/messages/user", junkLines),
		o.flood("user", 0, 1_000_000, "chorus/devices/dev-ann/queries", junkLines),
	}
	time.Sleep(500 * time.Millisecond)
	o.say("Hello robots, can you talk through this noise?")
	time.Sleep(4 * time.Second)
	for _, f := range floods {
		f.halt()
	}
	during := len(w.companionMessages())
	stopped := time.Now()
	id := o.say("The noise is over. Who speaks first?")
	_, at := w.grantFor(t, id, 20*time.Second)
	answered := w.waitFor(t, 20*time.Second, "an answer after the flood", func(l line) bool {
		return l.at.After(stopped) && strings.HasPrefix(l.topic, "chorus/rooms/lab/messages/") && !strings.HasSuffix(l.topic, "/user")
	})
	t.Logf("overload: %d companion messages during 4 s of flood; after it the next message was granted %v and answered %v after the flood stopped (Mosquitto dropped messages: %v)",
		during, at.Sub(stopped).Round(time.Millisecond), answered.at.Sub(stopped).Round(time.Millisecond), strings.Contains(o.mq.Log(), "dropped"))
	if d := answered.at.Sub(stopped); d > 3*time.Second+2*time.Second {
		t.Errorf("the room answered %v after the flood stopped, want within vote_timeout + 2 s", d)
	}
	w.terminalAfter(t, 40*time.Second, stopped)
	time.Sleep(300 * time.Millisecond)
	o.spokeOncePerGrant(w)
}
