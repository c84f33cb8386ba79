package daemon

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chorus-robotics/chorus/drivers/mcp/mcptest"
	"github.com/chorus-robotics/chorus/runtime/brain/llm/llmtest"
	"github.com/chorus-robotics/chorus/runtime/bus/bustest"
	"github.com/chorus-robotics/chorus/runtime/protocol"
	"github.com/chorus-robotics/chorus/runtime/tool"
)

// A room of three robots, each with Home Assistant's tools (tools.mcp)
// and a model that turns on what it is asked to: the person asks for the
// kitchen light once, every robot's model asks for HassTurnOn in its
// vote, and Home Assistant receives it exactly once — from the robot the
// room granted the turn, whose words say what Home Assistant answered.
func TestAskedForTheKitchenLightTheRoomTurnsItOnOnce(t *testing.T) {
	for _, tc := range []struct {
		name       string
		afterWords bool
	}{{"the tool first", false}, {"the draft first, then the tool", true}} {
		t.Run(tc.name, func(t *testing.T) { turnsItOnOnce(t, tc.afterWords) })
	}
}

func turnsItOnOnce(t *testing.T, afterWords bool) {
	ha, model := homeAndModel(t)
	model.Act = &llmtest.Act{Tool: "ha_HassTurnOn", When: "kitchen light", Args: `{"name":"kitchen light"}`, AfterWords: afterWords,
		Say: func(result string) string {
			if strings.Contains(result, `"action_done"`) && strings.Contains(result, "light.kitchen") {
				return "Done: the kitchen light is on."
			}
			return "Sorry, Home Assistant did not turn it on."
		}}
	defer func() {
		if p := model.Problems(); len(p) > 0 {
			t.Errorf("the model server saw bad requests: %v", p)
		}
	}()
	br := bustest.StartEmbedded(t, bustest.Options{})
	robots := []string{"kyoko", "ann", "ben"}
	var daemons []*Daemon
	for i, id := range robots {
		yaml := fmt.Sprintf(`version: 1
device: {id: %[1]s}
room: {name: lab, members: [kyoko, ann, ben], floor: %[2]t, vote_timeout: 3s, pause: 10ms}
mqtt: {broker: "%[3]s"}
companion: {id: %[1]s, name: %[1]s, sample_lines: ["Hi."], language: en}
brain: {provider: openai, base_url: "%[4]s", model: qwen2.5-7b, timeout: 10s}
drivers:
  audio: {kind: null}
  tts: {kind: tone}
tools:
  mcp:
    - {name: ha, url: "%[5]s", token_env: CHORUS_TEST_HA_TOKEN, allow: [HassTurnOn, HassTurnOff]}
http: {listen: "127.0.0.1:%[6]d"}
`, id, i == 0, br.URL(), model.BaseURL(), ha.URL(), bustest.FreePort(t))
		d, stop, _ := start(t, load(t, yaml))
		defer stop()
		daemons = append(daemons, d)
	}
	waitOffered(t, "ha_HassTurnOn", daemons...)
	ctx := context.Background()
	obs, msgs, closeWatch := watchLab(t, br.URL())
	defer closeWatch()
	if err := obs.SendMessage(ctx, protocol.NewMessage(protocol.NewID(), "user", nil, "Please turn on the kitchen light.", "")); err != nil {
		t.Fatal(err)
	}
	said := firstAnswer(t, msgs)
	time.Sleep(500 * time.Millisecond) // a second call would have come by now
	turnedOnOnce(t, ha, "name", "kitchen light")
	if said.Params.Message != "Done: the kitchen light is on." {
		t.Errorf("%s said %q, want the words from Home Assistant's answer", said.Params.From, said.Params.Message)
	}
	if model.Acted() < len(robots) {
		t.Errorf("the model asked for the tool %d times, want at least once per robot's vote (%d)", model.Acted(), len(robots))
	}
}

// A card's condition that executes a tool (aikyo's execute): the person
// says they are cold, the model judges it so, and the robot granted the
// turn runs the condition's HassTurnOn with the room the model heard,
// then says what Home Assistant answered. The model itself calls nothing.
func TestAConditionTurnsOnTheHeater(t *testing.T) {
	for _, draft := range []bool{true, false} {
		t.Run(fmt.Sprintf("draft %v", draft), func(t *testing.T) { conditionTurnsOnTheHeater(t, draft) })
	}
}

// conditionTurnsOnTheHeater: with the draft in the vote's call, or the
// words in a second call once granted (brain.draft: false).
func conditionTurnsOnTheHeater(t *testing.T, draft bool) {
	ha, model := homeAndModel(t)
	model.Events = func(prompt string) map[string]any {
		return map[string]any{"cold": strings.Contains(prompt, "cold"), "area": "Kitchen"}
	}
	model.Act = &llmtest.Act{Tool: "ha_HassTurnOn", When: "\x00the model never calls it itself",
		Say: func(result string) string {
			if strings.Contains(result, `"action_done"`) {
				return "I turned on the kitchen lights to warm you up."
			}
			return "Home Assistant said no: " + result
		}}
	br := bustest.StartEmbedded(t, bustest.Options{})
	yaml := fmt.Sprintf(`version: 1
device: {id: kyoko}
room: {name: lab, members: [kyoko], floor: true, vote_timeout: 3s, pause: 10ms}
mqtt: {broker: "%s"}
companion:
  id: kyoko
  name: Kyoko
  language: en
  events:
    params:
      type: object
      properties:
        cold: {type: boolean, description: "Does the person say they are cold?"}
        area: {type: string, description: "Which room is the person in?"}
    conditions:
      - expression: cold == true
        instruction: Tell them you have warmed the room.
        execute:
          - {tool: ha_HassTurnOn, args: {area: "${area}", domain: [light]}}
brain: {provider: openai, base_url: "%s", model: qwen2.5-7b, timeout: 10s, draft: %t}
drivers:
  audio: {kind: null}
  tts: {kind: tone}
tools:
  mcp:
    - {name: ha, url: "%s", token_env: CHORUS_TEST_HA_TOKEN, allow: [HassTurnOn]}
http: {listen: "127.0.0.1:%d"}
`, br.URL(), model.BaseURL(), draft, ha.URL(), bustest.FreePort(t))
	d, stop, _ := start(t, load(t, yaml))
	defer stop()
	waitOffered(t, "ha_HassTurnOn", d)
	obs, msgs, closeWatch := watchLab(t, br.URL())
	defer closeWatch()
	if err := obs.SendMessage(context.Background(), protocol.NewMessage(protocol.NewID(), "user", nil, "Brr, I am so cold.", "")); err != nil {
		t.Fatal(err)
	}
	said := firstAnswer(t, msgs)
	turnedOnOnce(t, ha, "area", "Kitchen")
	if said.Params.Message != "I turned on the kitchen lights to warm you up." {
		t.Errorf("kyoko said %q", said.Params.Message)
	}
	if model.Acted() != 0 {
		t.Errorf("the model called the tool itself %d times", model.Acted())
	}
}

// waitOffered waits until each daemon's tool registry offers the model
// the tool name: Home Assistant having answered the list is not enough,
// the robot must have read it (CI saw a turn start in between).
func waitOffered(t *testing.T, name string, daemons ...*Daemon) {
	t.Helper()
	offered := func(d *Daemon) bool {
		r := d.tools.Load()
		return r != nil && slices.ContainsFunc(r.Tools(tool.ForModel), func(x tool.Tool) bool { return x.Name == name })
	}
	for _, d := range daemons {
		for deadline := time.Now().Add(10 * time.Second); !offered(d); time.Sleep(20 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("the robot was never offered %s", name)
			}
		}
	}
}

// firstAnswer is the first Message of msgs from a robot (not the user's).
func firstAnswer(t *testing.T, msgs <-chan protocol.Message) protocol.Message {
	t.Helper()
	for {
		select {
		case m := <-msgs:
			if m.Params.From != "user" {
				return m
			}
		case <-time.After(20 * time.Second):
			t.Fatal("no robot answered")
		}
	}
}

// turnedOnOnce checks Home Assistant received one HassTurnOn whose
// argument key was value, and the kitchen light is on.
func turnedOnOnce(t *testing.T, ha *mcptest.HomeAssistant, key, value string) {
	t.Helper()
	calls := ha.Calls()
	if len(calls) != 1 || calls[0].Name != "HassTurnOn" || calls[0].Args[key] != value {
		t.Fatalf("Home Assistant received %+v, want one HassTurnOn {%s: %s}", calls, key, value)
	}
	if !ha.Light("light.kitchen") {
		t.Error("the kitchen light is off")
	}
}

// homeAndModel are a fake Home Assistant whose token is in
// CHORUS_TEST_HA_TOKEN and a fake model that answers people only, at a
// real model's pace (0.4 s to the first token, 60 tokens/s: the votes
// leave, and the grant comes, while the draft is written).
func homeAndModel(t *testing.T) (*mcptest.HomeAssistant, *llmtest.Server) {
	t.Helper()
	const token = "ha-token-for-the-robots"
	t.Setenv("CHORUS_TEST_HA_TOKEN", token)
	model := llmtest.New()
	t.Cleanup(model.Close)
	model.ClosingAfter, model.OnlyUsers = 100, true
	model.Latency, model.TokensPerSecond = 400*time.Millisecond, 60
	return mcptest.NewHomeAssistant(t, token), model
}
