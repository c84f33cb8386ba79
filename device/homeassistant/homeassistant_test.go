package homeassistant

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/chorus-robotics/chorus/runtime/bus"
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
				if n := testutil.ToFloat64(r.Metrics.BadInput.WithLabelValues("ha_command", c.kind)); n != 2 {
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
