package companion

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/chorus-robotics/chorus/runtime/brain"
	"github.com/chorus-robotics/chorus/runtime/protocol"
	"github.com/chorus-robotics/chorus/runtime/query"
)

// knowledge are the tools the card allows its model beside actions:
// the companions present, the date and time, memory search about the
// message's author, the tools the body declares (Config.Knowledge), and
// the MCP servers' tools the robot's config allows (Config.Tools).
//
// The rule for a body's tools: one is offered when the card's knowledge
// list names it or names the word "body" (brain.KnowBody), and never when
// its name is a built-in tool's (companions_present, date_time,
// memory_search, whether or not the card lists them) or one of the body's
// actions (acts): those are said in the log once per name. Its call asks
// the body (Device) a knowledge query, bounded by the brain's context,
// and answers the result's text.
func (c *Companion) knowledge(m protocol.Message, acts []protocol.ActionDef) []brain.Knowledge {
	var out []brain.Knowledge
	if c.cfg.Tools != nil {
		out = append(out, c.cfg.Tools()...) // tools.mcp's allow lists decide
	}
	allowed := c.cfg.Card.Knowledge
	if len(allowed) == 0 {
		return out
	}
	present := c.presentList()
	clk := c.cfg.Clock
	for _, name := range allowed {
		switch name {
		case KnowCompanions:
			out = append(out, brain.Knowledge{Name: name, Description: "The companions present in the room now (their ids).",
				Call: func(context.Context, json.RawMessage) (string, error) {
					b, _ := json.Marshal(present)
					return string(b), nil
				}})
		case KnowDateTime:
			out = append(out, brain.Knowledge{Name: name, Description: "The date, the day of the week and the time here.",
				Call: func(context.Context, json.RawMessage) (string, error) {
					return clk.Now().Format("Monday 2 January 2006, 15:04 MST"), nil
				}})
		case KnowMemory:
			if c.mem == nil || !c.isUser(m.Params.From) {
				continue
			}
			st, p := c.cfg.Memory.Store, m.Params.From
			out = append(out, brain.Knowledge{Name: name,
				Description: "Search what you remember about the person you are answering. Argument: query, a few words.",
				Parameters:  json.RawMessage(`{"type":"object","properties":{"query":{"type":"string"}},"required":["query"]}`),
				Call: func(_ context.Context, args json.RawMessage) (string, error) {
					var q struct {
						Query string `json:"query"`
					}
					if err := json.Unmarshal(args, &q); err != nil {
						return "", fmt.Errorf("memory_search: the arguments must be {\"query\": text}: %w", err)
					}
					var lines []string
					for _, f := range st.Search(p, q.Query, 5) {
						b, _ := json.Marshal(map[string]string{"person": f.Person, "text": f.Text})
						lines = append(lines, string(b))
					}
					if len(lines) == 0 {
						return "nothing remembered", nil
					}
					return strings.Join(lines, "\n"), nil
				}})
		}
	}
	return append(out, c.bodyKnowledge(acts)...)
}

// bodyKnowledge are the knowledge tools the body declares that the card
// allows (the rule is knowledge's).
func (c *Companion) bodyKnowledge(acts []protocol.ActionDef) []brain.Knowledge {
	if c.cfg.Knowledge == nil || c.cfg.Device == "" {
		return nil
	}
	card := c.cfg.Card
	var out []brain.Knowledge
	for _, d := range c.cfg.Knowledge() {
		k := brain.Knowledge{Name: d.Name, Description: d.Description, Parameters: d.Parameters, FromBody: true}
		if !card.AllowsKnowledge(k) {
			continue
		}
		builtin := slices.ContainsFunc(BuiltinKnowledge, func(n string) bool { return strings.EqualFold(n, d.Name) })
		action := slices.ContainsFunc(acts, func(a protocol.ActionDef) bool { return strings.EqualFold(a.Name, d.Name) })
		if builtin || action {
			if _, told := c.knowClash.LoadOrStore(d.Name, true); !told {
				c.log.Warn("the body declared a knowledge tool with the name of a built-in tool or an action; not offered", "tool", d.Name, "body", c.cfg.Device)
			}
			continue
		}
		dev, asker, name := c.cfg.Device, c.cfg.Queries, d.Name
		k.Call = func(ctx context.Context, args json.RawMessage) (string, error) {
			res, err := query.Know(ctx, asker, dev, protocol.KnowledgeRequest{Name: name, Args: args}, 0)
			if err != nil {
				return "", fmt.Errorf("knowledge %s of body %s: %w", name, dev, err)
			}
			return res.Text, nil
		}
		out = append(out, k)
	}
	return out
}

// Knowledge tool names a card may list (companion.knowledge).
const (
	KnowCompanions = "companions_present"
	KnowDateTime   = "date_time"
	KnowMemory     = "memory_search"
)

// BuiltinKnowledge are the knowledge tools the companion answers itself;
// a card may also list brain.KnowBody or a tool its body declares.
var BuiltinKnowledge = []string{KnowCompanions, KnowDateTime, KnowMemory}
