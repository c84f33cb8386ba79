package bridge

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/chorus-robotics/chorus/runtime/protocol"
	"github.com/chorus-robotics/chorus/runtime/query"
)

// memory: a user's client lists and forgets what a device's companion
// remembers about a person (issue 29). The bridge asks the device under
// the client's own identity (its bus connection), so the device decides
// by that name: a person may see and forget their own facts, an operator
// anyone's; and the voices it knows people by (voices, forget-voice).
// Export, wipe and enrolment are for `chorus memory` and `chorus voice`.

// MethodMemory is the method of a client's memory request.
const MethodMemory = "memory"

// MemoryTimeout bounds one memory request.
const MemoryTimeout = 10 * time.Second

// memoryParams are the only keys memory's params may have.
var memoryParams = map[string]bool{"device": true, "op": true, "person": true, "fact": true}

// parseMemory reads a memory frame's params strictly: an object of
// strings with the keys above (exact case, no others), a device id, op
// list or forget, a person's identity (required to forget; a list without
// one asks for everyone's, which only an operator gets), a fact only to
// forget. The request is checked again by the contract's own decoder.
// It returns the device and the request, or the refusal's reason and
// message.
func parseMemory(data []byte) (device string, req protocol.MemoryRequest, reason, why string) {
	const shape = `memory needs params {"device": a device id, "op": "list", "forget", "voices" or "forget-voice", "person": an identity, "fact": a fact id (forget only)}`
	var f struct {
		Params json.RawMessage `json:"params"`
	}
	var raw map[string]json.RawMessage
	if json.Unmarshal(data, &f) != nil || json.Unmarshal(f.Params, &raw) != nil || raw == nil {
		return "", req, "invalid", shape
	}
	p := map[string]string{}
	for k, v := range raw {
		if !memoryParams[k] {
			return "", req, "invalid", fmt.Sprintf("params.%.32s: unknown; %s", k, shape)
		}
		var s string
		if len(v) == 0 || v[0] != '"' || json.Unmarshal(v, &s) != nil {
			return "", req, "invalid", fmt.Sprintf("params.%s must be a string", k)
		}
		p[k] = s
	}
	device = p["device"]
	if w := protocol.ValidIdentity(device); w != "" {
		return "", req, "invalid", "params.device: " + w
	}
	switch p["op"] {
	case protocol.MemoryList, protocol.MemoryForget, protocol.MemoryVoices, protocol.MemoryForgetVoice:
	case protocol.MemoryExport, protocol.MemoryWipe, protocol.MemoryEnrolVoice:
		return "", req, "forbidden", fmt.Sprintf("op %s is for chorus memory and chorus voice; a client of the bridge may list and forget", p["op"])
	default:
		return "", req, "invalid", fmt.Sprintf("params.op must be list, forget, voices or forget-voice, got %.32q", p["op"])
	}
	if w := protocol.ValidIdentity(p["person"]); p["person"] != "" && w != "" {
		return "", req, "invalid", "params.person: " + w
	}
	req = protocol.MemoryRequest{ID: protocol.NewID(), Op: p["op"], Person: p["person"], Fact: p["fact"]}
	if _, err := protocol.DecodeMemoryRequest(mustJSON(req), 0); err != nil {
		return "", req, "invalid", err.Error()
	}
	return device, req, "", ""
}

// memory answers a memory frame to this client only, with
// {"device", "facts", "forgotten"} or an error naming what failed (the
// device's refusal in its own words). It waits in this client's reader
// (at most MemoryTimeout), like camera.get.
func (b *Bridge) memory(ctx context.Context, c *client, id *identity, rid json.RawMessage, data []byte) {
	if c.tok.Role != User || id == nil {
		b.refuse(c, rid, "forbidden", fmt.Sprintf("a %s may not ask about memory", c.tok.Role))
		return
	}
	dev, req, reason, why := parseMemory(data)
	if why != "" {
		b.refuse(c, rid, reason, why)
		return
	}
	if b.absent(dev) {
		b.send(c, errorFrame(rid, "memory", fmt.Sprintf("memory of %s: device %s is offline", dev, dev)))
		return
	}
	a, err := query.Call(ctx, id.memory, dev, query.Memory, req, MemoryTimeout)
	if err != nil {
		b.send(c, errorFrame(rid, "memory", err.Error()))
		return
	}
	facts := a.Facts
	if facts == nil {
		facts = []protocol.MemoryFact{}
	}
	voices := a.Voices
	if voices == nil {
		voices = []protocol.VoicePrint{}
	}
	f := mustJSON(map[string]any{"jsonrpc": protocol.JSONRPC, "id": answerID(rid),
		"result": map[string]any{"device": dev, "facts": facts, "forgotten": a.Forgotten, "voices": voices}})
	if int64(len(f)) > c.max/2 { // it would crowd the client's queue, or drop it
		b.send(c, errorFrame(rid, "memory", fmt.Sprintf("memory of %s: %d facts are %d bytes, more than a client of the bridge is sent at once; chorus memory lists them", dev, len(facts), len(f))))
		return
	}
	b.send(c, f)
}
