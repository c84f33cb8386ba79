package robot

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/chorus-robotics/chorus/drivers/mcp"
	"github.com/chorus-robotics/chorus/runtime/companion"
	"github.com/chorus-robotics/chorus/runtime/settings"
)

// Tools is the config's tools section: other programs' tools the
// robot's model may use (docs/homeassistant.md, "Home Assistant's tools
// over MCP").
type Tools struct {
	// PerTurn bounds the tool calls one model call runs (knowledge tools
	// too; default 4).
	PerTurn int `yaml:"per_turn"`
	// MCP are the MCP servers whose allowed tools the model is offered.
	MCP []mcp.Settings `yaml:"mcp"`
}

// DefaultToolsPerTurn is tools.per_turn's default.
const DefaultToolsPerTurn = 4

func (c *Config) toolsDefaults() {
	defInt(&c.Tools.PerTurn, DefaultToolsPerTurn)
	for i := range c.Tools.MCP {
		c.Tools.MCP[i].SetDefaults()
	}
}

var (
	serverName = regexp.MustCompile(`^[A-Za-z0-9_]{1,16}$`)
	toolName   = regexp.MustCompile(`^[A-Za-z0-9_.-]{1,64}$`) // what a model's tool may be called (OpenAI's function names)
)

// check reports every bad field of the section to p (its view).
func (t Tools) check(p *settings.Problems) {
	if t.PerTurn < 1 || t.PerTurn > 16 {
		p.Add("per_turn", "must be from 1 to 16, got %d", t.PerTurn)
	}
	if len(t.MCP) > mcp.MaxServers {
		p.Add("mcp", "at most %d servers, got %d", mcp.MaxServers, len(t.MCP))
	}
	names := map[string]bool{}
	for i, s := range t.MCP {
		at := fmt.Sprintf("mcp[%d]", i)
		checkServer(s, p.In(at))
		if names[s.Name] {
			p.Add(at+".name", "%q names two servers: their tools would have one prefix", s.Name)
		}
		names[s.Name] = true
	}
}

func checkServer(s mcp.Settings, p *settings.Problems) {
	if !serverName.MatchString(s.Name) {
		p.Add("name", "must be 1 to 16 letters, digits or _ (it prefixes the server's tools: ha → ha_HassTurnOn), got %q", s.Name)
	}
	if !strings.HasPrefix(s.URL, "http://") && !strings.HasPrefix(s.URL, "https://") {
		p.Add("url", "must be the server's streamable HTTP endpoint, http(s)://host:port/path (Home Assistant: http://homeassistant.local:8123/api/mcp), got %q", s.URL)
	}
	if s.TokenEnv != "" && s.TokenFile != "" {
		p.Add("token_file", "set either token_env or token_file, not both")
	}
	switch {
	case len(s.Allow) == 0:
		p.Add("allow", "name the server's tools the robot may use (HassTurnOn, HassTurnOff, …): none are offered without it")
	case len(s.Allow) > mcp.MaxAllow:
		p.Add("allow", "at most %d tools, got %d", mcp.MaxAllow, len(s.Allow))
	}
	for i, a := range s.Allow {
		if !toolName.MatchString(a) || len(s.Name)+1+len(a) > 64 {
			p.Add(fmt.Sprintf("allow[%d]", i), "%q: a tool's name is letters, digits, _, . and -, and %s is at most 64 characters", a, mcp.ToolName(s.Name, a))
		}
	}
	if s.Timeout < 0 || s.Timeout > time.Minute {
		p.Add("timeout", "must be from 0 (the default, %s) to 1m, got %s", mcp.DefaultCallTimeout, s.Timeout)
	}
}

// MCPToken is the bearer token of tools.mcp[i], from the environment
// variable or the file it names ("" when it names neither).
func (c *Config) MCPToken(i int) (string, error) {
	s := c.Tools.MCP[i]
	field := fmt.Sprintf("tools.mcp[%d].token_env", i)
	if s.TokenEnv == "" && s.TokenFile != "" {
		field = fmt.Sprintf("tools.mcp[%d].token_file", i)
	}
	tok, err := settings.Secret(field, s.TokenEnv, s.TokenFile)
	if err == nil && tok == "" && s.TokenEnv+s.TokenFile != "" {
		return "", fmt.Errorf("%s: the token is empty", field)
	}
	return tok, err
}

// checkExecute names the tools the card's conditions run that nothing
// here offers: a body action, a built-in knowledge tool the card's
// knowledge names, or an MCP server's allowed tool (<name>_<tool>); with the bridge on, a name may
// be a tool a body behind it declares (a warning). A brain without a
// model runs none (a warning).
func (c *Config) checkExecute(p, warn *settings.Problems) {
	card := c.Companion
	if card == nil || !card.Events.Executes() {
		return
	}
	var known []string // built-in tools are offered as the card's knowledge names them
	for _, k := range card.Knowledge {
		if slices.Contains(companion.BuiltinKnowledge, k) {
			known = append(known, k)
		}
	}
	for _, a := range c.Body.Actions {
		known = append(known, a.Name)
	}
	for _, s := range c.Tools.MCP {
		for _, a := range s.Allow {
			known = append(known, mcp.ToolName(s.Name, a))
		}
	}
	if c.Brain.Provider == "rule" {
		warn.Add("companion.events.conditions", "the rule brain runs no tool: a condition's execute needs a model brain (brain.provider)")
	}
	for i, cond := range card.Events.Conditions {
		for j, x := range cond.Execute {
			f := fmt.Sprintf("companion.events.conditions[%d].execute[%d].tool", i, j)
			switch {
			case slices.Contains(known, x.Tool):
			case c.bodyTools():
				warn.Add(f, "%q is not an action, a built-in tool the card's knowledge names, or an allowed MCP tool here: it runs only if the body behind the bridge declares it; known: %s", x.Tool, strings.Join(known, ", "))
			default:
				p.Add(f, "%q is not an action, a built-in tool the card's knowledge names, or an allowed MCP tool (tools.mcp: <name>_<tool>); known: %s", x.Tool, strings.Join(known, ", "))
			}
		}
	}
}
