package system

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/chorus-robotics/chorus/runtime/bus"
	"github.com/chorus-robotics/chorus/runtime/bus/bustest"
	"github.com/chorus-robotics/chorus/runtime/logtest"
	"github.com/chorus-robotics/chorus/runtime/protocol"
	"github.com/chorus-robotics/chorus/runtime/room"
	"github.com/chorus-robotics/chorus/runtime/topic"
)

var (
	binOnce          sync.Once
	binDir           string
	binChorusd, binC string
	binErr           error
)

// TestMain removes the binaries the tests built.
func TestMain(m *testing.M) {
	code := m.Run()
	if binDir != "" {
		os.RemoveAll(binDir)
	}
	os.Exit(code)
}

// buildBinaries builds chorusd and chorus once for all the tests.
func buildBinaries(t *testing.T) (chorusd, chorus string) {
	t.Helper()
	binOnce.Do(func() {
		if binDir, binErr = os.MkdirTemp("", "chorus-bin-"); binErr != nil {
			return
		}
		cmd := exec.Command("go", "build", "-o", binDir, "github.com/chorus-robotics/chorus/cmd/chorusd", "github.com/chorus-robotics/chorus/cmd/chorus")
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			binErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
		binChorusd, binC = filepath.Join(binDir, "chorusd"), filepath.Join(binDir, "chorus")
	})
	if binErr != nil {
		t.Fatal(binErr)
	}
	return binChorusd, binC
}

// labCompanionYAML begins the config of a companion of the lab room
// (%[1]s its id, %[2]s the broker's URL); its persona, brain and body
// follow.
const labCompanionYAML = `version: 1
device: {id: dev-%[1]s}
room: {name: lab, members: [ann, ben, cat], vote_timeout: 3s, pause: 20ms}
mqtt: {broker: %[2]s}
companion:
  id: %[1]s
  name: %[1]s
`

// silentBodyYAML is a body that makes no sound and serves no HTTP.
const silentBodyYAML = `drivers: {audio: {kind: null}, tts: {kind: tone}}
http: {listen: "off"}
`

const companionYAML = labCompanionYAML + `  sample_lines: ["I am %[1]s.", "Nice weather."]
  language: en
brain: {provider: rule, closing_after: 4, delay: %[3]s}
` + silentBodyYAML + "log: {level: info}\n"

const floorYAML = `version: 1
device: {id: floor-box}
room: {name: lab, members: [ann, ben, cat], floor: true, vote_timeout: 3s}
mqtt: {broker: %s}
drivers: {audio: {kind: null}, tts: {kind: tone}}
http: {listen: "off"}
log: {level: info}
`

// labRoster is the test room's members, for the broker's ACL.
var labRoster = map[string][]string{"lab": {"ann", "ben", "cat"}}

// labPeople are the lab's other identities Mosquitto's ACL lists (as
// chorus acl -people does): the observer, chorus say's user, the bodies.
var labPeople = []string{"observer", "user", "dev-ann", "dev-ben", "dev-cat", "dev-dan", "floor-box"}

type proc struct {
	name string
	cmd  *exec.Cmd
	log  *logtest.Buffer
	done chan struct{}
}

func start(t *testing.T, bin, cfg, name string) *proc {
	t.Helper()
	return startEnv(t, bin, cfg, name)
}

type observer struct {
	presence chan room.PresenceEvent
	messages chan protocol.Message
	grants   chan protocol.TurnGrant
}

func observe(t *testing.T, url string) *observer {
	t.Helper()
	b, err := bus.Dial(context.Background(), bus.Options{Broker: url, ClientID: "observer-" + t.Name(), Username: "observer"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	o := &observer{presence: make(chan room.PresenceEvent, 64), messages: make(chan protocol.Message, 256), grants: make(chan protocol.TurnGrant, 256)}
	r := room.New(b, topic.New(""), "lab", nil, nil)
	ctx := context.Background()
	r.OnPresence(ctx, func(p room.PresenceEvent) { o.presence <- p })
	r.OnMessage(ctx, func(m protocol.Message) { o.messages <- m })
	r.OnGrant(ctx, func(g protocol.TurnGrant) { o.grants <- g })
	return o
}

// untilRest counts the room's Messages by sender until a grant rests the
// room (no speaker), and returns that grant; ok is false when none did
// within d.
func (o *observer) untilRest(d time.Duration) (spoke map[string]int, rest protocol.TurnGrant, ok bool) {
	spoke = map[string]int{}
	timeout := time.After(d)
	for {
		select {
		case m := <-o.messages:
			spoke[m.Params.From]++
		case g := <-o.grants:
			if g.Speaker == nil {
				return spoke, g, true
			}
		case <-timeout:
			return spoke, protocol.TurnGrant{}, false
		}
	}
}

// companionTurns is how many of the Messages counted the companions sent:
// all but the user's.
func companionTurns(spoke map[string]int) int {
	n := 0
	for from, c := range spoke {
		if from != "user" {
			n += c
		}
	}
	return n
}

func (o *observer) waitOnline(t *testing.T, ids ...string) {
	t.Helper()
	want := map[string]bool{}
	for _, id := range ids {
		want[id] = true
	}
	timeout := time.After(15 * time.Second)
	for len(want) > 0 {
		select {
		case p := <-o.presence:
			if p.Presence.Online {
				delete(want, p.ID)
			}
		case <-timeout:
			t.Fatalf("not online: %v", want)
		}
	}
}

func say(t *testing.T, chorus, url, text string) string {
	t.Helper()
	out, err := exec.Command(chorus, "say", "-broker", url, "-room", "lab", text).CombinedOutput()
	if err != nil {
		t.Fatalf("chorus say: %v\n%s", err, out)
	}
	f := strings.Fields(string(out)) // "sent to room lab as user, message id ID"
	if len(f) == 0 {
		t.Fatalf("chorus say printed nothing")
	}
	return f[len(f)-1]
}

func startMosquittoURL(t *testing.T) string {
	return bustest.StartMosquitto(t, bustest.Options{ACL: true, Rosters: labRoster, People: labPeople}).URL()
}

// waitGrant delivers the grant for message id.
func waitGrant(o *observer, id string) <-chan protocol.TurnGrant {
	ch := make(chan protocol.TurnGrant, 1)
	go func() {
		timeout := time.After(10 * time.Second)
		for {
			select {
			case g := <-o.grants:
				if g.MessageID == id {
					ch <- g
					return
				}
			case <-timeout:
				return
			}
		}
	}()
	return ch
}

func setup(t *testing.T, delays map[string]string) (url, chorus string, procs map[string]*proc, o *observer) {
	return startLab(t, []string{"ann", "ben", "cat"}, func(id, url string) string {
		d := delays[id]
		if d == "" {
			d = "0s"
		}
		return fmt.Sprintf(companionYAML, id, url, d)
	})
}

// startLab runs the lab room on Mosquitto: a floor and the companions ids
// as chorusd processes, each companion's config made by config (its id,
// the broker's URL). It returns once the companions are online and the
// floor has claimed the room.
func startLab(t *testing.T, ids []string, config func(id, url string) string) (url, chorus string, procs map[string]*proc, o *observer) {
	t.Helper()
	chorusd, chorus := buildBinaries(t)
	br := bustest.StartMosquitto(t, bustest.Options{ACL: true, Rosters: labRoster, People: labPeople})
	url = br.URL()
	dir := t.TempDir()
	procs = map[string]*proc{}
	o = observe(t, url)
	fcfg := filepath.Join(dir, "floor.yaml")
	os.WriteFile(fcfg, []byte(fmt.Sprintf(floorYAML, url)), 0o644)
	procs["floor"] = start(t, chorusd, fcfg, "floor")
	for _, id := range ids {
		cfg := filepath.Join(dir, id+".yaml")
		os.WriteFile(cfg, []byte(config(id, url)), 0o644)
		procs[id] = start(t, chorusd, cfg, id)
	}
	o.waitOnline(t, ids...)
	time.Sleep(700 * time.Millisecond) // the floor claims the room after its join wait
	return url, chorus, procs, o
}

func TestThreeProcessesRunToTerminal(t *testing.T) {
	url, chorus, _, o := setup(t, nil)
	say(t, chorus, url, "Hello robots, how are you?")
	spoke, g, ok := o.untilRest(30 * time.Second)
	if !ok {
		t.Fatalf("no terminal within 30 s (%d turns)", companionTurns(spoke))
	}
	for _, v := range g.Votes {
		if v.Closing != protocol.ClosingTerminal {
			t.Fatalf("rested before terminal: %+v", g)
		}
	}
	if turns := companionTurns(spoke); turns < 4 {
		t.Fatalf("terminal after only %d turns", turns)
	}
}

func TestKilledCompanionDoesNotStallTheRoom(t *testing.T) {
	// cat thinks slowly, so it is still deciding when it dies.
	url, chorus, procs, o := setup(t, map[string]string{"cat": "1500ms"})
	sent := time.Now()
	id := say(t, chorus, url, "Hello robots, how are you?")
	time.Sleep(300 * time.Millisecond)
	procs["cat"].cmd.Process.Signal(syscall.SIGKILL)

	var first protocol.TurnGrant
	offline := false
	timeout := time.After(10 * time.Second)
	for first.MessageID == "" || !offline {
		select {
		case g := <-o.grants:
			if g.MessageID == id {
				first = g
			}
		case p := <-o.presence:
			if p.ID == "cat" && !p.Presence.Online {
				offline = true
			}
		case <-timeout:
			t.Fatalf("grant %+v, cat offline %v", first, offline)
		}
	}
	if d := time.Since(sent); d > 3*time.Second+500*time.Millisecond {
		t.Fatalf("decided after %v, beyond the 3 s vote deadline", d)
	}
	if first.Speaker == nil || *first.Speaker == "cat" || len(first.Votes) != 2 {
		t.Fatalf("first grant %+v", first)
	}
	// The room goes on with ann and ben, to terminal.
	spoke, _, ok := o.untilRest(30 * time.Second)
	if !ok {
		t.Fatalf("room did not go on: spoke %v", spoke)
	}
	if spoke["cat"] > 0 || spoke["ann"]+spoke["ben"] < 3 {
		t.Fatalf("spoke %v", spoke)
	}
}
