// The card's events (aikyo's companion card, issue 29): parameters the
// model judges in the State's call, and conditions over them that pick
// the turn's instruction. Both brains choose the instruction here.

package brain

import (
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"

	"github.com/chorus-robotics/chorus/runtime/brain/expr"
	"github.com/chorus-robotics/chorus/runtime/tool"
)

// Bounds of a card.
const (
	MaxRole        = 1000 // characters of card.role
	MaxParams      = 16   // event parameters
	MaxConditions  = 16   // event conditions
	MaxInstruction = 1000 // characters of one instruction
	MaxDescription = 500  // characters of one parameter's description
	MaxEnum        = 32   // values of a string parameter's enum
	MaxKnowledge   = 32   // names in card.knowledge
)

// KnownEvents are the event parameters the runtime knows exactly and
// gives a brain in Input.Events, with their JSON Schema types; a
// condition may use them without declaring them. already_replied: the
// companion has itself answered the message's sender before (a person's
// message only; runtime/companion fills it).
var KnownEvents = map[string]string{
	EventAlreadyReplied: "boolean",
}

// EventAlreadyReplied is the known event "the companion has answered this
// person before".
const EventAlreadyReplied = "already_replied"

// Events are a card's events (YAML under companion.events):
//
//	events:
//	  params:
//	    type: object
//	    properties:
//	      need_response: {type: boolean, description: "Does the message need an answer from me?"}
//	  conditions:
//	    - expression: already_replied == false
//	      instruction: Introduce yourself.
//	    - expression: need_response === true
//	      instruction: Answer the question.
//
// Params is a JSON Schema object whose properties are booleans, numbers,
// integers or strings (a string may have an enum), each with a
// description; the model fills them in by their descriptions. A
// condition's expression is runtime/brain/expr's language over the
// params and KnownEvents: the subset of CEL that aikyo's cards write.
type Events struct {
	Params     map[string]any `yaml:"params" json:"params,omitempty"`
	Conditions []Condition    `yaml:"conditions" json:"conditions,omitempty"`
}

// Condition picks Instruction for a turn when Expression holds, and the
// tools the turn runs (Execute, aikyo's execute), in order, when this
// companion is granted it: before its words are written, which read
// their results (Thought.Deferred). At least one of the two.
type Condition struct {
	Expression  string    `yaml:"expression" json:"expression"`
	Instruction string    `yaml:"instruction" json:"instruction,omitempty"`
	Execute     []Execute `yaml:"execute" json:"execute,omitempty"`
}

// Execute is one tool a condition runs: a body action, a knowledge tool
// or an MCP server's (ha_HassTurnOn), by the name the model knows it by.
// Args is its arguments' object; a string "${name}" in it, at any depth,
// is replaced by the event value name (a param or a known event) when the
// condition holds, and left out (with its key) when that value is not
// known.
type Execute struct {
	Tool string         `yaml:"tool" json:"tool"`
	Args map[string]any `yaml:"args" json:"args,omitempty"`
}

// MaxExecute bounds the tools one condition runs.
const MaxExecute = 8

// Executes reports whether a condition of e runs tools.
func (e Events) Executes() bool {
	return slices.ContainsFunc(e.Conditions, func(c Condition) bool { return len(c.Execute) > 0 })
}

// Calls are the tool calls condition c runs with values: its Execute in
// order, each "${name}" argument replaced by values[name].
func (c Condition) Calls(values map[string]any) []tool.Call {
	var out []tool.Call
	for _, x := range c.Execute {
		args, _ := fill(x.Args, values).(map[string]any)
		if args == nil {
			args = map[string]any{}
		}
		b, err := json.Marshal(args)
		if err != nil {
			continue // checked at start (Validate): not with YAML's values
		}
		out = append(out, tool.Call{Name: x.Tool, Args: b})
	}
	return out
}

// fill is v with every "${name}" in it, at any depth, replaced by
// values[name]; an object's key or a list's element whose value is not
// known is left out.
func fill(v any, values map[string]any) any {
	switch v := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(v))
		for k, x := range v {
			if f, ok := filled(x, values); ok {
				out[k] = f
			}
		}
		return out
	case []any:
		out := make([]any, 0, len(v))
		for _, x := range v {
			if f, ok := filled(x, values); ok {
				out = append(out, f)
			}
		}
		return out
	}
	return v
}

func filled(v any, values map[string]any) (any, bool) {
	if name, ok := ref(v); ok {
		known, ok := values[name]
		return known, ok
	}
	return fill(v, values), true
}

// refs are the names of the "${name}" in v, at any depth.
func refs(v any) []string {
	if name, ok := ref(v); ok {
		return []string{name}
	}
	var out []string
	switch v := v.(type) {
	case map[string]any:
		for _, k := range slices.Sorted(maps.Keys(v)) {
			out = append(out, refs(v[k])...)
		}
	case []any:
		for _, x := range v {
			out = append(out, refs(x)...)
		}
	}
	return out
}

// ref is the event value's name in an argument "${name}".
func ref(v any) (string, bool) {
	s, ok := v.(string)
	if !ok || !strings.HasPrefix(s, "${") || !strings.HasSuffix(s, "}") {
		return "", false
	}
	return s[2 : len(s)-1], true
}

// Has reports whether the card has events for the model to judge.
func (e Events) Has() bool { return len(e.Params) > 0 }

// IsZero reports whether e is empty (for omitzero).
func (e Events) IsZero() bool { return len(e.Params) == 0 && len(e.Conditions) == 0 }

var paramKeys = []string{"type", "title", "description", "properties", "required", "additionalProperties"}
var propKeys = []string{"type", "description", "enum", "minimum", "maximum"}

// Validate names the first bad field of e (as card.events.…).
func (e Events) Validate() error {
	const at = "card.events"
	if len(e.Params) == 0 && len(e.Conditions) > 0 {
		return fmt.Errorf("%s.params: required with conditions", at)
	}
	props, err := e.params()
	if err != nil {
		return err
	}
	if len(e.Conditions) > MaxConditions {
		return fmt.Errorf("%s.conditions: at most %d, got %d", at, MaxConditions, len(e.Conditions))
	}
	for i, c := range e.Conditions {
		f := fmt.Sprintf("%s.conditions[%d]", at, i)
		x, err := expr.Parse(c.Expression)
		if err != nil {
			return fmt.Errorf("%s.expression: %v", f, err)
		}
		for _, n := range x.Names() {
			if props[n] == nil && KnownEvents[n] == "" {
				return fmt.Errorf("%s.expression: %q is not a parameter (declare it in events.params)", f, n)
			}
		}
		if ms := x.Maps(); len(ms) > 0 {
			n := ms[0]
			t := KnownEvents[n]
			if p := props[n]; p != nil {
				t, _ = p["type"].(string)
			}
			return fmt.Errorf("%s.expression: %s is a %s parameter: it has no fields to read with %s.… (a parameter is a boolean, a number or a string)", f, n, t, n)
		}
		switch {
		case strings.TrimSpace(c.Instruction) == "" && len(c.Execute) == 0:
			return fmt.Errorf("%s.instruction: must not be empty (or the condition executes tools)", f)
		case len([]rune(c.Instruction)) > MaxInstruction:
			return fmt.Errorf("%s.instruction: longer than %d characters", f, MaxInstruction)
		case len(c.Execute) > MaxExecute:
			return fmt.Errorf("%s.execute: at most %d tools, got %d", f, MaxExecute, len(c.Execute))
		}
		for j, x := range c.Execute {
			if err := x.check(fmt.Sprintf("%s.execute[%d]", f, j), props); err != nil {
				return err
			}
		}
	}
	return nil
}

// check names what is wrong with x (at f): its tool's name, its arguments
// (an object JSON can carry, a "${name}" naming an event value).
func (x Execute) check(f string, props map[string]map[string]any) error {
	if !validTool(x.Tool) {
		return fmt.Errorf("%s.tool: a tool's name is 1 to 64 letters, digits, _, . or -, got %q", f, x.Tool)
	}
	if _, err := json.Marshal(x.Args); err != nil {
		return fmt.Errorf("%s.args: not a JSON object: %v", f, err)
	}
	for _, k := range slices.Sorted(maps.Keys(x.Args)) {
		for _, name := range refs(x.Args[k]) {
			if props[name] == nil && KnownEvents[name] == "" {
				return fmt.Errorf("%s.args.%s: ${%s} is not a parameter (declare it in events.params)", f, k, name)
			}
		}
	}
	return nil
}

func validTool(s string) bool {
	if len(s) == 0 || len(s) > 64 {
		return false
	}
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '.' || r == '-') {
			return false
		}
	}
	return true
}

// params checks the params schema and returns its properties.
func (e Events) params() (map[string]map[string]any, error) {
	const at = "card.events.params"
	out := map[string]map[string]any{}
	if len(e.Params) == 0 {
		return out, nil
	}
	for k := range e.Params {
		if !slices.Contains(paramKeys, k) {
			return nil, fmt.Errorf("%s.%s: not supported (want %s)", at, k, strings.Join(paramKeys, ", "))
		}
	}
	if e.Params["type"] != "object" {
		return nil, fmt.Errorf("%s.type: must be object, got %v", at, e.Params["type"])
	}
	if ap, ok := e.Params["additionalProperties"]; ok && ap != false {
		return nil, fmt.Errorf("%s.additionalProperties: may only be false", at)
	}
	props, ok := e.Params["properties"].(map[string]any)
	if !ok || len(props) == 0 {
		return nil, fmt.Errorf("%s.properties: must be a map of at least one parameter", at)
	}
	if len(props) > MaxParams {
		return nil, fmt.Errorf("%s.properties: at most %d parameters, got %d", at, MaxParams, len(props))
	}
	for _, name := range slices.Sorted(maps.Keys(props)) {
		f := at + ".properties." + name
		if !validIdent(name) {
			return nil, fmt.Errorf("%s: a parameter's name is letters, digits and _, not starting with a digit, up to 64", f)
		}
		p, ok := props[name].(map[string]any)
		if !ok {
			return nil, fmt.Errorf("%s: must be a map (type, description)", f)
		}
		if err := checkParam(f, p); err != nil {
			return nil, err
		}
		out[name] = p
	}
	if req, ok := e.Params["required"]; ok {
		list, ok := req.([]any)
		if !ok {
			return nil, fmt.Errorf("%s.required: must be a list of parameter names", at)
		}
		for i, r := range list {
			if s, _ := r.(string); out[s] == nil {
				return nil, fmt.Errorf("%s.required[%d]: %v is not a parameter", at, i, r)
			}
		}
	}
	return out, nil
}

func checkParam(f string, p map[string]any) error {
	for k := range p {
		if !slices.Contains(propKeys, k) {
			return fmt.Errorf("%s.%s: not supported (want %s)", f, k, strings.Join(propKeys, ", "))
		}
	}
	t, _ := p["type"].(string)
	switch t {
	case "boolean", "number", "integer", "string":
	default:
		return fmt.Errorf("%s.type: must be boolean, number, integer or string, got %v", f, p["type"])
	}
	d, _ := p["description"].(string)
	switch {
	case strings.TrimSpace(d) == "":
		return fmt.Errorf("%s.description: required: it tells the model how to judge it", f)
	case len([]rune(d)) > MaxDescription:
		return fmt.Errorf("%s.description: longer than %d characters", f, MaxDescription)
	}
	if enum, ok := p["enum"]; ok {
		list, ok := enum.([]any)
		if t != "string" || !ok || len(list) == 0 || len(list) > MaxEnum {
			return fmt.Errorf("%s.enum: a string parameter's list of 1 to %d strings", f, MaxEnum)
		}
		for i, v := range list {
			if _, ok := v.(string); !ok {
				return fmt.Errorf("%s.enum[%d]: must be a string, got %v", f, i, v)
			}
		}
	}
	for _, k := range []string{"minimum", "maximum"} {
		if v, ok := p[k]; ok {
			if t != "number" && t != "integer" {
				return fmt.Errorf("%s.%s: only for a number", f, k)
			}
			if _, ok := number(v); !ok {
				return fmt.Errorf("%s.%s: must be a number, got %v", f, k, v)
			}
		}
	}
	return nil
}

// ParamNames are the params' names, sorted: the order they are sent in.
func (e Events) ParamNames() []string {
	props, _ := e.Params["properties"].(map[string]any)
	return slices.Sorted(maps.Keys(props))
}

// Param is one parameter's schema, nil when there is none by that name.
func (e Events) Param(name string) map[string]any {
	props, _ := e.Params["properties"].(map[string]any)
	p, _ := props[name].(map[string]any)
	return p
}

// Check keeps those of the model's values that match the params schema,
// as numbers, bools and strings, and counts the rest (an unknown name, a
// value of the wrong type, out of its range or enum).
func (e Events) Check(values map[string]any) (kept map[string]any, dropped int) {
	kept = map[string]any{}
	for name, v := range values {
		p := e.Param(name)
		if p == nil {
			dropped++
			continue
		}
		if ok := fits(p, v); !ok {
			dropped++
			continue
		}
		if f, isNum := number(v); isNum {
			v = f
		}
		kept[name] = v
	}
	return kept, dropped
}

// fits reports whether v is a value of the parameter p.
func fits(p map[string]any, v any) bool {
	switch p["type"] {
	case "boolean":
		_, ok := v.(bool)
		return ok
	case "string":
		s, ok := v.(string)
		if enum, has := p["enum"].([]any); ok && has {
			return slices.Contains(enum, any(s))
		}
		return ok
	case "number", "integer":
		f, ok := number(v)
		if !ok || math.IsNaN(f) || math.IsInf(f, 0) || p["type"] == "integer" && f != math.Trunc(f) {
			return false
		}
		if lo, has := number(p["minimum"]); has && f < lo {
			return false
		}
		if hi, has := number(p["maximum"]); has && f > hi {
			return false
		}
		return true
	}
	return false
}

func number(v any) (float64, bool) {
	switch x := v.(type) {
	case float64:
		return x, true
	case int:
		return float64(x), true
	case int64:
		return float64(x), true
	case uint64:
		return float64(x), true
	case json.Number:
		f, err := x.Float64()
		return f, err == nil
	}
	return 0, false
}

// Merge is the turn's events: the model's (checked) with the known ones,
// which win.
func Merge(model, known map[string]any) map[string]any {
	if len(model) == 0 && len(known) == 0 {
		return nil
	}
	out := make(map[string]any, len(model)+len(known))
	for k, v := range model {
		out[k] = v
	}
	for k, v := range known {
		out[k] = v
	}
	return out
}

// Instruction is the instruction of the first condition that holds with
// values, or "" when none does (Fired).
func (e Events) Instruction(values map[string]any) string {
	if i := e.Fired(values); i >= 0 {
		return e.Conditions[i].Instruction
	}
	return ""
}

// Fired is the index of the first condition that holds with values, or
// -1 when none does. A condition that names a value not in values, that
// fails on a value's type, or that does not parse, does not hold. Both
// brains choose the turn's instruction with it (Thought.Instruction).
func (e Events) Fired(values map[string]any) int {
	for i, c := range e.Conditions {
		if x, err := expr.Parse(c.Expression); err == nil {
			if ok, err := x.Holds(values); err == nil && ok {
				return i
			}
		}
	}
	return -1
}

// Settle is what the runtime decides before the model is asked, from
// the values it knows exactly: the conditions are taken in order; one
// whose every name is known is evaluated (and dropped when it does not
// hold); the first that holds ends the list. When it is the first left,
// the turn's instruction is settled (instruction, settled true, open
// empty). Otherwise open are the conditions the model's values decide,
// in order, the last of them perhaps one that holds already. With no
// condition left, settled is true and instruction "".
func (e Events) Settle(known map[string]any) (instruction string, settled bool, open []Condition) {
	for _, c := range e.Conditions {
		x, err := expr.Parse(c.Expression)
		if err != nil {
			continue
		}
		if !allKnown(x.Names(), known) {
			open = append(open, c)
			continue
		}
		if ok, err := x.Holds(known); err != nil || !ok {
			continue
		}
		if len(open) == 0 {
			return c.Instruction, true, nil
		}
		return "", false, append(open, Condition{Expression: "true", Instruction: c.Instruction, Execute: c.Execute})
	}
	return "", len(open) == 0, open
}

func allKnown(names []string, known map[string]any) bool {
	for _, n := range names {
		if _, ok := known[n]; !ok {
			return false
		}
	}
	return true
}

// validIdent is a parameter's name: an identifier of runtime/brain/expr.
func validIdent(s string) bool {
	if s == "" || len(s) > 64 || s[0] >= '0' && s[0] <= '9' || s == "true" || s == "false" || s == "null" || s == "in" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9') {
			return false
		}
	}
	return true
}
