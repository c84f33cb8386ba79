package bridge

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/chorus-robotics/chorus/runtime/protocol"
	"github.com/chorus-robotics/chorus/runtime/schema"
)

// Knowledge a body declares for its companion (issue 29: "knowledge a
// bridge client declares for its companion (as bridge bodies declare
// actions)"): knowledge.declare in, kept per device as actions are, and
// asked of the body as any query (protocol.TypeKnowledge goes to it as
// query.send; the body answers {text}).

// declareKnowledge handles knowledge.declare: a device's client names the
// knowledge tools of its body (params {knowledge}), replacing what the
// device declared before, as actions.declare does. The declaration is
// decoded strictly and each tool's parameters compiled before anything
// is kept: a refused declaration leaves the old one in place.
func (b *Bridge) declareKnowledge(c *client, rid json.RawMessage, data []byte) {
	const method = protocol.MethodKnowledgeDeclare
	if c.tok.Role != Device {
		b.refuse(c, rid, "forbidden", fmt.Sprintf("a %s may not declare knowledge: %s is a device's", c.tok.Role, method))
		return
	}
	var req map[string]json.RawMessage // parseFrame read it as an object
	json.Unmarshal(data, &req)
	for k := range req {
		if k != "jsonrpc" && k != "id" && k != "method" && k != "params" {
			b.refuse(c, rid, "invalid", fmt.Sprintf("%s: unknown field %.64q", method, k))
			return
		}
	}
	if string(req["jsonrpc"]) != `"`+protocol.JSONRPC+`"` {
		b.refuse(c, rid, "invalid", method+`: jsonrpc must be "2.0"`)
		return
	}
	decl, err := protocol.DecodeKnowledgeDeclaration(req["params"], 0)
	if err != nil {
		b.refuse(c, rid, "invalid", method+": "+paramsError(err))
		return
	}
	for _, k := range decl.Knowledge {
		if _, err := schema.Compile(k.Parameters); err != nil {
			b.refuse(c, rid, "invalid", fmt.Sprintf("%s: knowledge %q: parameters: %v", method, k.Name, strings.TrimPrefix(err.Error(), "schema: ")))
			return
		}
	}
	b.mu.Lock()
	b.know[c.tok.Name] = decl.Knowledge
	b.mu.Unlock()
	b.log.Info("bridge: a body declared its knowledge", "body", c.tok.Name, "knowledge", knowledgeNames(decl.Knowledge))
	b.send(c, mustJSON(map[string]any{"jsonrpc": protocol.JSONRPC, "id": answerID(rid), "result": map[string]int{"declared": len(decl.Knowledge)}}))
}

// Knowledge returns the knowledge tools device declared (a copy,
// parameters included), nil when it declared none or no client of it is
// connected. A companion asks for it at each turn: what it offers its
// model follows the body's latest declaration.
func (b *Bridge) Knowledge(device string) []protocol.KnowledgeDef {
	b.mu.Lock()
	defs := b.know[device]
	b.mu.Unlock()
	if len(defs) == 0 {
		return nil
	}
	out := make([]protocol.KnowledgeDef, len(defs))
	for i, k := range defs {
		k.Parameters = bytes.Clone(k.Parameters)
		out[i] = k
	}
	return out
}

// knowledgeNames lists declared knowledge tools for the log.
func knowledgeNames(defs []protocol.KnowledgeDef) string {
	if len(defs) == 0 {
		return "none"
	}
	n := make([]string, len(defs))
	for i, k := range defs {
		n[i] = k.Name
	}
	return strings.Join(n, ", ")
}
