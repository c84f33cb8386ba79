package bridge

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"
	"unicode/utf8"

	"github.com/chorus-robotics/chorus/runtime/protocol"
)

// Frames in: parsed and checked (size, UTF-8, depth, the protocol's
// decoders) before anything reaches the bus; camera.get answered to the
// client that asked.

// inFrame is what a client may send: a Message, a QueryResult, a
// camera.get, a memory request, an actions.declare, a knowledge.declare,
// or any of them inside aikyo's {topic, body} envelope.
type inFrame struct {
	Method string          `json:"method"`
	ID     json.RawMessage `json:"id"`
	Topic  string          `json:"topic"`
	Body   json.RawMessage `json:"body"`
	Result json.RawMessage `json:"result"`
	Error  json.RawMessage `json:"error"`
}

// frameIn is a parsed frame in: what it asks, its id (for the answer),
// and the JSON-RPC object itself (unwrapped from an envelope).
type frameIn struct {
	kind string          // "message", "result", "camera", "memory", "declare", "knowledge", or "" with err set
	rid  json.RawMessage // the frame's id, echoed in the answer
	data []byte
	// method names an unknown method (kind ""), for the refusal.
	method string
}

// maxDepth is how deep a frame may nest: a Message's metadata is a few
// levels; thousands would break clients that re-encode what they get.
const maxDepth = 32

// depth is how deep data's arrays and objects nest (outside strings).
func depth(data []byte) int {
	d, most, inString, escaped := 0, 0, false, false
	for _, ch := range data {
		switch {
		case escaped:
			escaped = false
		case inString && ch == '\\':
			escaped = true
		case ch == '"':
			inString = !inString
		case inString:
		case ch == '{' || ch == '[':
			d++
			most = max(most, d)
		case ch == '}' || ch == ']':
			d--
		}
	}
	return most
}

// frameError is why a frame is refused: a counted reason and a message.
type frameError struct{ reason, msg string }

func (e *frameError) Error() string { return e.reason + ": " + e.msg }

// parseFrame reads a frame in without acting on it: aikyo's envelope is
// unwrapped, and the frame is classified by what it asks.
func parseFrame(data []byte) (frameIn, error) {
	if !utf8.Valid(data) {
		return frameIn{}, &frameError{"invalid", "the frame is not valid UTF-8"}
	}
	var f inFrame
	if err := json.Unmarshal(data, &f); err != nil {
		return frameIn{}, &frameError{"not_json", "the frame is not a JSON object"}
	}
	if d := depth(data); d > maxDepth {
		return frameIn{rid: f.ID}, &frameError{"invalid", fmt.Sprintf("the frame nests %d deep; at most %d", d, maxDepth)}
	}
	if f.Topic != "" || f.Body != nil {
		switch {
		case f.Method != "":
			return frameIn{}, &frameError{"forbidden", "a frame has a method or an envelope's topic and body, not both"}
		case f.Topic != "messages" && f.Topic != "queries":
			return frameIn{}, &frameError{"forbidden", fmt.Sprintf("an envelope names topic %.64q; a client may send on messages or queries only", f.Topic)}
		}
		data = f.Body
		f = inFrame{}
		if err := json.Unmarshal(data, &f); err != nil {
			return frameIn{}, &frameError{"not_json", "the envelope's body is not a JSON object"}
		}
	}
	in := frameIn{data: data, rid: f.ID}
	switch {
	case f.Method == protocol.MethodMessage:
		in.kind = "message"
	case f.Method == "camera.get":
		in.kind = "camera"
	case f.Method == MethodMemory:
		in.kind = "memory"
	case f.Method == protocol.MethodActionsDeclare:
		in.kind = "declare"
	case f.Method == protocol.MethodKnowledgeDeclare:
		in.kind = "knowledge"
	case f.Method == "" && (f.Result != nil || f.Error != nil):
		in.kind = "result"
	case f.Method != "":
		return in, &frameError{"forbidden", fmt.Sprintf("method %.64q is not one a client may send (message.send, camera.get, memory, actions.declare, knowledge.declare, or a query result)", f.Method)}
	default:
		return in, &frameError{"invalid", "a frame needs a method (message.send) or a result or error (a query result)"}
	}
	return in, nil
}

func (b *Bridge) handle(ctx context.Context, c *client, id *identity, raw []byte) {
	in, err := parseFrame(raw)
	var fe *frameError
	if errors.As(err, &fe) {
		b.refuse(c, in.rid, fe.reason, fe.msg)
		return
	}
	rid, data := in.rid, in.data
	switch in.kind {
	case "message":
		if c.tok.Role != User {
			b.refuse(c, rid, "forbidden", fmt.Sprintf("a %s may not send message.send", c.tok.Role))
			return
		}
		m, err := protocol.DecodeMessage(data, 0)
		if err != nil {
			b.refuse(c, rid, "invalid", err.Error())
			return
		}
		if m.Params.From != c.tok.Name {
			b.refuse(c, rid, "forbidden", fmt.Sprintf("params.from is %q; this client speaks as %q", m.Params.From, c.tok.Name))
			return
		}
		// What goes on the bus is the checked value, encoded anew: never
		// the client's bytes (duplicate keys, odd encodings).
		b.publish(ctx, c, id, b.cfg.Room.Scheme.Message(b.cfg.Room.Name, c.tok.Name), mustJSON(m), rid)
	case "result":
		if c.tok.Role != Device {
			b.refuse(c, rid, "forbidden", fmt.Sprintf("a %s may not send query results", c.tok.Role))
			return
		}
		res, err := protocol.DecodeQueryResult(data, int(b.cfg.MaxDeviceFrame))
		if err != nil {
			b.refuse(c, rid, "invalid", err.Error())
			return
		}
		if !id.asked.answer(res.ID) {
			b.refuse(c, rid, "not_addressed", fmt.Sprintf("query %s was not addressed to device %s (or is answered already)", res.ID, c.tok.Name))
			return
		}
		b.publish(ctx, c, id, b.cfg.Room.Scheme.Results(c.tok.Name), mustJSON(res), rid)
	case "camera":
		b.camera(ctx, c, rid, data)
	case "memory":
		b.memory(ctx, c, id, rid, data)
	case "declare":
		b.declare(c, rid, data)
	case "knowledge":
		b.declareKnowledge(c, rid, data)
	}
}

// camera answers camera.get {device} with the device's latest frame, to
// this client only. It waits in this client's reader (at most
// LookTimeout): a client that asks pauses its own frames, nobody else's.
func (b *Bridge) camera(ctx context.Context, c *client, rid json.RawMessage, data []byte) {
	if !c.tok.Camera || b.cfg.Look == nil {
		b.refuse(c, rid, "forbidden", "this client may not ask for camera frames")
		return
	}
	var req struct {
		Params struct {
			Device string `json:"device"`
		} `json:"params"`
	}
	if err := json.Unmarshal(data, &req); err != nil || protocol.ValidIdentity(req.Params.Device) != "" {
		b.refuse(c, rid, "invalid", `camera.get needs params {"device": a device id}`)
		return
	}
	// A body known to be gone is not waited for: the wait would pause
	// this client's frames for LookTimeout.
	dev := req.Params.Device
	if b.absent(dev) {
		b.send(c, errorFrame(rid, "camera", fmt.Sprintf("camera of %s: device %s is offline", dev, dev)))
		return
	}
	lctx, cancel := context.WithTimeout(ctx, LookTimeout)
	defer cancel()
	body, err := b.cfg.Look(lctx, req.Params.Device)
	if err != nil {
		b.send(c, errorFrame(rid, "camera", fmt.Sprintf("camera of %s: %v", req.Params.Device, err)))
		return
	}
	b.send(c, mustJSON(map[string]any{"jsonrpc": protocol.JSONRPC, "id": answerID(rid), "result": map[string]any{"device": req.Params.Device, "frame": body}}))
}

// absent says whether device is known to be gone: a body behind this
// bridge with no client connected, or a device whose presence is offline.
func (b *Bridge) absent(device string) bool {
	if b.Serves(device) {
		return !b.DeviceOnline(device)
	}
	if b.cfg.Online == nil {
		return false
	}
	online, known := b.cfg.Online(device)
	return known && !online
}

// LookTimeout bounds one camera.get.
const LookTimeout = 10 * time.Second

// publish sends a client's frame under its identity; a client that
// floods waits for its own publishes (its reads stop), nobody else.
func (b *Bridge) publish(ctx context.Context, c *client, id *identity, topic string, payload []byte, what json.RawMessage) {
	pctx, cancel := context.WithTimeout(ctx, b.cfg.WriteTimeout)
	defer cancel()
	if err := id.b.Publish(pctx, topic, payload, false); err != nil {
		b.refuse(c, what, "publish_failed", "not published: "+err.Error())
	}
}
