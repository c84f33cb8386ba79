package daemon

import (
	"github.com/chorus-robotics/chorus/device/mcpserve"
	"github.com/chorus-robotics/chorus/runtime/tool"
)

// mcpServer is the robot's tools over MCP, behind the bridge's tokens
// (http.mcp): the companion's registry's tools for agents, once the
// companion has made it (the HTTP listener starts first).
func (d *Daemon) mcpServer() *mcpserve.Server {
	cfg := d.cfg
	body := cfg.BodyDevice()
	return mcpserve.New(mcpserve.Config{Gate: d.br, Companion: cfg.Companion.ID, Device: cfg.Device.ID,
		Tools: func() []tool.Tool {
			if r := d.tools.Load(); r != nil { // the companion has started
				return r.Tools(tool.ForAgents)
			}
			return nil
		},
		Timeout: cfg.Query.Timeout, Memory: cfg.Memory != nil, Version: d.version, Log: d.log,
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
