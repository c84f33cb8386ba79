// Package mcpserve serves a robot's tools to other programs over MCP —
// streamable HTTP at /mcp on the robot's HTTP listener, stateless, JSON
// answers — so that a desktop agent or an automation can make the robot
// say something, do one of its body's actions, take a picture, or read
// and erase what it remembers about the caller (docs/mcp.md).
//
// say and the memory tools are the caller's, through the bridge (Gate):
// words said for the person a token names, that person's facts. Every
// other tool is the robot's registry's (runtime/tool) that agents may
// call (tool.ForAgents: the body's actions, its camera), listed again at
// each request and run by its name.
//
// Every request carries one of the bridge's tokens (http.websocket's
// tokens, as a bearer token); only a user token may call, as the person
// it names: a say is that person's words for the robot to say, a memory
// tool reads and forgets that person's facts only. A request without a
// token is refused (401), a viewer's or a device's too (403).
package mcpserve

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/chorus-robotics/chorus/device/bridge"
	"github.com/chorus-robotics/chorus/runtime/protocol"
	"github.com/chorus-robotics/chorus/runtime/tool"
)

// Path is where the robot serves MCP on its HTTP listener.
const Path = "/mcp"

// MaxSay bounds the words of one say (characters).
const MaxSay = 500

// maxBody bounds one request's body.
const maxBody = 1 << 20

// Gate is what the server needs of the robot's bridge: the tokens, and
// speaking and asking memory as the person a token names.
type Gate interface {
	Authenticate(r *http.Request) (bridge.Token, string)
	Send(ctx context.Context, tok bridge.Token, m protocol.Message) error
	Memory(ctx context.Context, tok bridge.Token, device string, req protocol.MemoryRequest) (protocol.MemoryAnswer, error)
}

// Config is one robot's MCP server.
type Config struct {
	Gate      Gate
	Companion string // the robot's companion id: whom a say is for
	Device    string // the robot's device id: its memory control
	// Tools are the robot's tools agents may call now (its registry's,
	// tool.ForAgents); nil: none but say and memory.
	Tools   func() []tool.Tool
	Timeout time.Duration // a call of one of Tools without its own
	Memory  bool          // the companion remembers people: the memory tools
	Version string        // the server's version, as clients show it
	// Unable, when set, says why the robot would not say anything now
	// ("" when it would): muted, its body offline. A say is refused then.
	Unable  func() string
	Log     *slog.Logger
	Refused func(why string) // counts a refused request (no_token, bad_token, role)
}

// Server is the robot's MCP server (an http.Handler).
//
// # Concurrency
//
// Safe for concurrent requests; the body's actions are read again at
// each request and the tools changed when they did.
type Server struct {
	cfg  Config
	mcp  *server.MCPServer
	http *server.StreamableHTTPServer

	mu    sync.Mutex
	tools []tool.Tool // the registry's tools offered now
}

type tokenKey struct{}

// New is the server of cfg.
func New(cfg Config) *Server {
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	s := &Server{cfg: cfg}
	s.mcp = server.NewMCPServer("chorus-"+cfg.Companion, cfg.Version, server.WithToolCapabilities(true),
		server.WithInstructions("A Chorus robot, "+cfg.Companion+": say something through it, move its body, look through its camera, and read or erase what it remembers about you."))
	s.mcp.AddTool(mcp.NewTool("say",
		mcp.WithDescription("Have the robot say these words aloud in its room, word for word, when the room gives it the turn (it waits for whoever is speaking). The words are yours: the room hears them as said for you."),
		mcp.WithTitleAnnotation("Say something aloud"),
		mcp.WithReadOnlyHintAnnotation(false), mcp.WithDestructiveHintAnnotation(false), mcp.WithOpenWorldHintAnnotation(false),
		mcp.WithString("text", mcp.Required(), mcp.MaxLength(MaxSay), mcp.Description("the words, as they are to be said"))), s.say)
	if cfg.Memory {
		s.mcp.AddTool(mcp.NewTool("memory_list",
			mcp.WithDescription("What the robot remembers about you (the person your token names): one fact a line."),
			mcp.WithTitleAnnotation("What the robot remembers about you"),
			mcp.WithReadOnlyHintAnnotation(true), mcp.WithDestructiveHintAnnotation(false), mcp.WithOpenWorldHintAnnotation(false)), s.memoryList)
		s.mcp.AddTool(mcp.NewTool("memory_forget",
			mcp.WithDescription("Make the robot forget everything it remembers about you (the person your token names), and your voice. It cannot be undone."),
			mcp.WithTitleAnnotation("Forget me"),
			mcp.WithReadOnlyHintAnnotation(false), mcp.WithDestructiveHintAnnotation(true), mcp.WithOpenWorldHintAnnotation(false)), s.memoryForget)
	}
	s.http = server.NewStreamableHTTPServer(s.mcp, server.WithStateLess(true), server.WithEndpointPath(Path),
		server.WithHTTPContextFunc(func(ctx context.Context, r *http.Request) context.Context {
			return context.WithValue(ctx, tokenKey{}, r.Context().Value(tokenKey{}))
		}))
	return s
}

// ServeHTTP authenticates r and serves it: POST only (the server is
// stateless: it has no stream of its own to open), the token in the
// Authorization header only (a URL's ends up in logs).
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		http.Error(w, "the robot's MCP server takes POST only", http.StatusMethodNotAllowed)
		return
	}
	tok, why := s.cfg.Gate.Authenticate(r)
	switch {
	case r.URL.Query().Has("token"):
		s.refuse(w, "token_in_url", http.StatusUnauthorized, "send the token in the Authorization header, not in the URL")
		return
	case why != "":
		s.refuse(w, why, http.StatusUnauthorized, "a token is required: Authorization: Bearer <a user token of the robot's bridge>")
		return
	case tok.Role != bridge.User:
		s.refuse(w, "role", http.StatusForbidden, fmt.Sprintf("a %s token may not use the robot's tools: a user token may", tok.Role))
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, maxBody)
	s.syncTools()
	s.http.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), tokenKey{}, tok)))
}

func (s *Server) refuse(w http.ResponseWriter, why string, code int, msg string) {
	if s.cfg.Refused != nil {
		s.cfg.Refused(why)
	}
	if code == http.StatusUnauthorized {
		w.Header().Set("WWW-Authenticate", `Bearer realm="chorus"`)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	json.NewEncoder(w).Encode(map[string]any{"jsonrpc": "2.0", "id": nil, "error": map[string]any{"code": -32001, "message": msg}})
}

// own are the tools the server serves itself; the registry's with their
// names are not offered.
var own = []string{"say", "memory_list", "memory_forget"}

// syncTools offers the registry's tools as they are now.
func (s *Server) syncTools() {
	var ts []tool.Tool
	if s.cfg.Tools != nil {
		ts = slices.DeleteFunc(s.cfg.Tools(), func(t tool.Tool) bool {
			return slices.ContainsFunc(own, func(n string) bool { return strings.EqualFold(n, t.Name) }) || !t.For(tool.ForAgents) || t.Call == nil
		})
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if slices.EqualFunc(ts, s.tools, func(a, b tool.Tool) bool {
		return a.Name == b.Name && a.Description == b.Description && string(a.Parameters) == string(b.Parameters)
	}) {
		return
	}
	if len(s.tools) > 0 {
		names := make([]string, len(s.tools))
		for i, t := range s.tools {
			names[i] = t.Name
		}
		s.mcp.DeleteTools(names...)
	}
	s.tools = ts
	for _, t := range ts {
		var m mcp.Tool
		if len(t.Parameters) > 0 {
			m = mcp.NewToolWithRawSchema(t.Name, t.Description, t.Parameters)
		} else {
			m = mcp.NewTool(t.Name, mcp.WithDescription(t.Description))
		}
		m.Annotations.Title = t.Title
		m.Annotations.ReadOnlyHint, m.Annotations.DestructiveHint, m.Annotations.OpenWorldHint = new(t.ReadOnly), new(false), new(false)
		s.mcp.AddTool(m, func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return s.run(ctx, t, req)
		})
	}
}

func caller(ctx context.Context) bridge.Token {
	tok, _ := ctx.Value(tokenKey{}).(bridge.Token)
	return tok
}

func (s *Server) say(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	text, err := req.RequireString("text")
	text = strings.TrimSpace(strings.Map(speakable, text))
	switch {
	case err != nil || text == "":
		return mcp.NewToolResultError("say needs text: the words to say"), nil
	case utf8.RuneCountInString(text) > MaxSay:
		return mcp.NewToolResultError(fmt.Sprintf("text: at most %d characters", MaxSay)), nil
	}
	if s.cfg.Unable != nil {
		if why := s.cfg.Unable(); why != "" {
			return mcp.NewToolResultError(s.cfg.Companion + " cannot say anything now: " + why), nil
		}
	}
	tok := caller(ctx)
	m := protocol.NewMessage(protocol.NewID(), tok.Name, []string{s.cfg.Companion}, text, "")
	m.Params.Metadata = map[string]any{protocol.MetaSay: true}
	if err := s.cfg.Gate.Send(ctx, tok, m); err != nil {
		s.cfg.Log.Warn("MCP say: not sent to the room", "caller", tok.Name, "err", err)
		return mcp.NewToolResultError("not sent to the room: " + err.Error()), nil
	}
	return mcp.NewToolResultText(fmt.Sprintf("%s will say it when the room gives it the turn (message %s).", s.cfg.Companion, m.Params.ID)), nil
}

// speakable keeps what words are made of: a control character (an
// escape sequence for a terminal) is dropped, a line break or a tab is a
// space.
func speakable(r rune) rune {
	switch {
	case r == '\n' || r == '\t' || r == '\r':
		return ' '
	case unicode.IsControl(r), r >= 0x202A && r <= 0x202E, r >= 0x2066 && r <= 0x2069:
		return -1
	}
	return r
}

// run runs one of the registry's tools for the caller.
func (s *Server) run(ctx context.Context, t tool.Tool, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	raw := req.Params.Arguments
	if _, isObject := raw.(map[string]any); raw != nil && !isObject {
		return mcp.NewToolResultError(t.Name + ": the arguments must be a JSON object"), nil
	}
	args, err := json.Marshal(req.GetArguments())
	if err != nil || string(args) == "null" {
		args = []byte("{}")
	}
	res, err := tool.Run(ctx, t, tool.Call{Name: t.Name, Args: args, Caller: caller(ctx).Name}, s.cfg.Timeout)
	switch {
	case err != nil:
		return mcp.NewToolResultError(err.Error()), nil
	case res.Image != "":
		return &mcp.CallToolResult{Content: []mcp.Content{mcp.NewImageContent(res.Image, res.MIME)}}, nil
	}
	return mcp.NewToolResultText(res.Text), nil
}

func (s *Server) memoryList(ctx context.Context, _ mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	tok := caller(ctx)
	a, err := s.cfg.Gate.Memory(ctx, tok, s.cfg.Device, protocol.MemoryRequest{ID: protocol.NewID(), Op: protocol.MemoryList, Person: tok.Name})
	if err == nil && a.Error != "" {
		err = fmt.Errorf("%s", a.Error)
	}
	if err != nil {
		return mcp.NewToolResultError("memory: " + err.Error()), nil
	}
	if len(a.Facts) == 0 {
		return mcp.NewToolResultText("Nothing remembered about " + tok.Name + "."), nil
	}
	lines := make([]string, len(a.Facts))
	for i, f := range a.Facts {
		lines[i] = f.Text
	}
	return mcp.NewToolResultText(strings.Join(lines, "\n")), nil
}

func (s *Server) memoryForget(ctx context.Context, _ mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	tok := caller(ctx)
	a, err := s.cfg.Gate.Memory(ctx, tok, s.cfg.Device, protocol.MemoryRequest{ID: protocol.NewID(), Op: protocol.MemoryForget, Person: tok.Name})
	if err == nil && a.Error != "" {
		err = fmt.Errorf("%s", a.Error)
	}
	if err != nil {
		return mcp.NewToolResultError("memory: " + err.Error()), nil
	}
	return mcp.NewToolResultText(fmt.Sprintf("Forgot %d facts about %s.", a.Forgotten, tok.Name)), nil
}
