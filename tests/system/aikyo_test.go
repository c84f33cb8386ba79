package system

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/chorus-robotics/chorus/runtime/bus"
	"github.com/chorus-robotics/chorus/runtime/bus/bustest"
	"github.com/chorus-robotics/chorus/runtime/room"
	"github.com/chorus-robotics/chorus/runtime/topic"
)

// aikyoBoxYAML is a device whose companion bot speaks through a body
// behind the bridge (web-bot), in a room with ann, under the default
// overlapped turns; it runs the floor and the embedded broker.
const aikyoBoxYAML = `version: 1
device: {id: box}
room: {name: lab, members: [ann, bot], floor: true, vote_timeout: 3s}
mqtt: {broker: "tcp://127.0.0.1:%[1]d", embedded: {enabled: true, listen: "127.0.0.1:%[1]d", allow_anonymous: true}}
companion:
  id: bot
  name: Bot
  sample_lines: ["I am a robot in a browser.", "Nice weather."]
  language: en
  body: web-bot
brain: {provider: rule, closing_after: 8}
drivers: {camera: {kind: none}, audio: {kind: null}, tts: {kind: tone}}
http:
  listen: "127.0.0.1:%[2]d"
  websocket: {enabled: true, tokens_file: %[3]s}
log: {level: debug}
`

// aikyoAnnYAML is ann, a robot with its own body, whose voice takes as
// long as its audio would play.
const aikyoAnnYAML = `version: 1
device: {id: dev-ann}
room: {name: lab, members: [ann, bot], vote_timeout: 3s}
mqtt: {broker: "tcp://127.0.0.1:%d"}
companion:
  id: ann
  name: Ann
  sample_lines: ["I am Ann, a robot with a speaker.", "Nice weather."]
  language: en
brain: {provider: rule, closing_after: 8}
drivers: {audio: {kind: null, paced: true}, tts: {kind: tone}}
http: {listen: "off"}
log: {level: debug}
`

// An unchanged aikyo client as a body does not know the speak hold: it
// plays what it is sent at once. In a room with another robot and the
// default overlapped turns, its companion hands it its words only when
// the floor is free — every speak query reaches the aikyo body after the
// voice of ann, the other robot, has ended (ann's statuses say when it
// began and how long it lasted, in the same machine's clock as the
// body's arrival times).
func TestAikyoBodyWaitsForTheOtherVoice(t *testing.T) {
	chorusd, chorus := buildBinaries(t)
	needNode(t)
	dir := t.TempDir()
	tokens := filepath.Join(dir, "tokens.yaml")
	os.WriteFile(tokens, []byte(fmt.Sprintf("- {token: %s, role: device, name: web-bot}\n", e2eDeviceToken)), 0o600)
	mqttPort, httpPort := bustest.FreePort(t), bustest.FreePort(t)
	box := filepath.Join(dir, "box.yaml")
	os.WriteFile(box, []byte(fmt.Sprintf(aikyoBoxYAML, mqttPort, httpPort, tokens)), 0o644)
	base := fmt.Sprintf("127.0.0.1:%d", httpPort)
	waitHealthy(t, start(t, chorusd, box, "box"), base)
	node := startNode(t, "ws://"+base+"/?token="+e2eDeviceToken, filepath.Join(needNode(t), "frame.jpg"))
	if !node.opened() {
		t.Fatal("the aikyo client did not connect")
	}
	url := fmt.Sprintf("tcp://127.0.0.1:%d", mqttPort)
	annCfg := filepath.Join(dir, "ann.yaml")
	os.WriteFile(annCfg, []byte(fmt.Sprintf(aikyoAnnYAML, mqttPort)), 0o644)
	start(t, chorusd, annCfg, "ann")

	// ann's voices, as the room hears their ends.
	type span struct{ from, to time.Time }
	var mu sync.Mutex
	var voices []span
	var botEnds []int // the lengths bot's ended voices were announced with
	b, err := bus.Dial(context.Background(), bus.Options{Broker: url, ClientID: "voices-" + t.Name(), Username: "observer"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	r := room.New(b, topic.New(""), "lab", nil, nil)
	err = r.OnSpeaking(context.Background(), func(e room.SpeakingEvent) {
		s := e.Speaking
		if e.Cleared || s.Speaking || s.StartedAt.IsZero() {
			return
		}
		mu.Lock()
		defer mu.Unlock()
		switch e.ID {
		case "ann":
			voices = append(voices, span{s.StartedAt, s.StartedAt.Add(time.Duration(s.DurationMs) * time.Millisecond)})
		case "bot":
			botEnds = append(botEnds, s.DurationMs)
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	o := observe(t, url)
	o.waitOnline(t, "ann", "bot")
	time.Sleep(700 * time.Millisecond) // the floor claims the room after its join wait

	say(t, chorus, url, "Hello robots, how are you?")
	spoke, _, ok := o.untilRest(60 * time.Second)
	if !ok {
		t.Fatalf("the room did not rest within 60 s: %v", spoke)
	}
	time.Sleep(500 * time.Millisecond) // the body's last lines

	mu.Lock()
	defer mu.Unlock()
	after := 0 // speak queries that followed a voice of ann
	for _, q := range node.queries("speak") {
		at := time.UnixMilli(int64(q["at"].(float64)))
		for _, v := range voices {
			if v.from.Before(at) && at.Before(v.to) {
				t.Errorf("the aikyo body was asked to say %q at %s, during ann's voice %s–%s",
					q["message"], at.Format("15:04:05.000"), v.from.Format("15:04:05.000"), v.to.Format("15:04:05.000"))
			}
		}
		for _, v := range voices {
			if v.to.Before(at) {
				after++
				break
			}
		}
	}
	// The aikyo body answers a speak at once, with no length: its voice
	// counts as the speech estimate, never as 0 ms.
	for _, d := range botEnds {
		if d <= 0 {
			t.Errorf("bot's voice ended with %d ms announced (all: %v)", d, botEnds)
		}
	}
	if after < 2 || spoke["ann"] < 2 {
		t.Fatalf("too short a conversation to tell: %d speak queries after a voice of ann, %v Messages", after, spoke)
	}
	t.Logf("%d speak queries at the aikyo body, %d after a voice of ann; %d voices of ann; Messages %v", len(node.queries("speak")), after, len(voices), spoke)
}
