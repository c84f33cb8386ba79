package homeassistant

import (
	"context"
	"encoding/json"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chorus-robotics/chorus/runtime/bus"
	"github.com/chorus-robotics/chorus/runtime/bus/bustest"
	"github.com/chorus-robotics/chorus/runtime/metrics"
	"github.com/chorus-robotics/chorus/runtime/protocol"
	"github.com/chorus-robotics/chorus/runtime/topic"
)

func robot() (*Robot, *[]protocol.Message, *[]bool) {
	var said []protocol.Message
	var muted []bool
	var mu sync.Mutex
	r := &Robot{Scheme: topic.New("chorus"), Discovery: "homeassistant", User: "homeassistant", Node: "kyoko", Identity: "kyoko",
		Name: "Kyoko", Model: "Pi 5", Version: "1.0", Room: "lab", Opener: "Hello!", Presence: "chorus/rooms/lab/presence/kyoko",
		Floor: true, Metrics: metrics.New(),
		Actions: []protocol.ActionDef{
			{Name: "nod", Description: "Nod", Schema: json.RawMessage(`{"type":"object","properties":{}}`)},
			{Name: "look", Description: "Look", Schema: json.RawMessage(`{"type":"object","properties":{"angle":{"type":"number"}},"required":["angle"]}`)},
		},
		SetMuted: func(m bool) { mu.Lock(); muted = append(muted, m); mu.Unlock() },
		Say:      func(_ context.Context, m protocol.Message) error { said = append(said, m); return nil },
		End:      func() {},
		Act:      func(context.Context, string) error { return nil },
	}
	r.init()
	return r, &said, &muted
}

// The discovery is the documentation's device payload: the device, the
// origin, availability from the presence, and components each with its
// platform, a unique id stable for the node, and the topics its platform
// needs; only actions without required arguments are buttons.
func TestDiscoveryPayload(t *testing.T) {
	r, _, _ := robot()
	b, err := r.DiscoveryPayload()
	if err != nil {
		t.Fatal(err)
	}
	var d struct {
		Dev  map[string]any            `json:"dev"`
		O    map[string]any            `json:"o"`
		Av   []map[string]string       `json:"availability"`
		Cmps map[string]map[string]any `json:"cmps"`
	}
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatal(err)
	}
	if d.Dev["name"] != "Kyoko" || d.O["name"] != "chorus" || d.Av[0]["topic"] != "chorus/rooms/lab/presence/kyoko" {
		t.Fatalf("payload %s", b)
	}
	want := map[string]string{"state": "sensor", "speaking": "binary_sensor", "utterance": "sensor", "room_message": "sensor",
		"mute": "switch", "say": "text", "start": "button", "end": "button", "turn": "sensor", "action_nod": "button"}
	if len(d.Cmps) != len(want) {
		t.Fatalf("components %v", d.Cmps)
	}
	for e, p := range want {
		c := d.Cmps[e]
		if c["p"] != p || c["unique_id"] != "chorus:kyoko:"+e {
			t.Errorf("%s: %v", e, c)
		}
	}
	if d.Cmps["mute"]["command_topic"] != "chorus/ha/kyoko/mute/set" || d.Cmps["mute"]["state_topic"] != "chorus/ha/kyoko/mute" {
		t.Errorf("mute topics %v", d.Cmps["mute"])
	}
}

func TestCommands(t *testing.T) {
	cases := []struct {
		name, entity, payload string
		kind                  string // the counted rejection, "" for none
		said, muted           int
	}{
		{"mute", "mute", `{"from":"homeassistant","set":"ON"}`, "", 0, 1},
		{"say", "say", `{"from":"homeassistant","text":"Hello there"}`, "", 1, 0},
		{"start", "start", `{"from":"homeassistant","press":true}`, "", 1, 0},
		{"spoofed", "mute", `{"from":"mallory","set":"ON"}`, "spoofed", 0, 0},
		{"not json", "mute", `ON`, "syntax", 0, 0},
		{"unknown field", "mute", `{"from":"homeassistant","set":"ON","also":1}`, "syntax", 0, 0},
		{"bad value", "mute", `{"from":"homeassistant","set":"MAYBE"}`, "invalid", 0, 0},
		{"press on a switch", "mute", `{"from":"homeassistant","press":true}`, "invalid", 0, 0},
		{"empty say", "say", `{"from":"homeassistant","text":""}`, "invalid", 0, 0},
		{"long say", "say", `{"from":"homeassistant","text":"` + strings.Repeat("a", 300) + `"}`, "invalid", 0, 0},
		{"huge", "say", `{"from":"homeassistant","text":"` + strings.Repeat("a", 5000) + `"}`, "oversize", 0, 0},
		{"no such entity", "laser", `{"from":"homeassistant","press":true}`, "unknown", 0, 0},
		{"a button with arguments", "action_look", `{"from":"homeassistant","press":true}`, "unknown", 0, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r, said, muted := robot()
			r.handle(context.Background(), command{entity: c.entity, payload: []byte(c.payload)})
			r.handle(context.Background(), command{entity: c.entity, payload: []byte(c.payload)}) // a copy (at least once)
			if len(*said) != c.said || len(*muted) != c.muted*2 && c.muted > 0 {
				t.Fatalf("said %d, muted %v", len(*said), *muted)
			}
			if c.kind != "" {
				if n := metrics.Value(r.Metrics.BadInput.WithLabelValues("ha_command", c.kind)); n != 2 {
					t.Fatalf("%s counted %v times", c.kind, n)
				}
			}
			if c.said == 1 {
				m := (*said)[0]
				if m.Params.From != "homeassistant" || m.Validate() != nil {
					t.Fatalf("message %+v", m.Params)
				}
			}
		})
	}
}

func FuzzDecodeCommand(f *testing.F) {
	f.Add("mute", []byte(`{"from":"homeassistant","set":"ON"}`))
	f.Add("say", []byte(`{"from":"homeassistant","text":"Hi"}`))
	f.Add("action_nod", []byte(`{"from":"homeassistant","press":true}`))
	f.Fuzz(func(t *testing.T, entity string, payload []byte) {
		r, _, _ := robot()
		r.Act = nil // no goroutines: the decoder and the checks only
		r.handle(context.Background(), command{entity: entity, payload: payload})
	})
}

// A state a full queue dropped is sent again with the next change, even
// to the same value: what Home Assistant shows never stays wrong.
func TestADroppedStateIsSentAgain(t *testing.T) {
	r, _, _ := robot()
	r.out = &bus.Outbox{Size: 1} // never run: the first state fills it
	r.Set(EntityMute, "ON")
	r.Set(EntityState, StateMuted) // dropped
	if _, ok := r.states[EntityState]; ok {
		t.Fatal("a dropped state was recorded as sent")
	}
	r.out = &bus.Outbox{Size: 4}
	r.Set(EntityState, StateMuted)
	if r.states[EntityState] != StateMuted {
		t.Fatal("the same value was not sent again after a drop")
	}
}

// Issue 27: Home Assistant's "Say" box refuses in its own form what the
// robot refuses — blank text, control characters — by the pattern the
// discovery gives it; what the pattern lets through, the robot takes.
func TestSayPatternMatchesWhatTheRobotTakes(t *testing.T) {
	r, said, _ := robot()
	var d struct {
		Cmps map[string]map[string]any `json:"cmps"`
	}
	b, _ := r.DiscoveryPayload()
	json.Unmarshal(b, &d)
	pat, _ := d.Cmps[EntitySay]["pattern"].(string)
	re, err := regexp.Compile(pat)
	if err != nil || pat == "" {
		t.Fatalf("the say box's pattern %q: %v", pat, err)
	}
	for _, text := range []string{"Hello from the kitchen", "  spaced  ", "こんにちは", "tab\there", "bell\a", "\x7f", " ", "", "\n", "new\nline", "c1\u0085"} {
		payload, _ := json.Marshal(map[string]string{"from": "homeassistant", "text": text})
		before := len(*said)
		r.handle(context.Background(), command{entity: EntitySay, payload: payload})
		if took := len(*said) == before+1; re.MatchString(text) != took {
			t.Errorf("%q: the pattern says %v, the robot took it: %v", text, re.MatchString(text), took)
		}
	}
}

// Issue 27: a component taken away leaves no retained state behind: the
// room's turn (the robot no longer hosts the floor) is cleared from the
// broker with the discovery that takes it out of Home Assistant.
func TestATakenAwayComponentsStateIsCleared(t *testing.T) {
	mem := bustest.NewMemory(t)
	old, _, _ := robot()
	old.init()
	b, err := old.DiscoveryPayload()
	if err != nil {
		t.Fatal(err)
	}
	seed := mem.Conn(nil, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	seed.Publish(ctx, "homeassistant/device/kyoko/config", b, true)
	seed.Publish(ctx, "chorus/ha/kyoko/turn", []byte("ann"), true)
	seed.Publish(ctx, "chorus/ha/kyoko/state", []byte("idle"), true)
	mem.Settle()

	r, _, _ := robot()
	r.Floor = false // no longer the floor's host: no turn, no end button
	r.Bus = mem.Conn(nil, nil)
	r.out.Bus = r.Bus // robot() built the outbox before there was a bus
	done := make(chan error, 1)
	go func() { done <- r.Run(ctx) }()
	for deadline := time.Now().Add(5 * time.Second); len(mem.Retained("chorus/ha/kyoko/turn")) != 0; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the taken-away turn's state stays retained: %q", mem.Retained("chorus/ha/kyoko/turn"))
		}
	}
	if string(mem.Retained("chorus/ha/kyoko/state")) != "idle" {
		t.Fatalf("a kept entity's state was cleared too: %q", mem.Retained("chorus/ha/kyoko/state"))
	}
	if d := string(mem.Retained("homeassistant/device/kyoko/config")); !strings.Contains(d, `"turn":{"p":"sensor"}`) {
		t.Fatalf("the discovery does not take the turn away: %s", d)
	}
	cancel()
	<-done
}

// Back on a broker that lost its retained messages (a restart without
// persistence, or the next node of mqtt.brokers), the robot publishes its
// discovery again without waiting for Home Assistant to restart.
func TestDiscoveryIsPublishedAgainAfterAReconnect(t *testing.T) {
	mem := bustest.NewMemory(t)
	r, _, _ := robot()
	conn := mem.Conn(nil, nil)
	r.Bus = conn
	r.out.Bus = r.Bus
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- r.Run(ctx) }()
	const disc = "homeassistant/device/kyoko/config"
	wait := func(what string) {
		t.Helper()
		for deadline := time.Now().Add(5 * time.Second); len(mem.Retained(disc)) == 0; time.Sleep(10 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("no discovery %s", what)
			}
		}
	}
	wait("at the start")
	// The broker forgets it (a fresh node), then the robot is back.
	eraser := mem.Conn(nil, nil)
	eraser.Publish(ctx, disc, nil, true)
	mem.Settle()
	if len(mem.Retained(disc)) != 0 {
		t.Fatal("the discovery was not erased")
	}
	conn.Lose()
	conn.Reconnect()
	wait("after the reconnect")
	cancel()
	<-done
}
