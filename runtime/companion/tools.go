package companion

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/chorus-robotics/chorus/runtime/protocol"
	"github.com/chorus-robotics/chorus/runtime/query"
	"github.com/chorus-robotics/chorus/runtime/tool"
)

// Knowledge tool names a card may list (companion.knowledge).
const (
	KnowCompanions = "companions_present"
	KnowDateTime   = "date_time"
	KnowMemory     = "memory_search"
)

// BuiltinKnowledge are the knowledge tools the companion answers itself;
// a card may also list brain.KnowBody or a tool its body declares.
var BuiltinKnowledge = []string{KnowCompanions, KnowDateTime, KnowMemory}

// newTools registers the companion's tools in the robot's registry
// (Config.Registry), in the order a name is claimed: its own (the
// companions present, the date and time, memory search — whether or not
// the card lists them, so no body takes their names), then the body's
// actions (Config.Actions), the MCP servers' tools the robot's config
// allows (Config.Tools), and the knowledge tools the body declares that
// the card allows (Config.Knowledge). A tool whose name is taken is left
// out, said in the log once.
func (c *Companion) newTools() (*tool.Registry, error) {
	r := c.cfg.Registry
	if r == nil {
		r = &tool.Registry{Clash: func(name, source, why string) {
			c.log.Warn("a tool is not offered", "tool", name, "source", source, "why", why)
		}}
	}
	c.presentNow.Store(&[]string{})
	present, clk := &c.presentNow, c.cfg.Clock
	for _, t := range []tool.Tool{
		{Name: KnowCompanions, Description: "The companions present in the room now (their ids).",
			Call: tool.Text(func(context.Context, json.RawMessage) (string, error) {
				b, _ := json.Marshal(*present.Load())
				return string(b), nil
			})},
		{Name: KnowDateTime, Description: "The date, the day of the week and the time here.",
			Call: tool.Text(func(context.Context, json.RawMessage) (string, error) {
				return clk.Now().Format("Monday 2 January 2006, 15:04 MST"), nil
			})},
		{Name: KnowMemory, Person: true,
			Description: "Search what you remember about the person you are answering. Argument: query, a few words.",
			Parameters:  json.RawMessage(`{"type":"object","properties":{"query":{"type":"string"}},"required":["query"]}`),
			Call:        c.memorySearch},
	} {
		if err := r.Add(t); err != nil {
			return nil, fmt.Errorf("companion: %w", err)
		}
	}
	if c.cfg.Device != "" && c.cfg.Actions != nil {
		r.Source(func() []tool.Tool { return query.ActionTools(c.cfg.Queries, c.cfg.Device, c.cfg.Actions()) })
	}
	if c.cfg.Tools != nil {
		r.Source(c.cfg.Tools)
	}
	if c.cfg.Device != "" && c.cfg.Knowledge != nil {
		r.Source(func() []tool.Tool {
			// Only what the card allows claims a name: a tool it does
			// not offer hides nothing.
			return slices.DeleteFunc(query.KnowledgeTools(c.cfg.Queries, c.cfg.Device, c.cfg.Knowledge()), func(t tool.Tool) bool {
				return !c.cfg.Card.AllowsKnowledge(t)
			})
		})
	}
	return r, nil
}

// memorySearch is memory_search: what the companion remembers about the
// caller, the person it answers, that matches the query.
func (c *Companion) memorySearch(_ context.Context, call tool.Call) (tool.Result, error) {
	var q struct {
		Query string `json:"query"`
	}
	if err := json.Unmarshal(call.Args, &q); err != nil {
		return tool.Result{}, fmt.Errorf("memory_search: the arguments must be {\"query\": text}: %w", err)
	}
	if c.mem == nil || call.Caller == "" {
		return tool.Result{Text: "nothing remembered"}, nil
	}
	var lines []string
	for _, f := range c.cfg.Memory.Store.Search(call.Caller, q.Query, 5) {
		b, _ := json.Marshal(map[string]string{"person": f.Person, "text": f.Text})
		lines = append(lines, string(b))
	}
	if len(lines) == 0 {
		return tool.Result{Text: "nothing remembered"}, nil
	}
	return tool.Result{Text: strings.Join(lines, "\n")}, nil
}

// toolsFor are the registry's tools the model is offered for m: the
// body's actions and the MCP servers' tools the robot's config allows;
// the companion's own and the body's knowledge tools that the card's
// knowledge list allows (brain.Card.AllowsKnowledge); a tool about its
// caller (memory search) only when m is a person's and the companion
// remembers people.
func (c *Companion) toolsFor(m protocol.Message) []tool.Tool {
	var out []tool.Tool
	for _, t := range c.tools.Tools(tool.ForModel) {
		switch {
		case t.Kind != tool.WithWords && !c.cfg.Card.AllowsKnowledge(t):
		case t.Person && (c.mem == nil || !c.isUser(m.Params.From)):
		default:
			out = append(out, t)
		}
	}
	return out
}
