// Knowledge tools (aikyo's knowledge, issue 29): offered beside the
// body's actions in the call that writes the words; their answers are
// quoted to the model as data.

package llm

import (
	"context"
	"encoding/json"
	"slices"
	"time"

	"github.com/chorus-robotics/chorus/runtime/brain"
	"github.com/chorus-robotics/chorus/runtime/brain/prompts"
	"github.com/chorus-robotics/chorus/runtime/metrics"
	"github.com/chorus-robotics/chorus/runtime/protocol"
)

// Bounds of a knowledge tool's call.
const (
	DefaultKnowledgeTimeout = 2 * time.Second // one Knowledge.Call (Brain.KnowledgeTimeout)
	MaxKnowledgeText        = 2000            // characters of its answer given to the model
)

// knowledgeTools are the knowledge tools the card allows (card.knowledge,
// brain.Card.AllowsKnowledge; all when it names none) as tool definitions. A tool whose name is
// already offered (vision, speak, a body action) or whose parameters are
// not a JSON Schema object is not offered, said in the log.
func (b *Brain) knowledgeTools(card brain.Card, ks []brain.Knowledge, offered []ToolDef) []ToolDef {
	var out []ToolDef
	taken := func(name string) bool {
		return slices.ContainsFunc(offered, func(t ToolDef) bool { return t.Name == name }) ||
			slices.ContainsFunc(out, func(t ToolDef) bool { return t.Name == name }) ||
			name == "speak" || name == "vision"
	}
	for _, k := range ks {
		if k.Call == nil || len(card.Knowledge) > 0 && !card.AllowsKnowledge(k) {
			continue
		}
		if taken(k.Name) {
			b.log().Warn("a knowledge tool has the name of another tool; not offered", "tool", k.Name)
			continue
		}
		params := map[string]any{"type": "object", "properties": map[string]any{}, "additionalProperties": false}
		if len(k.Parameters) > 0 {
			params = nil
			if err := json.Unmarshal(k.Parameters, &params); err != nil || params == nil {
				b.log().Warn("a knowledge tool's parameters are not a JSON Schema object; not offered", "tool", k.Name)
				continue
			}
		}
		out = append(out, ToolDef{Name: k.Name, Description: k.Description, Parameters: params})
	}
	return out
}

// isAction reports whether name is one of the body's actions.
func isAction(defs []protocol.ActionDef, name string) bool {
	return slices.ContainsFunc(defs, func(d protocol.ActionDef) bool { return d.Name == name })
}

// know runs a knowledge tool for the model, bounded by its timeout
// (Brain.KnowledgeTimeout): its answer, clipped to MaxKnowledgeText
// characters, under a line that says it is data; an error is the
// answer's text, and the turn goes on.
func (b *Brain) know(ctx context.Context, lang string, k brain.Knowledge, args json.RawMessage) string {
	say := prompts.TextsFor(lang)
	timeout := b.KnowledgeTimeout
	if k.Timeout > 0 {
		timeout = k.Timeout
	}
	if timeout <= 0 {
		timeout = DefaultKnowledgeTimeout
	}
	kctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	text, err := k.Call(kctx, args)
	if err != nil {
		metrics.OrNew(b.Metrics).BrainFailures.WithLabelValues("tool_failed").Inc()
		b.log().Warn("knowledge tool failed; the model is told", "tool", k.Name, "err", err)
		text = say.KnowledgeFailed + err.Error()
	}
	if r := []rune(text); len(r) > MaxKnowledgeText {
		text = string(r[:MaxKnowledgeText]) + "…"
	}
	return say.KnowledgeData + "\n" + text
}
