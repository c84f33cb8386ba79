//go:build mcpserve

package daemon

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/chorus-robotics/chorus/device/mcpserve"
	"github.com/chorus-robotics/chorus/runtime/query"
)

// mcpServerBuilt: this chorusd serves the robot's tools over MCP
// (http.mcp), built with the tag mcpserve: the MCP library's server takes
// the robot's binary past its 16 MB (BENCHMARKS.md, "Tools over MCP").
const mcpServerBuilt = true

// mcpHandler is the robot's MCP server and its path.
func (d *Daemon) mcpHandler() (string, http.Handler) { return mcpserve.Path, d.mcpServer() }

// mcpServer is the robot's tools over MCP, behind the bridge's tokens
// (http.mcp): its body's queries go through the companion's query client
// once the companion has made it.
func (d *Daemon) mcpServer() *mcpserve.Server {
	cfg := d.cfg
	body := cfg.BodyDevice()
	return mcpserve.New(mcpserve.Config{Gate: d.br, Companion: cfg.Companion.ID, Device: cfg.Device.ID, Body: body,
		Asker: lateAsker{&d.asks}, Timeout: cfg.Query.Timeout, Actions: d.actionsOf(body),
		Camera: cfg.Drivers.Camera.Kind != "none" || body != cfg.Device.ID, Memory: cfg.Memory != nil,
		Version: d.version, Log: d.log,
		Unable: func() string {
			if p := d.pan.Load(); p != nil && p.Muted() {
				return "it is muted"
			}
			if d.br.Serves(body) && !d.br.DeviceOnline(body) {
				return "its body (" + body + ") is offline"
			}
			return ""
		},
		Refused: func(why string) { d.m.BadInput.WithLabelValues("mcp", why).Inc() }})
}

// lateAsker asks through the companion's query client once the companion
// has made it (the HTTP listener starts first).
type lateAsker struct{ c *atomic.Pointer[query.Client] }

func (a lateAsker) Ask(ctx context.Context, device, typ string, body any, timeout time.Duration, opts ...query.CallOption) (json.RawMessage, error) {
	c := a.c.Load()
	if c == nil {
		return nil, errors.New("the robot's companion has not started yet")
	}
	return c.Ask(ctx, device, typ, body, timeout, opts...)
}
