// Package mcp is the robot's MCP client: it uses other programs' tools —
// Home Assistant's MCP server (HassTurnOn, HassLightSet, GetLiveContext),
// or any server that speaks MCP over streamable HTTP — as its model's
// tools (docs/homeassistant.md, "Home Assistant's tools over MCP").
//
// One Client per server of tools.mcp. It lists the server's tools at
// start, again when the server says they changed and every RefreshEvery
// (Home Assistant's server is stateless: it never says so), and offers
// only those the config allows, under the server's name as a prefix
// (ha_HassTurnOn). A call is bounded by the server's timeout and its
// answer by MaxResult; a server that is down or slow never blocks
// anything but that call. The token is never logged.
package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
)

// Bounds of a server and its calls.
const (
	DefaultCallTimeout = 5 * time.Second  // one call (Settings.Timeout)
	ListTimeout        = 10 * time.Second // connecting and listing the tools
	RefreshEvery       = 5 * time.Minute  // the tools are listed again
	MaxResult          = 16 << 10         // bytes of a call's text kept
	maxBody            = 4 << 20          // bytes of one HTTP answer read
	MaxServers         = 8
	MaxAllow           = 64
	MaxDescription     = 1024    // bytes of a tool's description the model is given
	MaxSchema          = 8 << 10 // bytes of a tool's argument schema: a longer one is not offered
	maxPages           = 8       // pages of a tools/list read
	maxListed          = 512     // tools of a tools/list read
	maxError           = 300     // bytes of a server's error text kept
	maxSkippedLogged   = 8       // tools of a list that do not decode named in the log
)

// Settings is one server of the config's tools.mcp.
type Settings struct {
	// Name prefixes the server's tools as the model sees them
	// (<name>_<tool>): letters, digits and _, at most 16.
	Name string `yaml:"name"`
	// URL is the server's streamable HTTP endpoint (Home Assistant:
	// http://homeassistant.local:8123/api/mcp).
	URL string `yaml:"url"`
	// TokenEnv or TokenFile hold the bearer token (Home Assistant: a
	// long-lived access token); neither: no Authorization header. The
	// config's owner reads it (New takes the token itself).
	TokenEnv  string `yaml:"token_env"`
	TokenFile string `yaml:"token_file"`
	// Allow names the server's tools the model may call, as the server
	// names them (HassTurnOn). None allowed: none offered.
	Allow []string `yaml:"allow"`
	// Timeout bounds one call (default DefaultCallTimeout).
	Timeout time.Duration `yaml:"timeout"`
}

// SetDefaults fills the timeout.
func (s *Settings) SetDefaults() {
	if s.Timeout == 0 {
		s.Timeout = DefaultCallTimeout
	}
}

// Tool is one of a server's tools the config allows, as the model sees it.
type Tool struct {
	Name        string          // <server>_<tool>: what the model calls
	Remote      string          // the server's name of it
	Description string          // the server's
	Schema      json.RawMessage // its arguments' JSON Schema, the server's
	// ReadOnly: the server says it changes nothing (MCP's readOnlyHint);
	// other tools act, and run only in a granted turn.
	ReadOnly bool
}

// Client is one MCP server's tools for the robot.
//
// # Concurrency
//
// Run owns the connection; Tools and Call are safe from any goroutine.
type Client struct {
	s     Settings
	token string
	log   *slog.Logger
	// CheckSchema, when set, is asked about each tool's argument schema
	// (the robot's JSON Schema checks): a tool whose schema it refuses is
	// not offered.
	CheckSchema func(schema []byte) error
	// Refused, when set, counts a tool of the server's list the robot
	// does not offer, by why: malformed (it does not decode as an MCP
	// tool), schema (its argument schema is refused).
	Refused func(why string)

	mu      sync.Mutex
	c       *client.Client // nil: not connected
	tools   []Tool
	missing []string // allowed, and not on the server
	changed chan struct{}
}

// New is a client of the server s; token is its bearer token. It does
// nothing until Run.
func New(s Settings, token string, log *slog.Logger) *Client {
	s.SetDefaults()
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Client{s: s, token: token, log: log.With("mcp", s.Name), changed: make(chan struct{}, 1)}
}

// Name is the server's name in the config.
func (c *Client) Name() string { return c.s.Name }

// Timeout bounds one call.
func (c *Client) Timeout() time.Duration { return c.s.Timeout }

// Run connects, lists the tools, and lists them again when the server
// says they changed and every RefreshEvery, until ctx ends. A server
// that cannot be reached is tried again, 1 s to a minute apart; its
// tools are not offered meanwhile.
func (c *Client) Run(ctx context.Context) {
	wait := time.Second
	refresh := time.NewTimer(RefreshEvery)
	defer refresh.Stop()
	defer c.disconnect()
	for {
		err := c.list(ctx)
		switch {
		case ctx.Err() != nil:
			return
		case err != nil:
			c.log.Warn("MCP server: its tools are not offered until it answers", "url", c.s.URL, "err", err, "retry", wait)
			c.disconnect()
		default:
			wait = time.Second
		}
		next := RefreshEvery
		if err != nil {
			next, wait = wait, min(2*wait, time.Minute)
		}
		refresh.Reset(next)
		select {
		case <-ctx.Done():
			return
		case <-refresh.C:
		case <-c.changed:
		}
	}
}

// Tools are the allowed tools the server listed last (none while it
// cannot be reached).
func (c *Client) Tools() []Tool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.tools)
}

// Missing are the allowed tools the server did not list last.
func (c *Client) Missing() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.missing)
}

// Call runs the server's tool remote with args (a JSON object) within
// the server's timeout: the text of its answer, at most MaxResult bytes;
// an answer the server marks as an error is an error carrying that text.
func (c *Client) Call(ctx context.Context, remote string, args json.RawMessage) (string, error) {
	c.mu.Lock()
	cl := c.c
	allowed := slices.ContainsFunc(c.tools, func(t Tool) bool { return t.Remote == remote })
	c.mu.Unlock()
	switch {
	case !allowed:
		return "", fmt.Errorf("mcp %s: %q is not one of its allowed tools", c.s.Name, remote)
	case cl == nil:
		return "", fmt.Errorf("mcp %s: not connected", c.s.Name)
	}
	var a map[string]any
	if len(args) > 0 && string(args) != "null" {
		if err := json.Unmarshal(args, &a); err != nil {
			return "", fmt.Errorf("mcp %s %s: the arguments are not a JSON object: %w", c.s.Name, remote, err)
		}
	}
	ctx, cancel := context.WithTimeout(ctx, c.s.Timeout)
	defer cancel()
	var req mcp.CallToolRequest
	req.Params.Name, req.Params.Arguments = remote, a
	res, err := cl.CallTool(ctx, req)
	if err != nil {
		if errors.Is(err, transport.ErrSessionTerminated) {
			c.lost(cl) // a server that restarted forgot the session: start another
		}
		return "", fmt.Errorf("mcp %s %s: %s", c.s.Name, remote, c.redact(err.Error()))
	}
	text := resultText(res)
	if res.IsError {
		return "", fmt.Errorf("mcp %s %s: the tool failed: %s", c.s.Name, remote, c.redact(text))
	}
	return text, nil
}

// lost drops the session cl (still the client's) and lists again at once.
func (c *Client) lost(cl *client.Client) {
	c.mu.Lock()
	mine := c.c == cl
	if mine {
		c.c = nil
	}
	c.mu.Unlock()
	if !mine {
		return
	}
	cl.Close()
	select {
	case c.changed <- struct{}{}:
	default:
	}
}

// redact is a server's text as the robot may log it or give it to the
// model: the token taken out (a server may echo the request's headers),
// at most maxError bytes, on one line.
func (c *Client) redact(text string) string {
	if c.token != "" {
		text = strings.ReplaceAll(text, c.token, "[token]")
	}
	text = strings.Join(strings.Fields(text), " ")
	if len(text) > maxError {
		text = strings.ToValidUTF8(text[:maxError], "") + "…"
	}
	return text
}

// resultText is a call's text content (its structured content when it
// has no text), at most MaxResult bytes.
func resultText(res *mcp.CallToolResult) string {
	var parts []string
	for _, ct := range res.Content {
		if t, ok := ct.(mcp.TextContent); ok {
			parts = append(parts, t.Text)
		} else if t, ok := ct.(*mcp.TextContent); ok {
			parts = append(parts, t.Text)
		}
	}
	text := strings.Join(parts, "\n")
	if text == "" && res.StructuredContent != nil {
		b, _ := json.Marshal(res.StructuredContent)
		text = string(b)
	}
	if len(text) > MaxResult {
		text = strings.ToValidUTF8(text[:MaxResult], "") + "…"
	}
	return strings.Map(printable, text)
}

// printable drops what a text must not carry to a model or a log: control
// characters but line breaks and tabs, and the bidirectional overrides.
func printable(r rune) rune {
	switch {
	case r == '\n' || r == '\t':
		return r
	case unicode.IsControl(r), r >= 0x202A && r <= 0x202E, r >= 0x2066 && r <= 0x2069:
		return -1
	}
	return r
}

// Check connects to the server, lists its tools and disconnects (chorusd
// --doctor): the allowed tools it has, the allowed names it lacks, and
// every tool it has, by its own names.
func (c *Client) Check(ctx context.Context) (allowed []Tool, missing, has []string, err error) {
	ctx, cancel := context.WithTimeout(ctx, ListTimeout)
	defer cancel()
	cl, err := c.dial(ctx)
	if err != nil {
		return nil, nil, nil, err
	}
	defer cl.Close()
	listed, err := c.listTools(ctx, cl)
	if err != nil {
		return nil, nil, nil, err
	}
	for _, t := range listed {
		has = append(has, t.Name)
	}
	allowed, missing = c.allowed(listed)
	return allowed, missing, has, nil
}

// list connects if need be and lists the tools.
func (c *Client) list(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, ListTimeout)
	defer cancel()
	c.mu.Lock()
	cl := c.c
	c.mu.Unlock()
	if cl == nil {
		var err error
		if cl, err = c.connect(ctx); err != nil {
			return err
		}
	}
	listed, err := c.listTools(ctx, cl)
	if err != nil {
		return err
	}
	tools, missing := c.allowed(listed)
	c.mu.Lock()
	old := c.tools
	c.tools, c.missing = tools, missing
	c.mu.Unlock()
	if len(missing) > 0 {
		c.log.Warn("MCP server: tools.mcp allows tools the server does not have", "missing", missing)
	}
	if !slices.EqualFunc(old, tools, func(a, b Tool) bool { return a.Name == b.Name }) {
		names := make([]string, len(tools))
		for i, t := range tools {
			names[i] = t.Name
		}
		c.log.Info("MCP server: tools offered", "tools", names)
	}
	return nil
}

// listTools reads the server's tools, page by page, at most maxPages
// pages and maxListed tools: a server that pages on and on is read no
// further. A tool that does not decode is left out, the others kept: it
// is counted, and named in the log (the first maxSkippedLogged of a list).
func (c *Client) listTools(ctx context.Context, cl *client.Client) ([]mcp.Tool, error) {
	var out []mcp.Tool
	var req mcp.ListToolsRequest
	skipped := 0
	defer func() {
		if skipped > maxSkippedLogged {
			c.log.Warn("MCP server: more of its tools do not decode; they are not offered", "more", skipped-maxSkippedLogged)
		}
	}()
	for page := 1; page <= maxPages; page++ {
		res, err := cl.ListToolsByPage(ctx, req)
		if err != nil {
			return nil, fmt.Errorf("list the tools: %s", c.redact(err.Error()))
		}
		for _, s := range res.Skipped {
			c.refused("malformed")
			if skipped++; skipped <= maxSkippedLogged {
				name := c.redact(s.Name)
				if name == "" {
					name = fmt.Sprintf("tools[%d]", s.Index)
				}
				c.log.Warn("MCP server: a tool does not decode; it is not offered", "tool", name, "page", page, "err", c.redact(s.Err.Error()))
			}
		}
		out = append(out, res.Tools...)
		if len(out) > maxListed {
			return out[:maxListed], nil
		}
		if res.NextCursor == "" || res.NextCursor == req.Params.Cursor {
			return out, nil
		}
		req.Params.Cursor = res.NextCursor
	}
	c.log.Warn("MCP server: its tools are read no further than the first pages", "pages", maxPages, "tools", len(out))
	return out, nil
}

// allowed are the listed tools the config allows, and the allowed names
// not listed.
func (c *Client) allowed(listed []mcp.Tool) ([]Tool, []string) {
	var out []Tool
	seen := map[string]bool{}
	for _, t := range listed {
		if !slices.Contains(c.s.Allow, t.Name) || seen[t.Name] {
			continue
		}
		seen[t.Name] = true
		schema, err := json.Marshal(t.InputSchema)
		switch {
		case err != nil || t.InputSchema.Type != "object":
			err = errors.New("not a JSON Schema object")
		case len(schema) > MaxSchema:
			err = fmt.Errorf("over %d bytes", MaxSchema)
		case c.CheckSchema != nil:
			err = c.CheckSchema(schema)
		}
		if err != nil {
			c.log.Warn("MCP server: a tool's input schema is refused; the tool is not offered", "tool", t.Name, "err", c.redact(err.Error()))
			c.refused("schema")
			continue
		}
		desc := strings.Map(printable, t.Description)
		if len(desc) > MaxDescription {
			desc = strings.ToValidUTF8(desc[:MaxDescription], "") + "…"
		}
		ro := t.Annotations.ReadOnlyHint != nil && *t.Annotations.ReadOnlyHint
		out = append(out, Tool{Name: ToolName(c.s.Name, t.Name), Remote: t.Name, Description: desc, Schema: schema, ReadOnly: ro})
	}
	var missing []string
	for _, a := range c.s.Allow {
		if !seen[a] {
			missing = append(missing, a)
		}
	}
	return out, missing
}

// refused counts a tool not offered (Refused).
func (c *Client) refused(why string) {
	if c.Refused != nil {
		c.Refused(why)
	}
}

// connect starts a session with the server, bounded by ctx, and keeps it.
func (c *Client) connect(ctx context.Context) (*client.Client, error) {
	cl, err := c.dial(ctx)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	c.c = cl
	c.mu.Unlock()
	return cl, nil
}

// dial starts a session with the server (initialize), bounded by ctx.
func (c *Client) dial(ctx context.Context) (*client.Client, error) {
	opts := []transport.StreamableHTTPCOption{transport.WithHTTPBasicClient(&http.Client{Transport: boundedTransport{http.DefaultTransport}}),
		transport.WithHTTPLogger(c.log)}
	if c.token != "" {
		opts = append(opts, transport.WithHTTPHeaders(map[string]string{"Authorization": "Bearer " + c.token}))
	}
	cl, err := client.NewStreamableHttpClient(c.s.URL, opts...)
	if err != nil {
		return nil, fmt.Errorf("mcp %s: %w", c.s.Name, err)
	}
	if err := cl.Start(ctx); err != nil {
		return nil, fmt.Errorf("connect: %s", c.redact(err.Error()))
	}
	cl.OnNotification(func(n mcp.JSONRPCNotification) {
		if n.Method == mcp.MethodNotificationToolsListChanged {
			select {
			case c.changed <- struct{}{}:
			default:
			}
		}
	})
	var init mcp.InitializeRequest
	init.Params.ProtocolVersion = mcp.LATEST_PROTOCOL_VERSION
	init.Params.ClientInfo = mcp.Implementation{Name: "chorus", Version: "1"}
	if _, err := cl.Initialize(ctx, init); err != nil {
		cl.Close()
		if errors.Is(err, transport.ErrAuthorizationRequired) || errors.Is(err, transport.ErrOAuthAuthorizationRequired) {
			return nil, fmt.Errorf("initialize: %w", ErrRefused)
		}
		return nil, fmt.Errorf("initialize: %s", c.redact(err.Error()))
	}
	return cl, nil
}

func (c *Client) disconnect() {
	c.mu.Lock()
	cl := c.c
	c.c, c.tools = nil, nil
	c.mu.Unlock()
	if cl != nil {
		cl.Close()
	}
}

// boundedTransport bounds what one answer may make the robot read.
type boundedTransport struct{ http.RoundTripper }

func (t boundedTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	res, err := t.RoundTripper.RoundTrip(r)
	if err == nil {
		res.Body = &boundedBody{ReadCloser: res.Body, left: maxBody}
	}
	return res, err
}

type boundedBody struct {
	io.ReadCloser
	left int64
}

// ErrRefused is a server's 401: it did not take the token.
var ErrRefused = errors.New("the server refused the token (HTTP 401)")

var errTooLong = errors.New("mcp: the server's answer is over 4 MB")

func (b *boundedBody) Read(p []byte) (int, error) {
	if b.left <= 0 {
		return 0, errTooLong
	}
	if int64(len(p)) > b.left {
		p = p[:b.left]
	}
	n, err := b.ReadCloser.Read(p)
	b.left -= int64(n)
	return n, err
}

// ToolName is what the robot calls a server's tool: the server's name,
// _, and the tool's, its dots made _ (MCP allows them in a tool's name;
// the models' APIs take letters, digits, _ and - only): ha_HassTurnOn,
// ha_light_turn_on.
func ToolName(server, tool string) string {
	return server + "_" + strings.ReplaceAll(tool, ".", "_")
}
