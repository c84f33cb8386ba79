package mcp

import "testing"

// A server's tool is offered under its server's name; dots, which MCP
// allows in a name and the models' APIs do not, become _ (an outside
// check found allow: [light.turn_on] accepted and never offered).
func TestToolName(t *testing.T) {
	for _, tc := range []struct{ server, tool, want string }{
		{"ha", "HassTurnOn", "ha_HassTurnOn"},
		{"ha", "light.turn_on", "ha_light_turn_on"},
		{"kitchen", "a.b-c_d", "kitchen_a_b-c_d"},
	} {
		if got := ToolName(tc.server, tc.tool); got != tc.want {
			t.Errorf("ToolName(%q, %q) = %q, want %q", tc.server, tc.tool, got, tc.want)
		}
	}
}
