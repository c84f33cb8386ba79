// The tools offered to the model beside speak: the brain's own vision
// tool and the robot's registry (brain.Input.Tools: the body's actions,
// knowledge, MCP servers' tools). A call is run by its name, as its
// tool's kind says (runtime/tool); what a tool answers is quoted to the
// model as data.

package llm

import (
	"context"
	"strings"
	"time"

	"github.com/chorus-robotics/chorus/runtime/brain"
	"github.com/chorus-robotics/chorus/runtime/brain/prompts"
	"github.com/chorus-robotics/chorus/runtime/metrics"
	"github.com/chorus-robotics/chorus/runtime/tool"
)

// Bounds of a tool's call.
const (
	DefaultKnowledgeTimeout = 2 * time.Second // one call (Brain.KnowledgeTimeout)
	MaxKnowledgeText        = 2000            // characters of its answer given to the model
)

// VisionName is the brain's own tool: a picture from the companion's
// camera, described by its model.
const VisionName = "vision"

// toolbox is what the model is offered beside speak, and its
// definitions as the model reads them: vision when the brain has a camera
// (look), then ts in their order. A tool with the name of one before it,
// or whose parameters are not a JSON Schema object, is not offered (said
// in the log). Each schema is read once.
func (b *Brain) toolbox(in brain.Input, ts []tool.Tool, look bool) ([]tool.Tool, []ToolDef) {
	var out []tool.Tool
	var defs []ToolDef
	taken := map[string]bool{"speak": true}
	add := func(t tool.Tool) {
		params, err := t.Schema()
		if err != nil {
			b.log().Warn("a tool's parameters are not a JSON Schema object; not offered", "tool", t.Name)
			return
		}
		taken[strings.ToLower(t.Name)] = true
		out = append(out, t)
		defs = append(defs, ToolDef{Name: t.Name, Description: t.Description, Parameters: params})
	}
	if look && b.Look != nil {
		add(tool.Tool{Name: VisionName, Description: prompts.TextsFor(in.Card.Language).VisionTool, Kind: tool.Answers,
			Call: func(ctx context.Context, _ tool.Call) (tool.Result, error) {
				return tool.Result{Text: b.see(ctx, in)}, nil
			}})
	}
	for _, t := range ts {
		switch {
		case taken[strings.ToLower(t.Name)]:
			b.log().Warn("a tool has the name of another tool; not offered", "tool", t.Name)
		case t.Kind != tool.WithWords && t.Call == nil:
		default:
			add(t)
		}
	}
	return out, defs
}

// know runs c with t for the model, bounded by t's timeout or
// Brain.KnowledgeTimeout: its answer, clipped to MaxKnowledgeText
// characters, under a line that says it is data; an error is the
// answer's text, and the turn goes on.
func (b *Brain) know(ctx context.Context, lang string, t tool.Tool, c tool.Call) string {
	say := prompts.TextsFor(lang)
	timeout := b.KnowledgeTimeout
	if timeout <= 0 {
		timeout = DefaultKnowledgeTimeout
	}
	if t.Name == VisionName {
		timeout = 0 // its picture and its description have their own bounds
	}
	res, err := tool.Run(ctx, t, c, timeout)
	text := res.Text
	if err != nil {
		metrics.OrNew(b.Metrics).BrainFailures.WithLabelValues("tool_failed").Inc()
		b.log().Warn("a tool failed; the model is told", "tool", t.Name, "err", err)
		text = say.KnowledgeFailed + err.Error()
	}
	if r := []rune(text); len(r) > MaxKnowledgeText {
		text = string(r[:MaxKnowledgeText]) + "…"
	}
	if t.Name == VisionName && err == nil {
		return text // the model's own description of the picture
	}
	return say.KnowledgeData + "\n" + text
}
