package mcpserve_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/chorus-robotics/chorus/device/bridge"
	"github.com/chorus-robotics/chorus/device/mcpserve"
	"github.com/chorus-robotics/chorus/drivers/mcp/mcptest"
	"github.com/chorus-robotics/chorus/runtime/protocol"
	"github.com/chorus-robotics/chorus/runtime/query"
	"github.com/chorus-robotics/chorus/runtime/tool"
)

// gate is the bridge as the server sees it: three tokens, and what it
// was asked to send and to ask memory.
type gate struct {
	mu     sync.Mutex
	sent   []protocol.Message
	memory []protocol.MemoryRequest
	asAs   []string
}

var tokens = map[string]bridge.Token{
	"alice-token-0123456": {Role: bridge.User, Name: "alice"},
	"viewer-token-012345": {Role: bridge.Viewer},
	"device-token-012345": {Role: bridge.Device, Name: "body"},
}

func (g *gate) Authenticate(r *http.Request) (bridge.Token, string) {
	h := r.Header.Get("Authorization")
	if h == "" {
		return bridge.Token{}, "no_token"
	}
	if t, ok := tokens[strings.TrimPrefix(h, "Bearer ")]; ok {
		return t, ""
	}
	return bridge.Token{}, "bad_token"
}

func (g *gate) Send(_ context.Context, tok bridge.Token, m protocol.Message) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.sent = append(g.sent, m)
	return nil
}

func (g *gate) Memory(_ context.Context, tok bridge.Token, device string, req protocol.MemoryRequest) (protocol.MemoryAnswer, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.memory, g.asAs = append(g.memory, req), append(g.asAs, tok.Name+"@"+device)
	if req.Op == protocol.MemoryForget {
		return protocol.MemoryAnswer{Forgotten: 2}, nil
	}
	return protocol.MemoryAnswer{Facts: []protocol.MemoryFact{{Text: "alice likes tea"}, {Text: "alice lives in Osaka"}}}, nil
}

// body answers the server's queries as a robot's body does.
type body struct {
	mu    sync.Mutex
	asked []string
}

func (b *body) Ask(_ context.Context, device, typ string, payload any, _ time.Duration, _ ...query.CallOption) (json.RawMessage, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	raw, _ := json.Marshal(payload)
	b.asked = append(b.asked, device+" "+typ+" "+string(raw))
	switch typ {
	case protocol.TypeVision:
		return json.RawMessage(`{"image":"/9j/4AAQSkZJRg==","mime":"image/jpeg","width":1,"height":1}`), nil
	case protocol.TypeAction:
		return json.RawMessage(`{"name":"nod","done":true,"durationMs":420}`), nil
	}
	return nil, errors.New("no such query")
}

func serve(t *testing.T) (*gate, *body, string) { return serveUnable(t, nil) }

func serveUnable(t *testing.T, unable func() string) (*gate, *body, string) {
	g, b := &gate{}, &body{}
	// The robot's registry as a companion's: the body's camera and its
	// actions for agents, and a tool for the model only.
	reg := &tool.Registry{}
	if err := reg.Add(query.LookTool(b, "kyoko-pi", time.Second)); err != nil {
		t.Fatal(err)
	}
	if err := reg.Add(tool.Tool{Name: "date_time", Description: "The model's.", Call: tool.Text(func(context.Context, json.RawMessage) (string, error) { return "noon", nil })}); err != nil {
		t.Fatal(err)
	}
	reg.Source(func() []tool.Tool {
		return query.ActionTools(b, "kyoko-pi", []protocol.ActionDef{{Name: "nod", Description: "Nod your head.",
			Schema: json.RawMessage(`{"type":"object","properties":{"times":{"type":"integer"}}}`)},
			// The server's own names, whatever their case, stay its own.
			{Name: "Memory_List", Description: "Not the robot's memory."}, {Name: "SAY", Description: "Not say."}})
	})
	s := mcpserve.New(mcpserve.Config{Gate: g, Companion: "kyoko", Device: "kyoko-pi", Timeout: time.Second,
		Memory: true, Version: "test", Unable: unable,
		Tools: func() []tool.Tool { return reg.Tools(tool.ForAgents) }})
	srv := httptest.NewServer(s)
	t.Cleanup(srv.Close)
	return g, b, srv.URL + mcpserve.Path
}

func connect(t *testing.T, url, tok string) (*sdk.ClientSession, error) {
	c := sdk.NewClient(&sdk.Implementation{Name: "agent", Version: "1"}, nil)
	return c.Connect(t.Context(), &sdk.StreamableClientTransport{Endpoint: url, HTTPClient: &http.Client{Transport: mcptest.Bearer(tok)}}, nil)
}

// session is an agent's session with the server at url, with token tok,
// closed when the test ends.
func session(t *testing.T, url, tok string) *sdk.ClientSession {
	t.Helper()
	cs, err := connect(t, url, tok)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

func text(res *sdk.CallToolResult) string {
	var out []string
	for _, c := range res.Content {
		if tc, ok := c.(*sdk.TextContent); ok {
			out = append(out, tc.Text)
		}
	}
	return strings.Join(out, "\n")
}

// An agent with a user token lists the robot's tools and uses each: say
// sends the words into the room as the person the token names (metadata
// say, to the robot's companion), look answers the body's picture, an
// action is the body's, memory is the caller's own.
func TestAnAgentUsesTheRobotsTools(t *testing.T) {
	g, b, url := serve(t)
	cs := session(t, url, "alice-token-0123456")
	lt, err := cs.ListTools(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tl := range lt.Tools {
		names = append(names, tl.Name)
	}
	if got := strings.Join(names, " "); got != "look memory_forget memory_list nod say" {
		t.Fatalf("tools %q", got)
	}
	call := func(name string, args map[string]any) *sdk.CallToolResult {
		t.Helper()
		res, err := cs.CallTool(t.Context(), &sdk.CallToolParams{Name: name, Arguments: args})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		return res
	}
	if res := call("say", map[string]any{"text": "Dinner is ready!"}); res.IsError {
		t.Fatalf("say: %s", text(res))
	}
	g.mu.Lock()
	if len(g.sent) != 1 || g.sent[0].Params.From != "alice" || g.sent[0].Params.Message != "Dinner is ready!" ||
		len(g.sent[0].Params.To) != 1 || g.sent[0].Params.To[0] != "kyoko" || g.sent[0].Params.Metadata[protocol.MetaSay] != true {
		t.Errorf("sent %+v", g.sent)
	}
	g.mu.Unlock()
	if res := call("say", map[string]any{"text": strings.Repeat("a", mcpserve.MaxSay+1)}); !res.IsError {
		t.Error("a say over the bound was taken")
	}
	res := call("look", nil)
	if img, ok := res.Content[0].(*sdk.ImageContent); !ok || img.MIMEType != "image/jpeg" || len(img.Data) == 0 {
		t.Errorf("look answered %+v", res.Content)
	}
	if res := call("nod", map[string]any{"times": 2}); res.IsError || !strings.Contains(text(res), "nod: done") {
		t.Errorf("nod: %s", text(res))
	}
	b.mu.Lock()
	if len(b.asked) != 2 || !strings.HasPrefix(b.asked[1], `kyoko-pi action {"name":"nod","args":{"times":2}}`) {
		t.Errorf("the body was asked %q", b.asked)
	}
	b.mu.Unlock()
	if res := call("memory_list", nil); !strings.Contains(text(res), "alice lives in Osaka") {
		t.Errorf("memory_list: %s", text(res))
	}
	if res := call("memory_forget", nil); !strings.Contains(text(res), "Forgot 2 facts about alice") {
		t.Errorf("memory_forget: %s", text(res))
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	for i, r := range g.memory {
		if r.Person != "alice" || g.asAs[i] != "alice@kyoko-pi" {
			t.Errorf("memory asked %+v as %s: want alice's own, as alice", r, g.asAs[i])
		}
	}
}

func TestOnlyAUserTokenIsServed(t *testing.T) {
	_, _, url := serve(t)
	for _, tc := range []struct {
		tok  string
		code int
	}{{"", 401}, {"wrong-token-0123456", 401}, {"viewer-token-012345", 403}, {"device-token-012345", 403}} {
		req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if tc.tok != "" {
			req.Header.Set("Authorization", "Bearer "+tc.tok)
		}
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != tc.code {
			t.Errorf("token %q: HTTP %d, want %d", tc.tok, res.StatusCode, tc.code)
		}
	}
	if _, err := connect(t, url, "viewer-token-012345"); err == nil {
		t.Error("the SDK connected with a viewer's token")
	}
}

// What an agent's requests carry is checked as a stranger's: a say's
// control characters are dropped (a terminal's escape sequences), an
// action's arguments must be an object, and a robot that cannot speak
// (muted, its body offline) refuses a say instead of taking it.
func TestAnAgentsRequestsAreChecked(t *testing.T) {
	g, _, url := serve(t)
	cs := session(t, url, "alice-token-0123456")
	call := func(name string, args any) *sdk.CallToolResult {
		t.Helper()
		res, err := cs.CallTool(t.Context(), &sdk.CallToolParams{Name: name, Arguments: args})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		return res
	}
	call("say", map[string]any{"text": "bell\x07 esc\x1b[31mred\x1b[0m\nnext \u202eline"})
	g.mu.Lock()
	if len(g.sent) != 1 || g.sent[0].Params.Message != "bell esc[31mred[0m next line" {
		t.Errorf("sent %q", g.sent[0].Params.Message)
	}
	g.mu.Unlock()
	for _, args := range []any{[]any{1, 2}, "left"} {
		if res := call("nod", args); !res.IsError {
			t.Errorf("nod with arguments %v: %s", args, text(res))
		}
	}
	lt, err := cs.ListTools(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tl := range lt.Tools {
		a := tl.Annotations
		if a == nil || a.DestructiveHint == nil || *a.DestructiveHint != (tl.Name == "memory_forget") || a.ReadOnlyHint != (tl.Name == "look" || tl.Name == "memory_list") {
			t.Errorf("%s: annotations %+v", tl.Name, a)
		}
	}

	_, _, muted := serveUnable(t, func() string { return "it is muted" })
	cs2 := session(t, muted, "alice-token-0123456")
	res, err := cs2.CallTool(t.Context(), &sdk.CallToolParams{Name: "say", Arguments: map[string]any{"text": "Hello"}})
	if err != nil || !res.IsError || !strings.Contains(text(res), "kyoko cannot say anything now: it is muted") {
		t.Errorf("say to a muted robot: %v %v", res, err)
	}
}

func TestOnlyAPostWithTheTokenInItsHeader(t *testing.T) {
	_, _, url := serve(t)
	res, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("GET: HTTP %d, want 405 (no stream to open)", res.StatusCode)
	}
	req, _ := http.NewRequest(http.MethodPost, url+"?token=alice-token-0123456", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if res, err = http.DefaultClient.Do(req); err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusUnauthorized {
		t.Errorf("a token in the URL: HTTP %d, want 401", res.StatusCode)
	}
}
