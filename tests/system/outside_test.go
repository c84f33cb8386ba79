package system

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/chorus-robotics/chorus/runtime/logtest"

	"github.com/chorus-robotics/chorus/runtime/bus/bustest"
	"github.com/chorus-robotics/chorus/runtime/protocol"
)

// The outside harness runs a room the way a user's house does: separate
// chorusd processes on a real Mosquitto with a password file and the ACL
// that Chorus renders, driven and watched only with Debian's mosquitto_pub
// and mosquitto_sub (and the devices' own /healthz and /metrics).

// password is every test identity's password: the room's companions, the
// floor and the floor device, users, a watcher and an intruder. A device
// whose id differs from its companion's connects under the device id too
// (for its query results) with the companion's password, so a password
// file gives both names the same password.
func password(user string) string {
	return "pw-" + strings.ReplaceAll(strings.TrimPrefix(user, "dev-"), " ", "_")
}

var outsideUsers = []string{"ann", "ben", "cat", "dan", "eve", "dev-ann", "dev-ben", "dev-cat", "dev-dan", "dev-eve",
	"floor", "floor-box", "floor-box-2", "user", "watcher", "mallory", "a b", "alice", "bob", "carol", "root"}

type outside struct {
	t               *testing.T
	chorusd, chorus string
	mq              *bustest.Mosquitto
	url             string
	dir             string
	ports           map[string]int
	brainDelay      string   // the rule brain's thinking time, "0s" by default
	members         []string // the room's roster, ann, ben and cat by default
	roomExtra       string   // more room settings, YAML flow-map entries (", mode: realtime")
	floorLog        string   // the floor's log level, info by default
	floorMore       string   // more sections of the floor's config, YAML
	port            int      // the broker port mosquitto_pub and mosquitto_sub use
	subQoS          string   // mosquitto_sub's QoS, "1" by default
	// mqttFor gives a process (a companion id or a floor device) its own
	// broker URL and more mqtt settings, as YAML flow-map text that
	// follows "broker: " (the other nodes of a cluster, say); o.url else.
	mqttFor map[string]string
}

// brokerOf is the mqtt section's broker value (and what follows it) for
// the process named name.
func (o *outside) brokerOf(name string) string {
	if b, ok := o.mqttFor[name]; ok {
		return b
	}
	return o.url
}

func newOutside(t *testing.T, o bustest.Options) *outside {
	t.Helper()
	chorusd, chorus := buildBinaries(t)
	users := map[string]string{}
	for _, u := range outsideUsers {
		users[u] = password(u)
	}
	o.Users, o.ACL = users, true
	if o.Rosters == nil {
		o.Rosters = labRoster
	}
	mq := bustest.StartMosquitto(t, o)
	return &outside{t: t, chorusd: chorusd, chorus: chorus, mq: mq, url: mq.URL(), port: mq.Port(), dir: t.TempDir(), ports: map[string]int{},
		members: o.Rosters["lab"]}
}

const outsideCompanionYAML = `version: 1
device: {id: {{dev}}}
room: {name: lab, members: [{{members}}], vote_timeout: 3s, pause: 20ms{{extra}}}
mqtt: {broker: {{broker}}, password_env: CHORUS_MQTT_PASSWORD}
companion:
  id: {{id}}
  name: {{id}}
  sample_lines: ["I am {{id}}.", "Nice weather."]
  language: en
brain: {{brain}}
drivers: {{drivers}}
http: {listen: "127.0.0.1:{{port}}"}
log: {level: {{log}}}
{{more}}`

// part is a companion's brain or drivers, as YAML, or its log level, when a
// test gives its own.
type part struct{ brain, drivers, log, more string }

const outsideFloorYAML = `version: 1
device: {id: %[1]s}
room: {name: lab, members: [%[3]s], floor: true, vote_timeout: 3s%[5]s}
mqtt: {broker: %[2]s, password_env: CHORUS_MQTT_PASSWORD, floor_password_env: CHORUS_FLOOR_PASSWORD}
drivers: {audio: {kind: null}, tts: {kind: tone}}
http: {listen: "127.0.0.1:%[4]d"}
log: {level: %[6]s}
`

// companion starts chorusd for companion id on a device of its own name
// (dev-id), or on a device named like the companion when sameID.
func (o *outside) companion(id string, sameID bool) *proc {
	o.t.Helper()
	return o.companionWith(id, sameID, part{})
}

// companionWith is companion with its own brain or drivers (YAML flow maps).
func (o *outside) companionWith(id string, sameID bool, p part, env ...string) *proc {
	o.t.Helper()
	dev := "dev-" + id
	if sameID {
		dev = id
	}
	port := bustest.FreePort(o.t)
	o.ports[id] = port
	cfg := filepath.Join(o.dir, id+".yaml")
	delay := o.brainDelay
	if delay == "" {
		delay = "0s"
	}
	if p.brain == "" {
		p.brain = "{provider: rule, closing_after: 4, delay: " + delay + "}"
	}
	if p.drivers == "" {
		p.drivers = "{camera: {kind: testpattern, width: 160, height: 120, fps: 10}, audio: {kind: null}, tts: {kind: tone}}"
	}
	if p.log == "" {
		p.log = "info"
	}
	yaml := strings.NewReplacer("{{log}}", p.log, "{{dev}}", dev, "{{id}}", id, "{{broker}}", o.brokerOf(id), "{{port}}", strconv.Itoa(port),
		"{{members}}", strings.Join(o.members, ", "), "{{extra}}", o.roomExtra, "{{brain}}", p.brain, "{{drivers}}", p.drivers, "{{more}}", p.more).Replace(outsideCompanionYAML)
	os.WriteFile(cfg, []byte(yaml), 0o644)
	return startEnv(o.t, o.chorusd, cfg, id, append([]string{"CHORUS_MQTT_PASSWORD=" + password(id)}, env...)...)
}

// floor starts a floor-only chorusd under device id dev.
func (o *outside) floor(dev string) *proc {
	o.t.Helper()
	cfg := filepath.Join(o.dir, dev+".yaml")
	port := bustest.FreePort(o.t)
	o.ports[dev] = port
	level := o.floorLog
	if level == "" {
		level = "info"
	}
	os.WriteFile(cfg, []byte(fmt.Sprintf(outsideFloorYAML, dev, o.brokerOf(dev), strings.Join(o.members, ", "), port, o.roomExtra, level)+o.floorMore), 0o644)
	return startEnv(o.t, o.chorusd, cfg, dev, "CHORUS_MQTT_PASSWORD="+password(dev), "CHORUS_FLOOR_PASSWORD="+password("floor"))
}

// room starts a floor and every member, and waits until all are online
// and the floor has claimed the room.
func (o *outside) room(w *watcher) map[string]*proc {
	o.t.Helper()
	procs := map[string]*proc{"floor": o.floor("floor-box")}
	for _, id := range o.members {
		procs[id] = o.companion(id, false)
	}
	w.waitOnline(o.t, o.members...)
	w.waitFor(o.t, 5*time.Second, "the floor's claim", func(l line) bool {
		return l.topic == "chorus/rooms/lab/floor/leader" && strings.Contains(l.payload, `"online":true`)
	})
	return procs
}

// pub publishes with mosquitto_pub as user.
func (o *outside) pub(user, topic, payload string, retain bool) {
	o.t.Helper()
	args := []string{"-h", "127.0.0.1", "-p", strconv.Itoa(o.port), "-u", user, "-P", password(user), "-q", "1", "-t", topic, "-m", payload}
	if retain {
		args = append(args, "-r")
	}
	if out, err := exec.Command("mosquitto_pub", args...).CombinedOutput(); err != nil {
		o.t.Fatalf("mosquitto_pub as %s on %s: %v\n%s", user, topic, err, out)
	}
}

// say publishes a user's message and returns its id.
func (o *outside) say(text string) string {
	o.t.Helper()
	id := protocol.NewID()
	b, _ := json.Marshal(protocol.NewMessage(id, "user", nil, text, ""))
	o.pub("user", "chorus/rooms/lab/messages/user", string(b), false)
	return id
}

// metric reads one sample from a device's /metrics (0 when absent).
func (o *outside) metric(id, name string) float64 {
	o.t.Helper()
	return sampleOf(o.metricsText(id), name)
}

// metricsText is a device's /metrics.
func (o *outside) metricsText(id string) string {
	o.t.Helper()
	resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/metrics", o.ports[id]))
	if err != nil {
		o.t.Fatalf("%s /metrics: %v", id, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}

// spoken is how many utterances a companion's device played.
func (o *outside) spoken(id string) int {
	return int(o.metric(id, "chorus_speak_first_audio_seconds_count"))
}

func startEnv(t *testing.T, bin, cfg, name string, env ...string) *proc {
	t.Helper()
	p := &proc{name: name, cmd: exec.Command(bin, "--config", cfg), log: &logtest.Buffer{}, done: make(chan struct{})}
	p.cmd.Env = append(os.Environ(), env...)
	p.cmd.Stdout, p.cmd.Stderr = p.log, p.log
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { p.cmd.Wait(); close(p.done) }()
	t.Cleanup(func() {
		p.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-p.done:
		case <-time.After(5 * time.Second):
			p.cmd.Process.Kill()
			<-p.done
		}
		if t.Failed() {
			t.Logf("--- %s log:\n%s", p.name, p.log.String())
		}
	})
	return p
}

// line is one message mosquitto_sub printed.
type line struct {
	topic, payload string
	at             time.Time
}

// watcher is a mosquitto_sub that keeps everything it printed.
type watcher struct {
	o     *outside
	mu    sync.Mutex
	lines []line
	cond  chan struct{} // closed and replaced on every new line
}

// watch runs mosquitto_sub -v as the watcher (a user) on filters.
func (o *outside) watch(filters ...string) *watcher {
	o.t.Helper()
	return o.watchAs("watcher", filters...)
}

// watchAs runs mosquitto_sub -v as user on filters.
func (o *outside) watchAs(user string, filters ...string) *watcher {
	o.t.Helper()
	qos := o.subQoS
	if qos == "" {
		qos = "1"
	}
	args := []string{"-h", "127.0.0.1", "-p", strconv.Itoa(o.port), "-u", user, "-P", password(user), "-v", "-q", qos}
	for _, f := range filters {
		args = append(args, "-t", f)
	}
	cmd := exec.Command("mosquitto_sub", args...)
	out, err := cmd.StdoutPipe()
	if err != nil {
		o.t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		o.t.Fatalf("mosquitto_sub: %v", err)
	}
	w := &watcher{o: o, cond: make(chan struct{})}
	done := make(chan struct{})
	go func() {
		defer close(done)
		sc := bufio.NewScanner(out)
		sc.Buffer(make([]byte, 1<<20), 1<<22)
		for sc.Scan() {
			topic, payload, _ := strings.Cut(sc.Text(), " ")
			w.mu.Lock()
			w.lines = append(w.lines, line{topic, payload, time.Now()})
			close(w.cond)
			w.cond = make(chan struct{})
			w.mu.Unlock()
		}
	}()
	o.t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait(); <-done })
	time.Sleep(200 * time.Millisecond) // subscribed
	return w
}

func (w *watcher) snapshot() ([]line, chan struct{}) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]line(nil), w.lines...), w.cond
}

// waitFor waits until a line satisfies ok and returns it.
func (w *watcher) waitFor(t *testing.T, within time.Duration, what string, ok func(line) bool) line {
	t.Helper()
	l, found := w.lookFor(within, ok)
	if !found {
		t.Fatalf("no %s within %v", what, within)
	}
	return l
}

// lookFor is waitFor that reports a line not seen within its time.
func (w *watcher) lookFor(within time.Duration, ok func(line) bool) (line, bool) {
	deadline := time.After(within)
	seen := 0
	for {
		lines, changed := w.snapshot()
		for _, l := range lines[seen:] {
			if ok(l) {
				return l, true
			}
		}
		seen = len(lines)
		select {
		case <-changed:
		case <-deadline:
			return line{}, false
		}
	}
}

func (w *watcher) waitOnline(t *testing.T, ids ...string) {
	t.Helper()
	for _, id := range ids {
		w.waitFor(t, 15*time.Second, id+" online", func(l line) bool {
			return l.topic == "chorus/rooms/lab/presence/"+id && strings.Contains(l.payload, `"online":true`)
		})
	}
}

// grants decodes every grant seen so far, in order (copies included).
func (w *watcher) grants() []protocol.TurnGrant {
	lines, _ := w.snapshot()
	var out []protocol.TurnGrant
	for _, l := range lines {
		if l.topic != "chorus/rooms/lab/turns" {
			continue
		}
		if g, err := protocol.DecodeTurnGrant([]byte(l.payload), 0); err == nil {
			out = append(out, g)
		}
	}
	return out
}

// messages decodes every Message seen so far (copies included).
func (w *watcher) messages() []protocol.Message {
	lines, _ := w.snapshot()
	var out []protocol.Message
	for _, l := range lines {
		if !strings.HasPrefix(l.topic, "chorus/rooms/lab/messages/") {
			continue
		}
		if m, err := protocol.DecodeMessage([]byte(l.payload), 0); err == nil {
			out = append(out, m)
		}
	}
	return out
}

// terminal waits until the room rests at terminal after message from.
func (w *watcher) terminal(t *testing.T, within time.Duration) protocol.TurnGrant {
	t.Helper()
	return w.terminalAfter(t, within, time.Time{})
}

// terminalAfter waits for a rest at terminal seen after a time.
func (w *watcher) terminalAfter(t *testing.T, within time.Duration, after time.Time) protocol.TurnGrant {
	t.Helper()
	var rest protocol.TurnGrant
	w.waitFor(t, within, "a rest at terminal", func(l line) bool {
		if l.topic != "chorus/rooms/lab/turns" || l.at.Before(after) {
			return false
		}
		g, err := protocol.DecodeTurnGrant([]byte(l.payload), 0)
		if err != nil || g.Speaker != nil || len(g.Votes) == 0 {
			return false
		}
		for _, v := range g.Votes {
			if v.Closing != protocol.ClosingTerminal {
				return false
			}
		}
		rest = g
		return true
	})
	return rest
}

// decisions checks that no message was granted twice — every copy of a
// grant for one message names the same speaker — and returns the
// decisions by message id. A rest may be followed by a grant to a speaker:
// the floor decides a message again when a vote it rested without comes
// after all (issue 27); a grant to a speaker is final.
func decisions(t *testing.T, gs []protocol.TurnGrant) map[string]protocol.TurnGrant {
	t.Helper()
	out := map[string]protocol.TurnGrant{}
	for _, g := range gs {
		first, ok := out[g.MessageID]
		switch {
		case !ok, first.SpeakerID() == "" && first.Reason == protocol.ReasonRest:
			out[g.MessageID] = g
		case first.SpeakerID() != g.SpeakerID() || first.Reason != g.Reason:
			t.Errorf("message %s granted twice: %s (%s), then %s (%s)", g.MessageID, first.SpeakerID(), first.Reason, g.SpeakerID(), g.Reason)
		}
	}
	return out
}

// spokeOncePerGrant checks that every companion played exactly one
// utterance per message it was granted and answered.
func (o *outside) spokeOncePerGrant(w *watcher) {
	o.t.Helper()
	granted := map[string]int{}
	for _, g := range decisions(o.t, w.grants()) {
		if s := g.SpeakerID(); s != "" {
			granted[s]++
		}
	}
	said := map[string]map[string]bool{}
	for _, m := range w.messages() {
		if said[m.Params.From] == nil {
			said[m.Params.From] = map[string]bool{}
		}
		said[m.Params.From][m.Params.ID] = true
	}
	for _, id := range []string{"ann", "ben", "cat"} {
		if n := o.spoken(id); n != len(said[id]) || n > granted[id] {
			o.t.Errorf("%s played %d utterances, published %d distinct messages, was granted %d turns", id, n, len(said[id]), granted[id])
		}
	}
}

// spokeOncePerFloorGrant is spokeOncePerGrant for a test that restarts
// the broker: the watcher misses what is published while it reconnects
// (a grant among it), so the turns granted are counted by the floor itself.
// Every companion played exactly the messages it published, no message
// seen was granted twice, and the room played no more utterances than
// the floor granted turns.
func (o *outside) spokeOncePerFloorGrant(w *watcher, floor string) {
	o.t.Helper()
	decisions(o.t, w.grants())
	said := map[string]map[string]bool{}
	for _, m := range w.messages() {
		if said[m.Params.From] == nil {
			said[m.Params.From] = map[string]bool{}
		}
		said[m.Params.From][m.Params.ID] = true
	}
	played := 0
	for _, id := range []string{"ann", "ben", "cat"} {
		n := o.spoken(id)
		played += n
		if n != len(said[id]) {
			o.t.Errorf("%s played %d utterances, published %d distinct messages", id, n, len(said[id]))
		}
	}
	text := o.metricsText(floor)
	granted := sampleOf(text, `chorus_floor_grants_total{reason="selected"}`) + sampleOf(text, `chorus_floor_grants_total{reason="speak"}`)
	if float64(played) > granted {
		o.t.Errorf("the companions played %d utterances, the floor granted %.0f turns", played, granted)
	}
}

// dumpOnFailure logs the room's messages and grants with their times when
// the test failed.
func (w *watcher) dumpOnFailure(t *testing.T) {
	if !t.Failed() {
		return
	}
	lines, _ := w.snapshot()
	for _, l := range lines {
		if strings.Contains(l.topic, "/turns") || strings.Contains(l.topic, "/messages/") || strings.Contains(l.topic, "/presence/") || strings.Contains(l.topic, "/speaking/") {
			t.Logf("%s %s %.160s", l.at.Format("15:04:05.000"), l.topic, l.payload)
		}
	}
}
