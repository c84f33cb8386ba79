package protocol

import (
	"bytes"
	"encoding/json"
	"errors"
	"regexp"
	"strings"
	"unicode/utf8"
)

// Body actions (docs/protocol.md, "Action"): a device declares what its
// body can do — each action's name, a description for the model and the
// JSON Schema of its arguments — and one query type, "action", asks for
// one of them. The device checks the arguments against the schema and
// holds its parts to their limits whatever it is asked.

// TypeAction is the query type of an action: ActionRequest → ActionResult.
const TypeAction = "action"

// MetaActions is the metadata key of a Message that lists the actions its
// speaker took with its words (their names, in order).
const MetaActions = "actions"

// Bounds of an action declaration and request.
const (
	MaxActionName        = 64       // bytes: what both model APIs accept as a tool name
	MaxActionDescription = 1024     // bytes
	MaxActionSchema      = 8 << 10  // bytes of a declared JSON Schema
	MaxActionArgs        = 16 << 10 // bytes of a request's arguments
	MaxActions           = 32       // actions one body declares
	MaxActionDetail      = 512      // bytes of a result's detail
)

// ActionDef declares one action of a body: what the model is told (name,
// description) and the JSON Schema its arguments must follow (an object
// schema).
type ActionDef struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	Schema      json.RawMessage `json:"schema"`
}

var actionName = regexp.MustCompile(`^[a-zA-Z][a-zA-Z0-9_-]*$`)

// reservedActions are the tools every brain has already: an action may
// not take their names.
var reservedActions = map[string]bool{"speak": true, "vision": true}

// ValidActionName reports why s cannot name an action, or "" when it can:
// a letter, then letters, digits, '_' or '-' (the tool names the model
// APIs take), at most MaxActionName bytes, and not speak or vision.
func ValidActionName(s string) string {
	switch {
	case s == "":
		return "must not be empty"
	case len(s) > MaxActionName:
		return "must be at most 64 bytes"
	case !actionName.MatchString(s):
		return "must be a letter followed by letters, digits, '_' or '-'"
	case reservedActions[strings.ToLower(s)]:
		return "speak and vision are the brain's own tools"
	}
	return ""
}

// Validate checks a declaration's shape: the name, the description's
// size, and that the schema is a JSON object that describes an object
// (whether it is valid JSON Schema is runtime/schema's to say).
func (d ActionDef) Validate() error {
	c := checker{typ: "action-def"}
	d.check(&c, "")
	return c.done()
}

func (d ActionDef) check(c *checker, at string) {
	checkTool(c, at, d.Name, d.Description, "what the model is told the action does", "schema", d.Schema)
}

// checkTool checks a tool a body declares (an action, a knowledge tool):
// its name, its description (what names what it is for), and its
// arguments' JSON Schema, in field schemaField.
func checkTool(c *checker, at, name, description, what, schemaField string, schema json.RawMessage) {
	if why := ValidActionName(name); why != "" {
		c.fail(at+"name", KindInvalid, "%s, got %.64q", why, name)
	}
	switch {
	case strings.TrimSpace(description) == "":
		c.fail(at+"description", KindMissing, "required: %s", what)
	case len(description) > MaxActionDescription:
		c.fail(at+"description", KindInvalid, "must be at most %d bytes, got %d", MaxActionDescription, len(description))
	case !utf8.ValidString(description):
		c.fail(at+"description", KindInvalid, "must be valid UTF-8")
	}
	s := bytes.TrimSpace(schema)
	switch {
	case len(s) == 0:
		c.fail(at+schemaField, KindMissing, "required: the JSON Schema of the arguments")
	case len(s) > MaxActionSchema:
		c.fail(at+schemaField, KindInvalid, "must be at most %d bytes, got %d", MaxActionSchema, len(s))
	case s[0] != '{':
		c.fail(at+schemaField, KindInvalid, "must be a JSON Schema object")
	default:
		var top struct {
			Type any `json:"type"`
		}
		if err := json.Unmarshal(s, &top); err != nil {
			c.fail(at+schemaField, KindInvalid, "is not JSON: %v", err)
		} else if top.Type != "object" {
			c.fail(at+schemaField, KindInvalid, `must describe an object ("type": "object"), the arguments a tool call carries`)
		}
	}
}

// DecodeActionDefs decodes and validates a body's declared actions: at
// most MaxActions, names unique.
func DecodeActionDefs(b []byte, max int) ([]ActionDef, error) {
	return decodeTools[ActionDef]("action-defs", "actions", MaxActions, b, max)
}

// ValidateActionDefs checks a list of declarations as DecodeActionDefs
// does.
func ValidateActionDefs(defs []ActionDef) error {
	return validateTools("action-defs", "actions", MaxActions, defs)
}

func (d ActionDef) toolName() string { return d.Name }

// tool is what a body declares for its companion's model: an action, a
// knowledge tool.
type tool interface {
	check(c *checker, at string)
	toolName() string
}

// validateTools checks a body's declared tools: at most max, each valid,
// names unique (ignoring case).
func validateTools[T tool](typ, noun string, max int, defs []T) error {
	c := checker{typ: typ}
	if len(defs) > max {
		c.fail("", KindInvalid, "at most %d %s, got %d", max, noun, len(defs))
	}
	seen := map[string]bool{}
	for i, d := range defs {
		at := "[" + itoa(i) + "]."
		d.check(&c, at)
		name := strings.ToLower(d.toolName())
		if seen[name] {
			c.fail(at+"name", KindInvalid, "%q is declared twice", d.toolName())
		}
		seen[name] = true
	}
	return c.done()
}

// decodeTools decodes a list of declared tools strictly and checks it as
// validateTools does.
func decodeTools[T tool](typ, noun string, most int, b []byte, max int) ([]T, error) {
	var defs []T
	if err := decodeStrict(typ, b, max, &defs); err != nil {
		return nil, err
	}
	if err := validateTools(typ, noun, most, defs); err != nil {
		return nil, err
	}
	return defs, nil
}

// declaredList decodes the list field of a declaration (actions.declare's
// actions, knowledge.declare's knowledge): present, a list, each entry's
// errors named under field ("actions[2].name").
func declaredList[T tool](typ, field, noun string, raw json.RawMessage, decode func([]byte, int) ([]T, error), max int) ([]T, error) {
	a := bytes.TrimSpace(raw)
	switch {
	case len(a) == 0 || bytes.Equal(a, []byte("null")):
		return nil, fieldErr(typ, field, KindMissing, "required: the list of the body's %s ([] declares none)", noun)
	case a[0] != '[':
		return nil, fieldErr(typ, field, KindInvalid, "must be a list of %s", noun)
	}
	defs, err := decode(a, max)
	if err != nil {
		var pe *Error
		if !errors.As(err, &pe) {
			return nil, err
		}
		switch {
		case pe.Field == "":
		case pe.Field[0] == '[':
			field += pe.Field
		default:
			field += "[]." + pe.Field // an unknown field of one of them
		}
		return nil, fieldErr(typ, field, pe.Kind, "%s", pe.Msg)
	}
	if defs == nil {
		defs = []T{}
	}
	return defs, nil
}

// ActionRequest is the body of an action query: which action, with what
// arguments (a JSON object; absent means {}). MessageID, when set, ties
// the action to an utterance of the same device: it starts when that
// utterance's audio starts (the gesture goes with the words), or at once
// when the audio is already playing or does not come soon.
type ActionRequest struct {
	Name      string          `json:"name"`
	Args      json.RawMessage `json:"args,omitempty"`
	MessageID string          `json:"messageId,omitempty"`
}

// checkCall checks a call of a declared tool: its name, and arguments
// that are a JSON object of at most MaxActionArgs bytes (or absent).
func checkCall(c *checker, name string, args json.RawMessage) {
	if why := ValidActionName(name); why != "" {
		c.fail("name", KindInvalid, "%s, got %.64q", why, name)
	}
	a := bytes.TrimSpace(args)
	switch {
	case len(a) > MaxActionArgs:
		c.fail("args", KindOversize, "must be at most %d bytes, got %d", MaxActionArgs, len(a))
	case len(a) > 0 && !bytes.Equal(a, []byte("null")) && (a[0] != '{' || !json.Valid(a)):
		c.fail("args", KindInvalid, "must be a JSON object") // a model's call may be anything
	}
}

// objectArgs is a call's arguments, {} when absent.
func objectArgs(args json.RawMessage) json.RawMessage {
	if a := bytes.TrimSpace(args); len(a) == 0 || bytes.Equal(a, []byte("null")) {
		return json.RawMessage("{}")
	}
	return args
}

// DecodeActionRequest decodes and validates an action query's body. The
// arguments are checked only for being a JSON object here: the device
// checks them against the action's schema.
func DecodeActionRequest(b []byte, max int) (ActionRequest, error) {
	var r ActionRequest
	if err := decodeBody("action", b, max, &r); err != nil {
		return ActionRequest{}, err
	}
	if err := r.Validate(); err != nil {
		return ActionRequest{}, err
	}
	r.Args = objectArgs(r.Args)
	return r, nil
}

// Validate checks an ActionRequest as DecodeActionRequest does.
func (r ActionRequest) Validate() error {
	c := checker{typ: "action"}
	checkCall(&c, r.Name, r.Args)
	if r.MessageID != "" {
		c.id("messageId", r.MessageID)
	}
	return c.done()
}

// ActionResult is the body of an action's result: what the part did.
// Replaced says a newer action for the same part ended it early; Detail
// is the driver's word on it (a program's output, the pose's name).
type ActionResult struct {
	Name       string `json:"name"`
	Done       bool   `json:"done"`
	Replaced   bool   `json:"replaced,omitempty"`
	DurationMs int64  `json:"durationMs"`
	Detail     string `json:"detail,omitempty"`
}

// DecodeActionResult decodes and validates an action result's body. A
// body written in another language may answer {} (aikyo's bodies do): it
// reads as done.
func DecodeActionResult(b []byte, max int) (ActionResult, error) {
	var w struct {
		Name       string `json:"name"`
		Done       *bool  `json:"done"`
		Replaced   bool   `json:"replaced"`
		DurationMs int64  `json:"durationMs"`
		Detail     string `json:"detail"`
	}
	if err := decodeBody("action-result", b, max, &w); err != nil {
		return ActionResult{}, err
	}
	c := checker{typ: "action-result"}
	if why := ValidActionName(w.Name); w.Name != "" && why != "" {
		c.fail("name", KindInvalid, "%s", why)
	}
	c.millis("durationMs", w.DurationMs)
	if len(w.Detail) > MaxActionDetail || !utf8.ValidString(w.Detail) {
		c.fail("detail", KindInvalid, "must be valid UTF-8 of at most %d bytes", MaxActionDetail)
	}
	if err := c.done(); err != nil {
		return ActionResult{}, err
	}
	done := w.Done == nil || *w.Done
	return ActionResult{Name: w.Name, Done: done, Replaced: w.Replaced, DurationMs: w.DurationMs, Detail: w.Detail}, nil
}
