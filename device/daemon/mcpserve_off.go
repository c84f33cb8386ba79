//go:build !mcpserve

package daemon

import "net/http"

// mcpServerBuilt: this chorusd has no MCP server (the tag mcpserve adds
// it); a config with http.mcp is refused at start, naming the tag.
const mcpServerBuilt = false

func (d *Daemon) mcpHandler() (string, http.Handler) { return "", nil }
