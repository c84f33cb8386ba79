// Package mcpserve serves a robot's tools to other programs over MCP —
// streamable HTTP at /mcp on the robot's HTTP listener, stateless, JSON
// answers — so that a desktop agent or an automation can make the robot
// say something, do one of its body's actions, take a picture, or read
// and erase what it remembers about the caller (docs/mcp.md).
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
	"github.com/chorus-robotics/chorus/runtime/query"
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
	Body      string // the device its body's queries go to (speak, look, actions)
	Asker     query.Asker
	Timeout   time.Duration               // a body's query
	Actions   func() []protocol.ActionDef // the body's actions now; nil: none
	Camera    bool                        // the body has a camera: the look tool
	Memory    bool                        // the companion remembers people: the memory tools
	Version   string                      // the server's version, as clients show it
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

	mu      sync.Mutex
	actions []string // the action tools offered now
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
	if cfg.Camera {
		s.mcp.AddTool(mcp.NewTool("look",
			mcp.WithDescription("Take a picture with the robot's camera, now; the picture is the answer (JPEG)."),
			mcp.WithTitleAnnotation("Look through the camera"),
			mcp.WithReadOnlyHintAnnotation(true), mcp.WithDestructiveHintAnnotation(false), mcp.WithOpenWorldHintAnnotation(false)), s.look)
	}
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
	s.syncActions()
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

// syncActions offers the body's actions as they are now.
func (s *Server) syncActions() {
	var defs []protocol.ActionDef
	if s.cfg.Actions != nil {
		defs = s.cfg.Actions()
	}
	names := make([]string, 0, len(defs))
	for _, d := range defs {
		names = append(names, d.Name)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if slices.Equal(names, s.actions) {
		return
	}
	if len(s.actions) > 0 {
		s.mcp.DeleteTools(s.actions...)
	}
	s.actions = nil
	for _, d := range defs {
		if d.Name == "say" || d.Name == "look" || strings.HasPrefix(d.Name, "memory_") {
			continue // the robot's own tools keep their names
		}
		tool := mcp.NewToolWithRawSchema(d.Name, d.Description, d.Schema)
		tool.Annotations.ReadOnlyHint, tool.Annotations.DestructiveHint, tool.Annotations.OpenWorldHint = new(false), new(false), new(false)
		name := d.Name
		s.mcp.AddTool(tool, func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return s.act(ctx, name, req)
		})
		s.actions = append(s.actions, d.Name)
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

func (s *Server) look(ctx context.Context, _ mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	res, err := query.Look(ctx, s.cfg.Asker, s.cfg.Body, s.cfg.Timeout)
	if err != nil {
		return mcp.NewToolResultError("no picture: " + err.Error()), nil
	}
	mime := res.MIME
	if mime == "" {
		mime = "image/jpeg"
	}
	return &mcp.CallToolResult{Content: []mcp.Content{mcp.NewImageContent(res.Image, mime)}}, nil
}

func (s *Server) act(ctx context.Context, name string, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	raw := req.Params.Arguments
	if _, isObject := raw.(map[string]any); raw != nil && !isObject {
		return mcp.NewToolResultError(name + ": the arguments must be a JSON object"), nil
	}
	args, err := json.Marshal(req.GetArguments())
	if err != nil || string(args) == "null" {
		args = []byte("{}")
	}
	r := protocol.ActionRequest{Name: name, Args: args}
	if err := r.Validate(); err != nil {
		return mcp.NewToolResultError(err.Error()), nil
	}
	res, err := query.Action(ctx, s.cfg.Asker, s.cfg.Body, r, s.cfg.Timeout)
	switch {
	case err != nil:
		return mcp.NewToolResultError(fmt.Sprintf("%s: %v", name, err)), nil
	case !res.Done:
		return mcp.NewToolResultError(fmt.Sprintf("%s was not done: %s", name, res.Detail)), nil
	}
	return mcp.NewToolResultText(fmt.Sprintf("%s: done in %d ms.", name, res.DurationMs)), nil
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
