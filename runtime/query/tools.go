package query

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/chorus-robotics/chorus/runtime/protocol"
	"github.com/chorus-robotics/chorus/runtime/tool"
)

// The body's queries as tools (runtime/tool): what a companion registers
// for its model and for agents.

// ActionTools are device's actions: done with the words for a model
// (tool.WithWords), run at once for an agent — an action query, bounded
// by ActionTimeout.
func ActionTools(a Asker, device string, defs []protocol.ActionDef) []tool.Tool {
	ts := tool.Actions(defs)
	for i := range ts {
		ts[i].Call = func(ctx context.Context, c tool.Call) (tool.Result, error) {
			r := protocol.ActionRequest{Name: c.Name, Args: c.Args}
			if len(r.Args) == 0 {
				r.Args = json.RawMessage("{}")
			}
			res, err := Call(ctx, a, device, Action, r, 0)
			switch {
			case err != nil:
				return tool.Result{}, fmt.Errorf("%s: %w", c.Name, err)
			case !res.Done:
				return tool.Result{}, fmt.Errorf("%s was not done: %s", c.Name, res.Detail)
			}
			return tool.Result{Text: fmt.Sprintf("%s: done in %d ms.", c.Name, res.DurationMs)}, nil
		}
	}
	return ts
}

// KnowledgeTools are the knowledge tools device declares (tool.FromBody):
// a call asks device a knowledge query, bounded by the caller's context,
// and answers the result's text.
func KnowledgeTools(a Asker, device string, defs []protocol.KnowledgeDef) []tool.Tool {
	out := make([]tool.Tool, 0, len(defs))
	for _, d := range defs {
		name := d.Name
		out = append(out, tool.Tool{Name: d.Name, Description: d.Description, Parameters: d.Parameters, Source: tool.FromBody,
			Call: tool.Text(func(ctx context.Context, args json.RawMessage) (string, error) {
				res, err := Call(ctx, a, device, Knowledge, protocol.KnowledgeRequest{Name: name, Args: args}, 0)
				if err != nil {
					return "", fmt.Errorf("knowledge %s of body %s: %w", name, device, err)
				}
				return res.Text, nil
			})})
	}
	return out
}

// LookTool is device's camera for agents (an MCP client of the robot): a
// picture, now (timeout 0: LookTimeout). A model has its own camera tool
// (the brain's vision), which describes the picture to it.
func LookTool(a Asker, device string, timeout time.Duration) tool.Tool {
	return tool.Tool{Name: "look", Title: "Look through the camera", Use: tool.ForAgents, ReadOnly: true,
		Description: "Take a picture with the robot's camera, now; the picture is the answer (JPEG).",
		Call: func(ctx context.Context, _ tool.Call) (tool.Result, error) {
			res, err := Call(ctx, a, device, Vision, protocol.VisionRequest{}, timeout)
			if err != nil {
				return tool.Result{}, fmt.Errorf("no picture: %w", err)
			}
			mime := res.MIME
			if mime == "" {
				mime = "image/jpeg"
			}
			return tool.Result{Image: res.Image, MIME: mime}, nil
		}}
}
