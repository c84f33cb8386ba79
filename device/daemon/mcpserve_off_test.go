//go:build !mcpserve

package daemon

import (
	"strings"
	"testing"
)

// A chorusd built without the MCP server refuses a config that asks for
// it, naming the build tag that adds it.
func TestMCPServerNeedsItsBuildTag(t *testing.T) {
	c := load(t, `version: 1
device: {id: bot}
room: {name: lab, members: [bot]}
mqtt: {broker: "tcp://127.0.0.1:1883"}
companion: {id: bot, name: Bot, language: en}
http: {websocket: {enabled: true}, mcp: true}
`)
	err := Check(c)
	if err == nil || !strings.Contains(err.Error(), "http.mcp: this chorusd is built without the MCP server: build it with -tags mcpserve") {
		t.Fatalf("Check: %v", err)
	}
}
