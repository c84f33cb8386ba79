package companion_test

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"

	"github.com/chorus-robotics/chorus/runtime/brain"
	"github.com/chorus-robotics/chorus/runtime/brain/braintest"
	"github.com/chorus-robotics/chorus/runtime/companion"
	"github.com/chorus-robotics/chorus/runtime/metrics"
	"github.com/chorus-robotics/chorus/runtime/protocol"
	"github.com/chorus-robotics/chorus/runtime/query"
	"github.com/chorus-robotics/chorus/runtime/tool"
)

// offeredRun runs a companion with card knowledge list, a body that
// declares know, and MCP tools mcpTools; it returns the tools offered to
// its brain for a person's message, as name(source).
func offeredRun(t *testing.T, list []string, know []protocol.KnowledgeDef, mcpTools []tool.Tool) []string {
	var mu sync.Mutex
	var got []string
	speakTuned(t, metrics.New(), func(context.Context, string, json.RawMessage) (any, error) {
		return protocol.SpeakResult{DurationMs: 1}, nil
	}, func(cfg *companion.Config, _ *query.Server) {
		cfg.Card.Knowledge = list
		cfg.Brain = &braintest.Func{ThinkFn: func(ctx context.Context, in brain.Input) (brain.Thought, error) {
			if in.Message.Params.From != "user" {
				return brain.Thought{State: protocol.Listen, Closing: protocol.ClosingNone}, nil
			}
			mu.Lock()
			got = nil
			for _, tl := range in.Tools {
				got = append(got, tl.Name+"("+tl.Source+")")
			}
			mu.Unlock()
			return brain.Thought{State: protocol.Speak, Importance: 5, Closing: protocol.ClosingNone, Draft: "ok"}, nil
		}}
		if know != nil {
			cfg.Knowledge = func() []protocol.KnowledgeDef { return know }
		}
		cfg.Tools = func() []tool.Tool { return mcpTools }
	})
	mu.Lock()
	defer mu.Unlock()
	return got
}

// An MCP server's allowed tool is offered whatever card.knowledge says: a
// body's knowledge tool of the same name neither hides it (the card does
// not allow the body's) nor takes its place (the card allows it: the MCP
// tool came first, and it acts, once) — an outside check found both.
// A server may be named body.
func TestMCPToolsAreNotShadowedByTheBodys(t *testing.T) {
	ha := []tool.Tool{{Name: "ha_HassTurnOn", Description: "turn on", Kind: tool.Acts, Source: tool.FromMCP("ha"),
		Call: tool.Text(func(context.Context, json.RawMessage) (string, error) { return "on", nil })}}
	body := []protocol.KnowledgeDef{{Name: "ha_HassTurnOn", Description: "the kiosk's", Parameters: json.RawMessage(`{"type":"object"}`)}}
	ha = append(ha, tool.Tool{Name: "body_HassTurnOff", Description: "turn off", Kind: tool.Acts, Source: tool.FromMCP("body"),
		Call: tool.Text(func(context.Context, json.RawMessage) (string, error) { return "off", nil })})
	want := "ha_HassTurnOn(mcp:ha),body_HassTurnOff(mcp:body)"
	if got := strings.Join(offeredRun(t, nil, body, ha), ","); got != want {
		t.Errorf("a card that lists no knowledge is offered %s, want %s", got, want)
	}
	if got := strings.Join(offeredRun(t, []string{"body"}, body, ha), ","); got != want {
		t.Errorf("a card that lists body is offered %s, want %s", got, want)
	}
}
