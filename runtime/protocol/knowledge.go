package protocol

import (
	"encoding/json"
	"unicode/utf8"
)

// Knowledge a body declares (issue 29: "knowledge a bridge client declares
// for its companion (as bridge bodies declare actions)"): a body behind
// the WebSocket bridge names tools its companion's model may call for what
// it needs to know (the weather the kiosk shows, a shop's opening hours),
// in a knowledge.declare request, and is asked one with a query of type
// "knowledge", {name, args} → {text}. They are declared as actions are
// (action.go, action_frames.go): the same names, description bound and
// JSON Schema object; their parameters' validity as JSON Schema is
// runtime/schema's to say.

// MethodKnowledgeDeclare is the method of a body's knowledge declaration.
const MethodKnowledgeDeclare = "knowledge.declare"

// TypeKnowledge is the query type of a knowledge tool's call:
// KnowledgeRequest → KnowledgeResult.
const TypeKnowledge = "knowledge"

// Bounds of a knowledge declaration and its answer.
const (
	MaxKnowledgeDefs = 16   // knowledge tools one body declares
	MaxKnowledgeText = 2000 // characters of an answer's text (what a model is given)
)

// MaxKnowledgeDeclaration bounds the bytes of a declaration's list:
// MaxKnowledgeDefs tools of the largest parameters and description (the
// description JSON-escaped).
const MaxKnowledgeDeclaration = MaxKnowledgeDefs * (MaxActionSchema + 6*MaxActionDescription + 512)

// KnowledgeDef declares one knowledge tool of a body: what the model is
// told (name, description) and the JSON Schema its arguments must follow
// (an object schema).
type KnowledgeDef struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	Parameters  json.RawMessage `json:"parameters"`
}

// Validate checks a declaration's shape as an ActionDef's: the name (as
// an action's), the description's size, and that the parameters are a
// JSON object that describes an object.
func (d KnowledgeDef) Validate() error {
	c := checker{typ: "knowledge-def"}
	d.check(&c, "")
	return c.done()
}

func (d KnowledgeDef) check(c *checker, at string) {
	checkTool(c, at, d.Name, d.Description, "what the model is told the tool answers", "parameters", d.Parameters)
}

// KnowledgeDeclaration is the params of a knowledge.declare request: a
// body's knowledge tools.
type KnowledgeDeclaration struct {
	Knowledge []KnowledgeDef `json:"knowledge"`
}

// DecodeKnowledgeDeclaration decodes and validates a knowledge.declare's
// params: no unknown field, at most MaxKnowledgeDefs tools, each checked
// as KnowledgeDef.Validate does, names unique (an empty list declares
// none). max 0 means MaxKnowledgeDeclaration plus room for the rest.
func DecodeKnowledgeDeclaration(b []byte, max int) (KnowledgeDeclaration, error) {
	const typ = "knowledge-declaration"
	if max <= 0 {
		max = MaxKnowledgeDeclaration + 1024
	}
	var w struct {
		Knowledge json.RawMessage `json:"knowledge"`
	}
	if err := decodeBody(typ, b, max, &w); err != nil {
		return KnowledgeDeclaration{}, err
	}
	defs, err := declaredList(typ, "knowledge", "knowledge tools", w.Knowledge, decodeKnowledgeDefs, MaxKnowledgeDeclaration)
	if err != nil {
		return KnowledgeDeclaration{}, err
	}
	return KnowledgeDeclaration{Knowledge: defs}, nil
}

func decodeKnowledgeDefs(b []byte, max int) ([]KnowledgeDef, error) {
	return decodeTools[KnowledgeDef]("knowledge-defs", "knowledge tools", MaxKnowledgeDefs, b, max)
}

func (d KnowledgeDef) toolName() string { return d.Name }

// ValidateKnowledgeDefs checks a list of declarations as
// DecodeKnowledgeDeclaration does: at most MaxKnowledgeDefs, each valid,
// names unique (ignoring case).
func ValidateKnowledgeDefs(defs []KnowledgeDef) error {
	return validateTools("knowledge-defs", "knowledge tools", MaxKnowledgeDefs, defs)
}

// KnowledgeRequest is the body of a knowledge query: which tool, with
// what arguments (a JSON object; absent means {}). The body checks them
// against the tool's parameters.
type KnowledgeRequest struct {
	Name string          `json:"name"`
	Args json.RawMessage `json:"args,omitempty"`
}

// DecodeKnowledgeRequest decodes and validates a knowledge query's body.
// The arguments are checked only for being a JSON object here.
func DecodeKnowledgeRequest(b []byte, max int) (KnowledgeRequest, error) {
	var r KnowledgeRequest
	if err := decodeBody("knowledge", b, max, &r); err != nil {
		return KnowledgeRequest{}, err
	}
	if err := r.Validate(); err != nil {
		return KnowledgeRequest{}, err
	}
	r.Args = objectArgs(r.Args)
	return r, nil
}

// Validate checks a KnowledgeRequest as DecodeKnowledgeRequest does (an
// ActionRequest's rules: the name, arguments a JSON object of at most
// MaxActionArgs bytes).
func (r KnowledgeRequest) Validate() error {
	c := checker{typ: "knowledge"}
	checkCall(&c, r.Name, r.Args)
	return c.done()
}

// KnowledgeResult is the body of a knowledge query's result: the tool's
// answer, text the model is given as data.
type KnowledgeResult struct {
	Text string `json:"text"`
}

// DecodeKnowledgeResult decodes and validates a knowledge result's body:
// text, valid UTF-8 of at most MaxKnowledgeText characters ("" is an
// answer: nothing known).
func DecodeKnowledgeResult(b []byte, max int) (KnowledgeResult, error) {
	var w struct {
		Text *string `json:"text"`
	}
	if err := decodeBody("knowledge-result", b, max, &w); err != nil {
		return KnowledgeResult{}, err
	}
	c := checker{typ: "knowledge-result"}
	switch {
	case w.Text == nil:
		c.fail("text", KindMissing, "required: the tool's answer")
	case !utf8.ValidString(*w.Text):
		c.fail("text", KindInvalid, "must be valid UTF-8")
	case utf8.RuneCountInString(*w.Text) > MaxKnowledgeText:
		c.fail("text", KindOversize, "must be at most %d characters, got %d", MaxKnowledgeText, utf8.RuneCountInString(*w.Text))
	}
	if err := c.done(); err != nil {
		return KnowledgeResult{}, err
	}
	return KnowledgeResult{Text: *w.Text}, nil
}
