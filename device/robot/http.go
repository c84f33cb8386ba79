// The HTTP section: the listener, the bridge and its tokens (read from
// the environment or a file, never from the YAML), and the log.

package robot

import (
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/chorus-robotics/chorus/runtime/protocol"
	"github.com/chorus-robotics/chorus/runtime/settings"
)

// BridgeToken is one entry of the bridge's tokens.
type BridgeToken struct {
	Token           string `yaml:"token"`
	Role            string `yaml:"role"`
	Name            string `yaml:"name"`
	MQTTPasswordEnv string `yaml:"mqtt_password_env"` // the password of name's MQTT connection, if the broker wants one
	Camera          bool   `yaml:"camera"`            // may ask for the devices' camera frames (room members' eyes)
}

// Tokens reads the bridge's tokens from tokens_file or tokens_env.
func (w WebSocket) Tokens() ([]BridgeToken, error) {
	field := "http.websocket.tokens_file"
	if w.TokensEnv != "" {
		field = "http.websocket.tokens_env"
	}
	raw, err := settings.Secret(field, w.TokensEnv, w.TokensFile)
	if err != nil || raw == "" {
		return nil, err
	}
	return parseTokens(field, raw)
}

// parseTokens reads the YAML list of tokens from field.
func parseTokens(field, raw string) ([]BridgeToken, error) {
	var ts []BridgeToken
	dec := yaml.NewDecoder(strings.NewReader(raw))
	dec.KnownFields(true)
	if err := dec.Decode(&ts); err != nil {
		return nil, fmt.Errorf("%s: a YAML list of {token, role, name, mqtt_password_env}: %w", field, err)
	}
	seen := map[string]int{}
	for i, t := range ts {
		if j, dup := seen[t.Token]; dup {
			return nil, fmt.Errorf("%s: entries %d and %d have the same token", field, j+1, i+1)
		}
		seen[t.Token] = i
		if len(t.Token) < 16 {
			return nil, fmt.Errorf("%s: entry %d (%s %s): token must be at least 16 characters", field, i+1, t.Role, t.Name)
		}
		if !slices.Contains([]string{"viewer", "user", "device"}, t.Role) {
			return nil, fmt.Errorf("%s: entry %d: role must be viewer, user or device, got %q", field, i+1, t.Role)
		}
		if why := protocol.ValidIdentity(t.Name); t.Role != "viewer" && why != "" {
			return nil, fmt.Errorf("%s: entry %d: name: %s", field, i+1, why)
		}
	}
	return ts, nil
}

// HTTP serves /healthz and /metrics.
type HTTP struct {
	Listen    string    `yaml:"listen"` // default 127.0.0.1:9100; "off" disables
	WebSocket WebSocket `yaml:"websocket"`
	// MCP serves the robot's tools over MCP at /mcp (device/mcpserve),
	// behind the bridge's user tokens: it needs websocket.enabled.
	MCP bool `yaml:"mcp"`
}

// WebSocket is the room's WebSocket bridge and console, served at /ws and
// / on http.listen.
type WebSocket struct {
	Enabled bool `yaml:"enabled"`
	// TokensFile and TokensEnv hold the tokens: a YAML list of
	// {token, role: viewer|user|device, name, mqtt_password_env}, in a file
	// or in an environment variable (one line: a flow list).
	TokensFile string `yaml:"tokens_file"`
	TokensEnv  string `yaml:"tokens_env"`
	// Anonymous ("role:name", e.g. user:console) is what a client without
	// a token may be; only on a loopback listener (someone at the robot
	// itself, who may also see its camera frames).
	Anonymous  string `yaml:"anonymous"`
	MaxClients int    `yaml:"max_clients"` // default 32
	// MaxFrame is the most bytes a viewer's or a user's frame may have
	// (default 64 KiB); MaxDeviceFrame a device's, which answers vision
	// queries with camera frames (default query.max_result, 8 MiB).
	MaxFrame       int `yaml:"max_frame"`
	MaxDeviceFrame int `yaml:"max_device_frame"`
}

// Log settings.
type Log struct {
	Level  string `yaml:"level"`  // debug, info, warn, error
	Format string `yaml:"format"` // text, json
}

// Logger builds the process logger the log section describes, writing to
// w; an unknown level is info.
func (l Log) Logger(w io.Writer) *slog.Logger {
	var level slog.Level
	if err := level.UnmarshalText([]byte(l.Level)); err != nil {
		level = slog.LevelInfo
	}
	o := &slog.HandlerOptions{Level: level}
	if l.Format == "json" {
		return slog.New(slog.NewJSONHandler(w, o))
	}
	return slog.New(slog.NewTextHandler(w, o))
}

// CheckBridgeTokens refuses a user token named like a companion of the
// room or its floor: through the bridge it would speak as them.
func (c *Config) CheckBridgeTokens(ts []BridgeToken) error {
	for i, t := range ts {
		if t.Role == "user" && c.SpeaksAsRoom(t.Name) {
			return fmt.Errorf("http.websocket tokens: entry %d: user %q is a companion or the floor of room %s", i+1, t.Name, c.Room.Name)
		}
		if t.Role == "device" && t.Name == c.Device.ID {
			return fmt.Errorf("http.websocket tokens: entry %d: device %q is this robot itself (device.id): a body behind the bridge has a name of its own (companion.body)", i+1, t.Name)
		}
	}
	return nil
}

// validateHTTP checks the http section: the listener and the bridge.
func (c *Config) validateHTTP(p *settings.Problems) {
	if c.HTTP.Listen != "off" {
		p.HostPort("listen", c.HTTP.Listen) // or off
	}
	ws := c.HTTP.WebSocket
	if c.HTTP.MCP && !ws.Enabled {
		p.Add("mcp", "serves the robot's tools behind the bridge's tokens: set http.websocket.enabled (and its tokens_file)")
	}
	if c.HTTP.MCP && c.Companion == nil {
		p.Add("mcp", "serves a companion's tools, and this robot has none (companion)")
	}
	if !ws.Enabled {
		return
	}
	loopback := settings.Loopback(c.HTTP.Listen)
	switch {
	case c.HTTP.Listen == "off":
		p.Add("websocket.enabled", "needs http.listen")
	case !loopback && ws.TokensFile == "" && ws.TokensEnv == "":
		p.Add("websocket.tokens_file", "a token is required off loopback (http.listen %q): give tokens_file or tokens_env", c.HTTP.Listen)
	}
	if ws.TokensFile != "" && ws.TokensEnv != "" {
		p.Add("websocket.tokens_env", "give tokens_file or tokens_env, not both")
	}
	if ws.Anonymous != "" {
		role, name, _ := strings.Cut(ws.Anonymous, ":")
		if !slices.Contains([]string{"viewer", "user"}, role) || (role == "user" && protocol.ValidIdentity(name) != "") {
			p.Add("websocket.anonymous", `must be "viewer" or "user:NAME", got %q`, ws.Anonymous)
		}
		if !loopback {
			p.Add("websocket.anonymous", "clients without a token are allowed only on a loopback listener, got http.listen %q", c.HTTP.Listen)
		}
		if c.SpeaksAsRoom(name) {
			p.Add("websocket.anonymous", "%q is a companion or the floor of room %s: a visitor speaks as a user", name, c.Room.Name)
		}
	}
	if ws.MaxClients < 0 || ws.MaxClients > 10000 {
		p.Add("websocket.max_clients", "must be from 0 (default 32) to 10000, got %d", ws.MaxClients)
	}
	// 0 is the default (a config built in code, as the demo's, may
	// enable the bridge after SetDefaults).
	if ws.MaxFrame != 0 && (ws.MaxFrame < 1024 || ws.MaxFrame > 1<<20) {
		p.Add("websocket.max_frame", "must be 0 (default 65536) or from 1024 to 1048576 bytes (a viewer's or user's frame), got %d", ws.MaxFrame)
	}
	if ws.MaxDeviceFrame != 0 && (ws.MaxDeviceFrame < 1024 || ws.MaxDeviceFrame > c.Query.MaxResult) {
		p.Add("websocket.max_device_frame", "must be 0 (default query.max_result) or from 1024 bytes to query.max_result (%d; a larger result is refused anyway), got %d", c.Query.MaxResult, ws.MaxDeviceFrame)
	}
}
