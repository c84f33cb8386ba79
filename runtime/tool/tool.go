// Package tool is a robot's one list of tools: what its model may call
// beside speak (the body's actions, its camera, what it knows, what a
// bridge client declares, the MCP servers the robot is allowed to use)
// and what the robot serves to agents over MCP. A tool is a definition —
// a name, a description, the JSON Schema of its arguments — and how it
// runs (Kind, Call). A new tool is one registration (Registry.Add, or a
// Source for a list that changes); the brain offers the registry's
// definitions and runs a call by its name.
//
// speak stays the one tool that is not here: its arguments are the
// turn's words, and the brain reads them itself.
package tool

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/chorus-robotics/chorus/runtime/protocol"
)

// Kind is how a call of a tool runs.
type Kind uint8

const (
	// Answers: the call is run when the model makes it and its answer
	// read by the model (the date, memory search, a read-only MCP tool,
	// the camera).
	Answers Kind = iota
	// Acts: a call changes the world (Home Assistant's HassTurnOn). It is
	// never run while the robots of a room vote — every robot votes, on
	// words the person may not have finished — only by the robot granted
	// the turn, once, before its words (brain.Thought.Deferred).
	Acts
	// WithWords: a body action (a nod, a light). The brain collects the
	// call; the body does it with the turn's first audio. Call is nil.
	WithWords
)

// Use says who may call a tool.
type Use uint8

const (
	ForModel  Use = 1 << iota // the companion's model, in its turns
	ForAgents                 // agents over the robot's MCP server (device/mcpserve)
)

// Where a tool comes from (Tool.Source), for the rules that allow it.
const (
	FromRobot = ""     // the companion's own (companions_present, date_time, memory_search, vision)
	FromBody  = "body" // the body declared it: an action, or a bridge client's knowledge
	// An MCP server's tool: FromMCP(its name).
)

// FromMCP is the Source of the tools of the MCP server named server
// (tools.mcp[].name).
func FromMCP(server string) string { return "mcp:" + server }

// MCP reports whether t is an MCP server's tool.
func (t Tool) MCP() bool { return strings.HasPrefix(t.Source, "mcp:") }

// Call is one call of a tool: its name, its arguments (a JSON object),
// and whom the call is for — the person the companion is answering, or
// the person an agent's token names. A tool about a person (memory)
// answers about Caller only.
type Call struct {
	Name   string          `json:"tool"`
	Args   json.RawMessage `json:"args,omitempty"`
	Caller string          `json:"-"`
}

// Result is what a call answers: text, or a picture (the camera's).
type Result struct {
	Text  string
	Image string // a picture, base64 (as protocol.VisionResult's)
	MIME  string // the picture's type
}

// Tool is one tool.
type Tool struct {
	Name        string
	Title       string // what an MCP client shows a person ("" : the name)
	Description string
	Parameters  json.RawMessage // a JSON Schema object; nil: no arguments
	Kind        Kind
	Use         Use    // 0: ForModel
	Source      string // FromRobot, FromBody or FromMCP(a server's name)
	// ReadOnly says a call changes nothing (MCP's readOnlyHint, served).
	ReadOnly bool
	// Person says the tool is about its caller: offered only when the
	// companion answers a person (Call.Caller is one).
	Person bool
	// Timeout bounds a call (0: the caller's default).
	Timeout time.Duration
	// Call runs a call; nil for WithWords (the body does it with the
	// words). It is bounded by ctx and must not block past it.
	Call func(ctx context.Context, c Call) (Result, error)
}

// For reports whether u may call t.
func (t Tool) For(u Use) bool {
	if t.Use == 0 {
		return u == ForModel
	}
	return t.Use&u != 0
}

// Schema is t's parameters as a JSON Schema object (an empty object
// schema when it has none); an error when they are not one.
func (t Tool) Schema() (map[string]any, error) {
	if len(t.Parameters) == 0 {
		return map[string]any{"type": "object", "properties": map[string]any{}, "additionalProperties": false}, nil
	}
	var s map[string]any
	if err := json.Unmarshal(t.Parameters, &s); err != nil || s == nil {
		return nil, fmt.Errorf("tool %s: its parameters are not a JSON Schema object", t.Name)
	}
	return s, nil
}

// Actions are a body's actions as tools (WithWords, for the model and
// for agents).
func Actions(defs []protocol.ActionDef) []Tool {
	out := make([]Tool, 0, len(defs))
	for _, d := range defs {
		out = append(out, Tool{Name: d.Name, Description: d.Description, Parameters: d.Schema,
			Kind: WithWords, Use: ForModel | ForAgents, Source: FromBody})
	}
	return out
}

// Find returns the tool of ts named name.
func Find(ts []Tool, name string) (Tool, bool) {
	for _, t := range ts {
		if t.Name == name {
			return t, true
		}
	}
	return Tool{}, false
}

// ValidName reports whether s is a tool name every model provider and
// MCP client takes: letters, digits, _ and -, 1 to 64 of them.
func ValidName(s string) bool {
	if s == "" || len(s) > 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c == '_' || c == '-' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9') {
			return false
		}
	}
	return true
}

// Text makes a tool's Call of f, which answers text from the call's
// arguments.
func Text(f func(ctx context.Context, args json.RawMessage) (string, error)) func(context.Context, Call) (Result, error) {
	return func(ctx context.Context, c Call) (Result, error) {
		text, err := f(ctx, c.Args)
		return Result{Text: text}, err
	}
}
