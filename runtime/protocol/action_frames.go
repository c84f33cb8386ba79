package protocol

import (
	"bytes"
	"encoding/json"
)

// The two frames of a body behind the WebSocket bridge that declares its
// own actions (docs/protocol.md, "The WebSocket bridge's
// frames"): actions.declare, which it sends, and aikyo's Action
// (action.send), which a body that never answers actions is sent instead
// of an action query.

// Methods of the action frames.
const (
	MethodActionsDeclare = "actions.declare"
	MethodActionSend     = "action.send"
)

// How a body takes the action queries addressed to it
// (ActionDeclaration.Delivery).
const (
	// DeliveryQuery: as any query (query.send), answered by the body with
	// an ActionResult.
	DeliveryQuery = "query"
	// DeliveryNotify: as aikyo's Action frame (action.send), never
	// answered; the bridge answers the query for the body.
	DeliveryNotify = "notify"
)

// MaxActionDeclaration bounds the bytes of a declaration's action list:
// MaxActions actions of the largest schema and description (the
// description JSON-escaped).
const MaxActionDeclaration = MaxActions * (MaxActionSchema + 6*MaxActionDescription + 512)

// ActionDeclaration is the params of an actions.declare request: a body's
// actions (validated as DecodeActionDefs does) and how it takes them.
type ActionDeclaration struct {
	Actions  []ActionDef `json:"actions"`
	Delivery string      `json:"delivery"`
}

// DecodeActionDeclaration decodes and validates an actions.declare's
// params: no unknown field, the actions through DecodeActionDefs (at most
// MaxActions, names unique; an empty list declares none), delivery
// "query" (the default) or "notify". Whether each schema is valid JSON
// Schema is runtime/schema's to say. max 0 means MaxActionDeclaration
// plus room for the rest.
func DecodeActionDeclaration(b []byte, max int) (ActionDeclaration, error) {
	const typ = "action-declaration"
	if max <= 0 {
		max = MaxActionDeclaration + 1024
	}
	var w struct {
		Actions  json.RawMessage `json:"actions"`
		Delivery string          `json:"delivery"`
	}
	if err := decodeBody(typ, b, max, &w); err != nil {
		return ActionDeclaration{}, err
	}
	defs, err := declaredList(typ, "actions", "actions", w.Actions, DecodeActionDefs, MaxActionDeclaration)
	if err != nil {
		return ActionDeclaration{}, err
	}
	d := ActionDeclaration{Actions: defs, Delivery: w.Delivery}
	switch d.Delivery {
	case "":
		d.Delivery = DeliveryQuery
	case DeliveryQuery, DeliveryNotify:
	default:
		return ActionDeclaration{}, fieldErr(typ, "delivery", KindInvalid, `must be "query" or "notify", got %.32q`, d.Delivery)
	}
	return d, nil
}

// ActionSend is aikyo's Action frame, {from, name, params}: a companion's
// action told to a body that takes it and never answers (DeliveryNotify).
type ActionSend struct {
	JSONRPC string           `json:"jsonrpc"`
	Method  string           `json:"method"`
	Params  ActionSendParams `json:"params"`
}

// ActionSendParams is the body of an ActionSend: who asked, which action,
// its arguments (a JSON object).
type ActionSendParams struct {
	From   string          `json:"from"`
	Name   string          `json:"name"`
	Params json.RawMessage `json:"params"`
}

// NewActionSend is the Action frame of an action request from companion
// from (its messageId has no place in aikyo's frame).
func NewActionSend(from string, r ActionRequest) ActionSend {
	args := r.Args
	if len(bytes.TrimSpace(args)) == 0 || bytes.Equal(bytes.TrimSpace(args), []byte("null")) {
		args = json.RawMessage("{}")
	}
	return ActionSend{JSONRPC: JSONRPC, Method: MethodActionSend, Params: ActionSendParams{From: from, Name: r.Name, Params: args}}
}

// DecodeActionSend decodes and validates an Action frame.
func DecodeActionSend(b []byte, max int) (ActionSend, error) {
	var a ActionSend
	if err := decodeStrict("action-send", b, max, &a); err != nil {
		return ActionSend{}, err
	}
	c := checker{typ: "action-send"}
	c.literal("jsonrpc", a.JSONRPC, JSONRPC)
	c.literal("method", a.Method, MethodActionSend)
	c.identity("params.from", a.Params.From)
	if why := ValidActionName(a.Params.Name); why != "" {
		c.fail("params.name", KindInvalid, "%s, got %.64q", why, a.Params.Name)
	}
	c.object("params.params", a.Params.Params, true)
	if len(a.Params.Params) > MaxActionArgs {
		c.fail("params.params", KindOversize, "must be at most %d bytes, got %d", MaxActionArgs, len(a.Params.Params))
	}
	if err := c.done(); err != nil {
		return ActionSend{}, err
	}
	return a, nil
}
