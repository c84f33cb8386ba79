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
