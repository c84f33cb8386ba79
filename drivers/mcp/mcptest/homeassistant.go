// Package mcptest is a fake Home Assistant MCP server for tests.
//
// It serves what Home Assistant's mcp_server integration (HA 2025.2 and
// later) serves, built on the official Go MCP SDK: the streamable HTTP
// transport at POST /api/mcp, stateless (no Mcp-Session-Id; every POST is a
// fresh server, as HA builds one per request) and answered with a single
// JSON body rather than an SSE stream, behind a long-lived access token sent
// as "Authorization: Bearer <token>". The tools are HassTurnOn, HassTurnOff,
// HassLightSet and GetLiveContext with Home Assistant's own names,
// descriptions and input schemas (tools.go says where each was copied
// from), over a small house:
//
//	light.kitchen      "Kitchen Light"      area Kitchen
//	light.living_room  "Living Room Light"  area Living Room
//	switch.coffee      "Coffee Maker"       area Kitchen (device class outlet)
//
// everything off at the start.
//
// It answers as unkindly as the real one: arguments that break the schema
// come back as an isError result "Input validation error: ...", a target
// that matches nothing as an isError result "Error calling tool:
// <MatchFailedError ...>" (HA's Python repr, not a JSON-RPC error), an
// unknown argument to an intent tool is silently ignored while
// GetLiveContext refuses it, a missing or wrong token is a 401, a stopping
// HA a bare 503.
package mcptest

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"mime"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Bearer is an HTTP transport that adds token as a bearer token to every
// request: an MCP client's, as Home Assistant's users configure theirs.
func Bearer(token string) http.RoundTripper { return bearer{token, http.DefaultTransport} }

type bearer struct {
	token string
	next  http.RoundTripper
}

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return b.next.RoundTrip(r)
}

// Path is where Home Assistant serves its MCP server.
const Path = "/api/mcp"

// HomeAssistant is a fake Home Assistant MCP server.
type HomeAssistant struct {
	token string
	srv   *httptest.Server
	mcp   http.Handler

	mu       sync.Mutex
	calls    []Call
	requests int
	refused  int
	lists    int
	stall    time.Duration
	down     bool
	answers  map[string]string
	house    *house
}

// Call is one tools/call the server received.
type Call struct {
	Name string
	// Args are the call's arguments as encoding/json decodes them (numbers
	// are float64); nil when the call had none.
	Args map[string]any
}

// NewHomeAssistant starts a fake Home Assistant on a loopback port that
// accepts token as its long-lived access token, and closes it when the test
// ends.
func NewHomeAssistant(t testing.TB, token string) *HomeAssistant {
	t.Helper()
	h := &HomeAssistant{token: token, answers: map[string]string{}, house: newHouse()}

	// HA's server reports the Python MCP SDK's version as its own, and
	// tools whose list never changes.
	server := mcp.NewServer(&mcp.Implementation{Name: "home-assistant", Version: "1.26.0"}, &mcp.ServerOptions{
		Capabilities: &mcp.ServerCapabilities{Tools: &mcp.ToolCapabilities{ListChanged: false}},
	})
	for _, tool := range mcpTools() {
		server.AddTool(tool, h.callTool)
	}
	server.AddReceivingMiddleware(h.middleware)
	h.mcp = mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server },
		&mcp.StreamableHTTPOptions{Stateless: true, JSONResponse: true})

	h.srv = httptest.NewServer(http.HandlerFunc(h.serveHTTP))
	t.Cleanup(h.srv.Close)
	return h
}

// URL is the MCP endpoint, "http://127.0.0.1:<port>/api/mcp".
func (h *HomeAssistant) URL() string { return h.srv.URL + Path }

// Calls returns every tools/call received, in order, including those that
// failed validation or matched nothing.
func (h *HomeAssistant) Calls() []Call {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]Call(nil), h.calls...)
}

// Lists is how many tools/list requests were answered.
func (h *HomeAssistant) Lists() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.lists
}

// Requests is the number of HTTP requests received, authorized or not.
func (h *HomeAssistant) Requests() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.requests
}

// Refused is the number of requests answered 401 for a missing or wrong
// token.
func (h *HomeAssistant) Refused() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.refused
}

// Stall makes each tools/call from now on wait d, or until its HTTP request
// ends, before it is answered. Zero stops stalling.
func (h *HomeAssistant) Stall(d time.Duration) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.stall = d
}

// Down makes every request get a bare 503, as Home Assistant answers while
// it is stopping (for a restart), or brings it back.
func (h *HomeAssistant) Down(down bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.down = down
}

// Answer makes tool answer text (as a successful result) from now on,
// whatever its arguments, without touching the house: an injection
// attempt, a huge answer. An empty text restores the real answer. The call
// is still recorded and still stalls.
func (h *HomeAssistant) Answer(tool, text string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if text == "" {
		delete(h.answers, tool)
		return
	}
	h.answers[tool] = text
}

// Light reports whether the house's light (or switch) with this entity id
// is on, e.g. "light.kitchen".
func (h *HomeAssistant) Light(id string) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	e := h.house.entity(id)
	return e != nil && e.on
}

// Brightness is the light's brightness attribute as HA keeps it (0..255,
// from HassLightSet's percentage), 0 while it is off.
func (h *HomeAssistant) Brightness(id string) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	e := h.house.entity(id)
	if e == nil || !e.on {
		return 0
	}
	return e.brightness
}

// Color is the rgb_color HassLightSet last gave the light, nil if none.
func (h *HomeAssistant) Color(id string) []int {
	h.mu.Lock()
	defer h.mu.Unlock()
	if e := h.house.entity(id); e != nil && e.rgb != nil {
		return append([]int(nil), e.rgb...)
	}
	return nil
}

// knownMethods are the client requests the Python MCP SDK knows
// (types.ClientRequestType); HA's HTTP view answers any other method with a
// JSON-RPC "Method not found" error itself.
var knownMethods = map[string]bool{
	"ping": true, "initialize": true, "completion/complete": true,
	"logging/setLevel": true, "prompts/get": true, "prompts/list": true,
	"resources/list": true, "resources/templates/list": true,
	"resources/read": true, "resources/subscribe": true,
	"resources/unsubscribe": true, "tools/call": true, "tools/list": true,
}

type httpCtxKey struct{}

// serveHTTP does what aiohttp and HA's views do before the MCP server sees
// a request (homeassistant/helpers/http.py request_handler_factory;
// mcp_server/http.py ModelContextProtocolStreamableView), then hands it to
// the SDK's stateless handler.
func (h *HomeAssistant) serveHTTP(w http.ResponseWriter, r *http.Request) {
	h.mu.Lock()
	h.requests++
	down := h.down
	h.mu.Unlock()

	// aiohttp's router answers these before any view runs.
	if r.URL.Path != Path {
		aiohttpError(w, http.StatusNotFound, "404: Not Found")
		return
	}
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", "POST")
		aiohttpError(w, http.StatusMethodNotAllowed, "405: Method Not Allowed")
		return
	}
	if down { // hass.is_stopping: web.Response(status=503), no body
		w.WriteHeader(http.StatusServiceUnavailable)
		return
	}
	if !h.authorized(r) {
		h.mu.Lock()
		h.refused++
		h.mu.Unlock()
		// RFC 9728 resource metadata, pointing at the URL the client used.
		w.Header().Set("WWW-Authenticate", `Bearer resource_metadata="`+h.srv.URL+`/.well-known/oauth-protected-resource"`)
		aiohttpError(w, http.StatusUnauthorized, "401: Unauthorized")
		return
	}
	if !strings.Contains(r.Header.Get("Accept"), "application/json") {
		aiohttpError(w, http.StatusBadRequest, "Client must accept application/json")
		return
	}
	if ct, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type")); ct != "application/json" {
		aiohttpError(w, http.StatusBadRequest, "Content-Type must be application/json")
		return
	}
	body, err := io.ReadAll(r.Body)
	if err != nil {
		aiohttpError(w, http.StatusBadRequest, "Request must be a JSON-RPC message")
		return
	}
	var msg struct {
		JSONRPC string           `json:"jsonrpc"`
		ID      *json.RawMessage `json:"id"`
		Method  *string          `json:"method"`
	}
	// One message per POST: HA does not take batches.
	if err := json.Unmarshal(body, &msg); err != nil || msg.JSONRPC != "2.0" || (msg.Method == nil && msg.ID == nil) {
		aiohttpError(w, http.StatusBadRequest, "Request must be a JSON-RPC message")
		return
	}
	if msg.Method == nil || msg.ID == nil { // a notification or a response
		w.WriteHeader(http.StatusAccepted)
		return
	}
	if !knownMethods[*msg.Method] {
		w.Header().Set("Content-Type", "application/json; charset=utf-8")
		json.NewEncoder(w).Encode(map[string]any{
			"jsonrpc": "2.0", "id": msg.ID,
			"error": map[string]any{"code": -32601, "message": "Method not found", "data": *msg.Method},
		})
		return
	}

	r.Body = io.NopCloser(bytes.NewReader(body))
	// HA only asks that the client accept JSON; the SDK wants SSE named too.
	r.Header.Set("Accept", "application/json, text/event-stream")
	// The SDK's handler context outlives the HTTP request for this protocol
	// version; keep the request's own context where callTool can find it.
	r = r.WithContext(context.WithValue(r.Context(), httpCtxKey{}, r.Context()))
	h.mcp.ServeHTTP(w, r)
}

// authorized checks "Authorization: Bearer <token>" as HA's auth middleware
// does (the scheme is matched exactly).
func (h *HomeAssistant) authorized(r *http.Request) bool {
	scheme, val, ok := strings.Cut(r.Header.Get("Authorization"), " ")
	return ok && scheme == "Bearer" && val == h.token && h.token != ""
}

func aiohttpError(w http.ResponseWriter, code int, text string) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.WriteHeader(code)
	io.WriteString(w, text)
}

// middleware records every tools/call, whatever becomes of it, and answers
// a call to a tool HA does not have as HA does: the Python SDK skips
// validation for a tool it did not list, and llm.APIInstance.async_call_tool
// raises HomeAssistantError('Tool "X" not found').
func (h *HomeAssistant) middleware(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		if method == "tools/list" {
			h.mu.Lock()
			h.lists++
			h.mu.Unlock()
		}
		if method != "tools/call" {
			return next(ctx, method, req)
		}
		p, ok := req.GetParams().(*mcp.CallToolParamsRaw)
		if !ok {
			return next(ctx, method, req)
		}
		var args map[string]any
		if len(p.Arguments) > 0 {
			_ = json.Unmarshal(p.Arguments, &args)
		}
		h.mu.Lock()
		h.calls = append(h.calls, Call{Name: p.Name, Args: args})
		h.mu.Unlock()
		if _, known := schemas[p.Name]; !known {
			return errorResult(callError(`Tool "` + p.Name + `" not found`).text), nil
		}
		return next(ctx, method, req)
	}
}

// callTool answers a call to one of the four tools.
func (h *HomeAssistant) callTool(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	h.mu.Lock()
	stall := h.stall
	override, overridden := h.answers[req.Params.Name]
	h.mu.Unlock()

	if stall > 0 {
		httpDone := make(<-chan struct{})
		if hc, ok := ctx.Value(httpCtxKey{}).(context.Context); ok {
			httpDone = hc.Done()
		}
		timer := time.NewTimer(stall)
		defer timer.Stop()
		select {
		case <-timer.C:
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-httpDone:
			return nil, context.Canceled
		}
	}
	if overridden {
		return textResult(override), nil
	}

	// arguments or {}, then jsonschema.validate against the listed schema.
	args := newObj()
	if raw := req.Params.Arguments; len(raw) > 0 && string(raw) != "null" {
		v, err := decodeOrdered(raw)
		if err != nil {
			return errorResult("Input validation error: " + err.Error()), nil
		}
		m, ok := v.(*obj)
		if !ok {
			return errorResult("Input validation error: " + pyRepr(v) + " is not of type 'object'"), nil
		}
		args = m
	}
	if msg := validateArgs(schemas[req.Params.Name], args); msg != "" {
		return errorResult("Input validation error: " + msg), nil
	}

	h.mu.Lock()
	var a toolAnswer
	if req.Params.Name == toolLiveContext {
		a = h.house.liveContext(args)
	} else {
		a = h.house.intent(req.Params.Name, args)
	}
	h.mu.Unlock()
	if a.isError {
		return errorResult(a.text), nil
	}
	return textResult(a.text), nil
}

func textResult(text string) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: text}}}
}

func errorResult(text string) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: text}}, IsError: true}
}

func rawJSON(s string) json.RawMessage { return json.RawMessage(s) }
