package bridge

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/chorus-robotics/chorus/runtime/protocol"
	"github.com/chorus-robotics/chorus/runtime/schema"
)

// A body's own actions (docs/actions.md: "a body behind the
// bridge may declare its own"): actions.declare in, the declaration kept
// per device while a client of it is connected, and the "notify" delivery
// that tells an aikyo-style body a companion's action as action.send.

// SentDetail is the detail of the result the bridge answers an action
// query with for a body that takes actions as action.send frames.
const SentDetail = "sent to the body as action.send"

// declaration is what a device declared. It is never changed once made:
// a new declaration replaces it whole.
type declaration struct {
	defs    []protocol.ActionDef
	notify  bool                      // delivery "notify": actions go out as action.send
	schemas map[string]*schema.Schema // each action's compiled argument schema, by name
}

// copyDefs is a copy of the declared actions, schemas included; nil when
// there are none.
func (d *declaration) copyDefs() []protocol.ActionDef {
	if d == nil || len(d.defs) == 0 {
		return nil
	}
	out := make([]protocol.ActionDef, len(d.defs))
	for i, a := range d.defs {
		a.Schema = bytes.Clone(a.Schema)
		out[i] = a
	}
	return out
}

// names lists the declared actions for an error message.
func (d *declaration) names() string {
	if len(d.defs) == 0 {
		return "none"
	}
	n := make([]string, len(d.defs))
	for i, a := range d.defs {
		n[i] = a.Name
	}
	return strings.Join(n, ", ")
}

// declare handles actions.declare: a device's client names its body's
// actions (params {actions, delivery}), replacing what the device
// declared before. The declaration is decoded strictly and each schema
// compiled before anything is kept: a refused declaration leaves the old
// one in place.
func (b *Bridge) declare(c *client, rid json.RawMessage, data []byte) {
	if c.tok.Role != Device {
		b.refuse(c, rid, "forbidden", fmt.Sprintf("a %s may not declare actions: actions.declare is a device's", c.tok.Role))
		return
	}
	var req map[string]json.RawMessage // parseFrame read it as an object
	json.Unmarshal(data, &req)
	for k := range req {
		if k != "jsonrpc" && k != "id" && k != "method" && k != "params" {
			b.refuse(c, rid, "invalid", fmt.Sprintf("actions.declare: unknown field %.64q", k))
			return
		}
	}
	if string(req["jsonrpc"]) != `"`+protocol.JSONRPC+`"` {
		b.refuse(c, rid, "invalid", `actions.declare: jsonrpc must be "2.0"`)
		return
	}
	decl, err := protocol.DecodeActionDeclaration(req["params"], 0)
	if err != nil {
		b.refuse(c, rid, "invalid", "actions.declare: "+paramsError(err))
		return
	}
	d := &declaration{defs: decl.Actions, notify: decl.Delivery == protocol.DeliveryNotify, schemas: map[string]*schema.Schema{}}
	for _, a := range decl.Actions {
		s, err := schema.Compile(a.Schema)
		if err != nil {
			b.refuse(c, rid, "invalid", fmt.Sprintf("actions.declare: action %q: %v", a.Name, err))
			return
		}
		d.schemas[a.Name] = s
	}
	b.setDeclaration(c.tok.Name, d)
	b.log.Info("bridge: a body declared its actions", "body", c.tok.Name, "actions", d.names(), "delivery", decl.Delivery)
	b.send(c, mustJSON(map[string]any{"jsonrpc": protocol.JSONRPC, "id": answerID(rid), "result": map[string]int{"declared": len(d.defs)}}))
}

// paramsError names what is wrong with a declaration's params.
func paramsError(err error) string {
	var pe *protocol.Error
	switch {
	case !errors.As(err, &pe):
		return "params: " + err.Error()
	case pe.Field == "":
		return "params: " + pe.Msg
	}
	return "params." + pe.Field + ": " + pe.Msg
}

// setDeclaration keeps device's declaration and tells OnActions; with
// deviceGone, which forgets it, in the order they happened.
func (b *Bridge) setDeclaration(device string, d *declaration) {
	b.actionsMu.Lock()
	defer b.actionsMu.Unlock()
	b.mu.Lock()
	b.decl[device] = d
	b.mu.Unlock()
	if b.cfg.OnActions != nil {
		b.cfg.OnActions(device, d.copyDefs())
	}
}

// Actions returns the actions device declared (a copy), nil when it
// declared none or no client of it is connected.
func (b *Bridge) Actions(device string) []protocol.ActionDef {
	b.mu.Lock()
	d := b.decl[device]
	b.mu.Unlock()
	return d.copyDefs()
}

// notifies returns device's declaration when q is an action query that
// the device takes as action.send (delivery "notify"); nil when q goes to
// it as query.send.
func (b *Bridge) notifies(device string, q protocol.Query) *declaration {
	if q.Method != protocol.MethodQuery || q.Params.Type != protocol.TypeAction {
		return nil
	}
	b.mu.Lock()
	d := b.decl[device]
	b.mu.Unlock()
	if d == nil || !d.notify {
		return nil
	}
	return d
}

// act answers an action query for a body that takes actions as aikyo's
// Action frames and never answers them: a declared action with arguments
// its schema accepts is sent to the device's clients as action.send, and
// the bridge publishes the result (done: sent) as the device; anything
// else gets an error result naming what is wrong. It runs in a bus
// handler: the result goes through the identity's outbox, never waited
// for.
func (b *Bridge) act(device string, id *identity, d *declaration, q protocol.Query) {
	id.asked.answer(q.ID) // the bridge answers it: one from the body would be a second
	res := protocol.QueryResult{JSONRPC: protocol.JSONRPC, ID: q.ID}
	r, err := d.request(device, q.Params.Body)
	switch {
	case err != nil:
		b.m.Reject(b.log, "action", device, string(protocol.KindOf(err)), err)
		res.Error = err.Error()
	case b.toDevice(device, mustJSON(protocol.NewActionSend(q.Params.From, r))) == 0:
		res.Error = fmt.Sprintf("action %s: body %s has no client connected", r.Name, device)
	default:
		body := mustJSON(protocol.ActionResult{Name: r.Name, Done: true, Detail: SentDetail})
		res.Result = &protocol.ResultBody{Success: true, Body: body}
	}
	id.results.Send(b.cfg.Room.Scheme.Results(device), mustJSON(res), false)
}

// refuseMore answers a speak.more for a body behind the bridge with an
// error: such a body serves speak, speak.start and speak.stop, and is
// never sent a speak that is still being written (its companion sends it
// the whole text in one speak), so an append to one goes no further.
func (b *Bridge) refuseMore(device string, id *identity, q protocol.Query) {
	id.asked.answer(q.ID)
	res := protocol.QueryResult{JSONRPC: protocol.JSONRPC, ID: q.ID,
		Error: fmt.Sprintf("%s: body %s is behind the bridge and does not serve it; send it the whole text in one speak", protocol.TypeSpeakMore, device)}
	id.results.Send(b.cfg.Room.Scheme.Results(device), mustJSON(res), false)
}

// request decodes an action query's body and checks it against the
// declaration: a declared action, arguments its schema accepts.
func (d *declaration) request(device string, body json.RawMessage) (protocol.ActionRequest, error) {
	r, err := protocol.DecodeActionRequest(body, 0)
	if err != nil {
		return r, err
	}
	s := d.schemas[r.Name]
	if s == nil {
		return r, fmt.Errorf("action %q: body %s did not declare it (it declared: %s)", r.Name, device, d.names())
	}
	if err := s.Validate(r.Args); err != nil {
		return r, fmt.Errorf("action %q: args: %v", r.Name, err)
	}
	return r, nil
}
