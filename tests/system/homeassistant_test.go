package system

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chorus-robotics/chorus/runtime/bus/bustest"
)

const haRobotYAML = `version: 1
device: {id: kyoko-pi, model: "Raspberry Pi 5 desk robot"}
room: {name: lab, members: [kyoko], floor: true, vote_timeout: 1s, pause: 10ms}
mqtt: {broker: "%[1]s"}
companion: {id: kyoko, name: Kyoko, sample_lines: ["I like tea."], language: en}
drivers: {audio: {kind: null}, tts: {kind: tone}}
%[5]s
homeassistant: {enabled: %[4]t}
http: {listen: "127.0.0.1:%[3]d"}
`

// ha plays Home Assistant (and others) on Mosquitto with its clients.
type ha struct {
	t    *testing.T
	host string
	port string
}

// sub reads up to n messages of filter as user, for at most wait.
func (h *ha) sub(user, filter string, n int, wait time.Duration) []string {
	h.t.Helper()
	out, _ := exec.Command("mosquitto_sub", "-h", h.host, "-p", h.port, "-u", user, "-i", user+"-sub-"+fmt.Sprint(time.Now().UnixNano()),
		"-t", filter, "-C", fmt.Sprint(n), "-W", fmt.Sprint(int(wait.Seconds())), "-F", "%t %p").Output()
	var lines []string
	for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		if l != "" {
			lines = append(lines, l)
		}
	}
	return lines
}

func (h *ha) pub(user, topic, payload string) {
	h.t.Helper()
	if out, err := exec.Command("mosquitto_pub", "-h", h.host, "-p", h.port, "-u", user, "-q", "1", "-t", topic, "-m", payload).CombinedOutput(); err != nil {
		h.t.Fatalf("mosquitto_pub as %s on %s: %v %s", user, topic, err, out)
	}
}

// retained is the retained payload of topic ("" when none).
func (h *ha) retained(user, topic string) string {
	h.t.Helper()
	l := h.sub(user, topic, 1, 2*time.Second)
	if len(l) == 0 {
		return ""
	}
	_, p, _ := strings.Cut(l[0], " ")
	return p
}

// until polls topic's retained payload until ok, for at most 10 s.
func (h *ha) until(user, topic string, ok func(string) bool) string {
	h.t.Helper()
	var p string
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		if p = h.retained(user, topic); ok(p) {
			return p
		}
	}
	h.t.Fatalf("%s stayed %q", topic, p)
	return p
}

// discovery is the robot's device discovery as Home Assistant reads it.
type discovery struct {
	Dev struct {
		IDs  []string `json:"ids"`
		Name string   `json:"name"`
	} `json:"dev"`
	O struct {
		Name string `json:"name"`
	} `json:"o"`
	Availability []struct {
		Topic         string `json:"topic"`
		ValueTemplate string `json:"value_template"`
	} `json:"availability"`
	Cmps map[string]map[string]any `json:"cmps"`
}

// required are the keys Home Assistant's MQTT platforms need (its
// documentation; device discovery adds p and unique_id to each).
var required = map[string][]string{
	"sensor":        {"state_topic"},
	"binary_sensor": {"state_topic"},
	"switch":        {"command_topic"},
	"text":          {"command_topic"},
	"button":        {"command_topic"},
}

func (h *ha) discovery(node string) discovery {
	h.t.Helper()
	raw := h.retained("homeassistant", "homeassistant/device/"+node+"/config")
	var d discovery
	if err := json.Unmarshal([]byte(raw), &d); err != nil {
		h.t.Fatalf("the discovery is not JSON: %v: %q", err, raw)
	}
	if len(d.Dev.IDs) == 0 || d.Dev.Name == "" || d.O.Name == "" || len(d.Availability) == 0 || d.Availability[0].Topic == "" {
		h.t.Fatalf("the discovery lacks a device, its origin or availability: %s", raw)
	}
	for id, c := range d.Cmps {
		p, _ := c["p"].(string)
		need, ok := required[p]
		if !ok || (c["unique_id"] == nil && len(c) > 1) {
			h.t.Fatalf("component %s: platform %q, unique_id %v", id, p, c["unique_id"])
		}
		if len(c) == 1 {
			continue // {"p": platform}: a component taken away
		}
		for _, k := range need {
			if s, _ := c[k].(string); s == "" {
				h.t.Fatalf("component %s (%s) lacks %s", id, p, k)
			}
		}
	}
	return d
}

func uniqueIDs(d discovery) []string {
	var ids []string
	for _, c := range d.Cmps {
		if id, ok := c["unique_id"].(string); ok {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	return ids
}

// Every robot appears in Home Assistant (issue 23), checked as Home
// Assistant behaves on a Mosquitto with the ACL `chorus acl` renders: the
// discovery parses as the documentation specifies and stays the same
// across a restart; Home Assistant's online brings it again; the mute
// switch mutes; "say" makes exactly one Message; a command from anyone
// else is refused by the broker, and one that claims another sender is
// dropped by the robot; the action is a button; killed with -9 the robot
// shows unavailable.
func TestHomeAssistantSeesTheRobot(t *testing.T) {
	chorusd, chorus := buildBinaries(t)
	dir := t.TempDir()
	waved := filepath.Join(dir, "waved")
	httpPort := bustest.FreePort(t)
	cfg := filepath.Join(dir, "kyoko.yaml")
	body := fmt.Sprintf("body:\n  actions:\n    - {name: wave, description: Wave hello, driver: command, command: [sh, -c, \"cat > %s\"]}", waved)
	write := func(broker string, enabled bool) {
		os.WriteFile(cfg, []byte(fmt.Sprintf(haRobotYAML, broker, waved, httpPort, enabled, body)), 0o644)
	}
	write("tcp://127.0.0.1:1", true)
	acl, err := exec.Command(chorus, "acl", "-people", "user,watch", cfg).Output() // chorus say speaks as user; the test watches as watch
	if err != nil {
		t.Fatalf("chorus acl: %v", err)
	}
	if !strings.Contains(string(acl), "user homeassistant\ntopic write homeassistant/status\ntopic write chorus/ha/+/+/set\ntopic read homeassistant/#") {
		t.Fatalf("chorus acl renders no rights for Home Assistant:\n%s", acl)
	}
	m := bustest.StartMosquitto(t, bustest.Options{MosquittoACL: string(acl)})
	hostPort := strings.TrimPrefix(m.URL(), "tcp://")
	host, port, _ := strings.Cut(hostPort, ":")
	h := &ha{t: t, host: host, port: port}
	write(m.URL(), true)
	p := start(t, chorusd, cfg, "kyoko")

	d := h.discovery("kyoko")
	for _, e := range []string{"state", "speaking", "utterance", "room_message", "mute", "say", "start", "end", "turn", "action_wave"} {
		if d.Cmps[e] == nil {
			t.Fatalf("no %s entity: %v", e, d.Cmps)
		}
	}
	if a := d.Availability[0]; a.Topic != "chorus/rooms/lab/presence/kyoko" || !strings.Contains(h.retained("homeassistant", a.Topic), `"online":true`) {
		t.Fatalf("availability %+v: %q", a, h.retained("homeassistant", a.Topic))
	}
	for _, e := range []string{"state", "mute", "speaking"} {
		if topic := d.Cmps[e]["state_topic"].(string); h.retained("homeassistant", topic) == "" {
			t.Fatalf("the %s entity's state topic %s holds nothing", e, topic)
		}
	}

	// Home Assistant restarts and says online: the discovery comes again.
	again := make(chan []string, 1)
	go func() { again <- h.sub("homeassistant", "homeassistant/device/kyoko/config", 2, 8*time.Second) }()
	time.Sleep(500 * time.Millisecond)
	h.pub("homeassistant", "homeassistant/status", "online")
	if got := <-again; len(got) != 2 {
		t.Fatalf("after online, %d discoveries (want the retained one and a new one)", len(got))
	}

	// The mute switch mutes: the robot's state says so, and it votes listen.
	mute := d.Cmps["mute"]
	h.pub("homeassistant", mute["command_topic"].(string), mute["payload_on"].(string))
	h.until("homeassistant", mute["state_topic"].(string), func(s string) bool { return s == "ON" })
	h.until("homeassistant", d.Cmps["state"]["state_topic"].(string), func(s string) bool { return s == "muted" })
	votes := make(chan []string, 1)
	go func() { votes <- h.sub("watch", "chorus/rooms/lab/states/kyoko", 1, 8*time.Second) }()
	time.Sleep(300 * time.Millisecond)
	exec.Command(chorus, "say", "-broker", m.URL(), "-room", "lab", "Kyoko, are you there?").Run()
	if v := <-votes; len(v) != 1 || !strings.Contains(v[0], `"state":"listen"`) {
		t.Fatalf("muted, kyoko voted %v", v)
	}
	h.pub("homeassistant", mute["command_topic"].(string), mute["payload_off"].(string))
	h.until("homeassistant", mute["state_topic"].(string), func(s string) bool { return s == "OFF" })

	// Someone else's command: the broker refuses it, nothing changes.
	h.pub("mallory", mute["command_topic"].(string), mute["payload_on"].(string))
	// One that claims another sender: the robot drops it and counts it.
	h.pub("homeassistant", mute["command_topic"].(string), `{"from":"mallory","set":"ON"}`)
	time.Sleep(time.Second)
	if s := h.retained("homeassistant", mute["state_topic"].(string)); s != "OFF" {
		t.Fatalf("a spoofed command muted the robot: %q", s)
	}
	resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/metrics", httpPort))
	if err != nil {
		t.Fatal(err)
	}
	got, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(got), `chorus_bad_input_total{kind="spoofed",source="ha_command"} 1`) {
		t.Fatal("the spoofed command is not counted")
	}

	// "say": exactly one Message from Home Assistant's user, to kyoko.
	said := make(chan []string, 1)
	go func() { said <- h.sub("watch", "chorus/rooms/lab/messages/homeassistant", 2, 4*time.Second) }()
	time.Sleep(300 * time.Millisecond)
	say := d.Cmps["say"]
	text, _ := json.Marshal("Hello from the kitchen")
	payload := strings.Replace(say["command_template"].(string), "{{ value | to_json }}", string(text), 1) // as Home Assistant renders it
	h.pub("homeassistant", say["command_topic"].(string), payload)
	if got := <-said; len(got) != 1 || !strings.Contains(got[0], `"message":"Hello from the kitchen"`) || !strings.Contains(got[0], `"to":["kyoko"]`) {
		t.Fatalf("say made %d Messages: %v", len(got), got)
	}
	h.until("homeassistant", d.Cmps["utterance"]["state_topic"].(string), func(s string) bool { return s != "" })

	// The action is a button.
	wave := d.Cmps["action_wave"]
	h.pub("homeassistant", wave["command_topic"].(string), wave["payload_press"].(string))
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		if _, err := os.Stat(waved); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the wave button did not wave")
		}
	}

	// Restarted, the robot keeps its unique ids. It said when the
	// discovery went out, and stops with one line saying why.
	p.cmd.Process.Signal(os.Interrupt)
	<-p.done
	for _, want := range []string{`msg="homeassistant: discovery published"`, `msg="chorusd stopped" device=kyoko-pi why="interrupt signal received"`} {
		if !strings.Contains(p.log.String(), want) {
			t.Errorf("the log lacks %s:\n%s", want, p.log.String())
		}
	}
	if strings.Contains(p.log.String(), "level=ERROR") {
		t.Errorf("an ERROR on Ctrl-C:\n%s", p.log.String())
	}
	first := uniqueIDs(d)
	p = start(t, chorusd, cfg, "kyoko")
	h.until("homeassistant", "chorus/rooms/lab/presence/kyoko", func(s string) bool { return strings.Contains(s, `"online":true`) })
	if again := uniqueIDs(h.discovery("kyoko")); !slices.Equal(first, again) {
		t.Fatalf("unique ids changed across a restart: %v → %v", first, again)
	}

	// Its wave taken away, the robot takes the button out of Home
	// Assistant: the component comes as {"p": "button"} alone.
	p.cmd.Process.Signal(os.Interrupt)
	<-p.done
	body = ""
	write(m.URL(), true)
	p = start(t, chorusd, cfg, "kyoko")
	h.until("homeassistant", "homeassistant/device/kyoko/config", func(s string) bool { return strings.Contains(s, `"action_wave":{"p":"button"}`) })

	// Killed with -9: its Last Will makes it unavailable.
	p.cmd.Process.Kill()
	<-p.done
	pres := h.until("homeassistant", d.Availability[0].Topic, func(s string) bool { return strings.Contains(s, `"online":false`) })
	t.Logf("killed with -9, its availability topic holds %s: %q renders offline", pres, d.Availability[0].ValueTemplate)

	// Turned off, the robot takes itself out of Home Assistant.
	write(m.URL(), false)
	p = start(t, chorusd, cfg, "kyoko")
	h.until("homeassistant", "homeassistant/device/kyoko/config", func(s string) bool { return s == "" })
	if s := h.retained("homeassistant", "chorus/ha/kyoko/utterance"); s != "" {
		t.Fatalf("out of Home Assistant, the robot's last words stay retained: %q", s)
	}
}

const haEmbeddedYAML = `version: 1
device: {id: %[1]s-pi}
room: {name: lab, members: [kyoko, aya], floor: %[2]t, vote_timeout: 1s, pause: 10ms}
mqtt: {broker: "tcp://127.0.0.1:%[3]d"%[4]s}
companion: {id: %[1]s, name: %[1]s, sample_lines: ["I like tea."], language: en}
drivers: {audio: {kind: null}, tts: {kind: tone}}
homeassistant: {enabled: true}
http: {listen: "off"}
`

// Issue 27, items 3 and 4: two robots of one room, one hosting the
// embedded broker, both in Home Assistant. The embedded broker serves the
// other robot as a Mosquitto configured by `chorus acl` does: its
// discovery and states reach Home Assistant. And as on Mosquitto, a
// client without a username reads the room with `mosquitto_sub -t
// 'chorus/#'`.
func TestHomeAssistantSeesEveryRobotOnTheEmbeddedBroker(t *testing.T) {
	chorusd, _ := buildBinaries(t)
	dir := t.TempDir()
	port := bustest.FreePort(t)
	embedded := fmt.Sprintf(", embedded: {enabled: true, listen: \"127.0.0.1:%d\", allow_anonymous: true}", port)
	for _, r := range []struct {
		id    string
		floor bool
		extra string
	}{{"kyoko", true, embedded}, {"aya", false, ""}} {
		cfg := filepath.Join(dir, r.id+".yaml")
		os.WriteFile(cfg, []byte(fmt.Sprintf(haEmbeddedYAML, r.id, r.floor, port, r.extra)), 0o644)
		start(t, chorusd, cfg, r.id)
		if r.id == "kyoko" {
			waitListening(t, port)
		}
	}
	h := &ha{t: t, host: "127.0.0.1", port: fmt.Sprint(port)}
	for _, node := range []string{"kyoko", "aya"} {
		d := h.discovery(node)
		topic := d.Cmps["state"]["state_topic"].(string)
		h.until("homeassistant", topic, func(s string) bool { return s != "" })
	}
	// Anonymous, as `mosquitto_sub -t 'chorus/#'` against a robot.
	out, _ := exec.Command("mosquitto_sub", "-h", "127.0.0.1", "-p", fmt.Sprint(port), "-t", "chorus/#", "-v", "-W", "3", "-C", "100").CombinedOutput()
	if !strings.Contains(string(out), "chorus/rooms/lab/presence/") {
		t.Fatalf("an anonymous mosquitto_sub -t 'chorus/#' read nothing of the room: %s", out)
	}
}

// waitListening waits until something accepts connections on port.
func waitListening(t *testing.T, port int) {
	t.Helper()
	for deadline := time.Now().Add(15 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if c, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", port)); err == nil {
			c.Close()
			return
		}
	}
	t.Fatalf("nothing listens on port %d", port)
}
