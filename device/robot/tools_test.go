package robot

import (
	"strings"
	"testing"
)

func TestToolsConfig(t *testing.T) {
	base := "version: 1\ndevice: {id: dev1}\nroom: {name: lab, members: [k]}\nmqtt: {broker: \"tcp://127.0.0.1:1883\"}\n"
	ha := `{name: ha, url: "http://homeassistant.local:8123/api/mcp", token_env: HA_TOKEN, allow: [HassTurnOn]}`
	for _, c := range []struct{ tools, want string }{
		{"tools: {mcp: [" + ha + "]}", ""},
		{"tools: {per_turn: 2, mcp: [" + ha + "]}", ""},
		{"tools: {per_turn: 40}", "tools.per_turn: must be from 1 to 16, got 40"},
		{`tools: {mcp: [{name: "h a", url: "http://h/api/mcp", allow: [X]}]}`, `tools.mcp[0].name: must be 1 to 16 letters, digits or _`},
		{`tools: {mcp: [{name: ha, url: "homeassistant:8123", allow: [X]}]}`, `tools.mcp[0].url: must be the server's streamable HTTP endpoint`},
		{`tools: {mcp: [{name: ha, url: "http://h/api/mcp"}]}`, `tools.mcp[0].allow: name the server's tools the robot may use`},
		{`tools: {mcp: [{name: ha, url: "http://h/api/mcp", allow: ["Hass Turn On"]}]}`, `tools.mcp[0].allow[0]: "Hass Turn On": a tool's name is letters, digits`},
		{`tools: {mcp: [{name: ha, url: "http://h/api/mcp", token_env: A, token_file: b, allow: [X]}]}`, "tools.mcp[0].token_file: set either token_env or token_file, not both"},
		{`tools: {mcp: [{name: ha, url: "http://h/api/mcp", allow: [X], timeout: 5m}]}`, "tools.mcp[0].timeout: must be from 0"},
		{"tools: {mcp: [" + ha + ", " + ha + "]}", `tools.mcp[1].name: "ha" names two servers`},
		{`tools: {mcp: [{name: ha, url: "http://h/api/mcp", allow: [X], colour: red}]}`, "colour"},
	} {
		wantDecode(t, c.tools, base+c.tools+"\n", c.want)
	}
	c, err := Decode(strings.NewReader(base + "tools: {mcp: [" + ha + "]}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if c.Tools.PerTurn != DefaultToolsPerTurn || c.Tools.MCP[0].Timeout == 0 {
		t.Errorf("defaults: %+v", c.Tools)
	}
	t.Setenv("HA_TOKEN", "abc")
	if tok, err := c.MCPToken(0); tok != "abc" || err != nil {
		t.Errorf("token %q, %v", tok, err)
	}
}

func TestConditionToolsMustExist(t *testing.T) {
	base := "version: 1\ndevice: {id: dev1}\nroom: {name: lab, members: [k]}\nmqtt: {broker: \"tcp://127.0.0.1:1883\"}\n" +
		"brain: {provider: openai, base_url: \"http://127.0.0.1:8080/v1\", model: m}\n" +
		"tools: {mcp: [{name: ha, url: \"http://h/api/mcp\", allow: [HassTurnOn]}]}\n"
	card := func(tool string) string {
		return "companion: {id: k, name: K, language: en, events: {params: {type: object, properties: {cold: {type: boolean, description: \"Is the person cold\"}}}, " +
			"conditions: [{expression: cold, execute: [{tool: " + tool + "}]}]}}\n"
	}
	wantDecode(t, "an allowed MCP tool", base+card("ha_HassTurnOn"), "")
	wantDecode(t, "a built-in tool the card's knowledge names", strings.Replace(base+card("date_time"), "language: en,", "language: en, knowledge: [date_time],", 1), "")
	wantDecode(t, "a built-in tool the card's knowledge does not name", base+card("date_time"), `"date_time" is not an action, a built-in tool the card's knowledge names, or an allowed MCP tool`)
	wantDecode(t, "an unknown tool", base+card("ha_HassTurnOff"), `companion.events.conditions[0].execute[0].tool: "ha_HassTurnOff" is not an action, a built-in tool the card's knowledge names, or an allowed MCP tool`)
	c, err := Decode(strings.NewReader(strings.Replace(base, "brain: {provider: openai, base_url: \"http://127.0.0.1:8080/v1\", model: m}\n", "", 1) + card("ha_HassTurnOn")))
	if err != nil {
		t.Fatal(err)
	}
	if w := strings.Join(c.Warnings(), "\n"); !strings.Contains(w, "the rule brain runs no tool") {
		t.Errorf("warnings %q: want the rule brain named", w)
	}
}

func TestHTTPMCPNeedsTheBridge(t *testing.T) {
	base := "version: 1\ndevice: {id: dev1}\nroom: {name: lab, members: [k]}\nmqtt: {broker: \"tcp://127.0.0.1:1883\"}\n"
	card := "companion: {id: k, name: K, language: en}\n"
	wantDecode(t, "with the bridge", base+card+"http: {websocket: {enabled: true}, mcp: true}\n", "")
	wantDecode(t, "without the bridge", base+card+"http: {mcp: true}\n", "http.mcp: serves the robot's tools behind the bridge's tokens")
	wantDecode(t, "without a companion", base+"http: {websocket: {enabled: true}, mcp: true}\n", "http.mcp: serves a companion's tools, and this robot has none")
}

func TestADeviceTokenIsNotTheRobotItself(t *testing.T) {
	c, err := Decode(strings.NewReader("version: 1\ndevice: {id: box}\nroom: {name: lab, members: [k]}\nmqtt: {broker: \"tcp://127.0.0.1:1883\"}\n"))
	if err != nil {
		t.Fatal(err)
	}
	err = c.CheckBridgeTokens([]BridgeToken{{Token: "0123456789abcdef", Role: "device", Name: "box"}})
	if err == nil || !strings.Contains(err.Error(), `device "box" is this robot itself`) {
		t.Errorf("got %v", err)
	}
}
