package mcp_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chorus-robotics/chorus/drivers/mcp"
)

// hostile is an MCP server as unkind as a stranger's: tools/list pages
// on and on, tools with a description of megabytes or a schema the robot
// refuses, an error that quotes the request's token back, results with
// control characters, a session forgotten on restart.
type hostile struct {
	mode     string
	pages    [][]json.RawMessage // mode raw: the tools of each page of tools/list, as they are
	lists    atomic.Int64
	mu       sync.Mutex
	sessions map[string]bool
}

func (h *hostile) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		w.WriteHeader(http.StatusMethodNotAllowed)
		return
	}
	var req struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
		Params json.RawMessage `json:"params"`
	}
	body, _ := io.ReadAll(r.Body)
	json.Unmarshal(body, &req)
	if len(req.ID) == 0 { // a notification
		w.WriteHeader(http.StatusAccepted)
		return
	}
	if h.mode == "session" && req.Method != "initialize" {
		h.mu.Lock()
		known := h.sessions[r.Header.Get("Mcp-Session-Id")]
		h.mu.Unlock()
		if !known {
			http.Error(w, "session not found", http.StatusNotFound)
			return
		}
	}
	answer := func(result any) {
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{"jsonrpc": "2.0", "id": req.ID, "result": result})
	}
	tool := func(name, desc string, schema any) map[string]any {
		return map[string]any{"name": name, "description": desc, "inputSchema": schema}
	}
	plain := map[string]any{"type": "object", "properties": map[string]any{"name": map[string]any{"type": "string"}}}
	switch req.Method {
	case "initialize":
		if h.mode == "session" {
			id := fmt.Sprintf("s%d", time.Now().UnixNano())
			h.mu.Lock()
			h.sessions[id] = true
			h.mu.Unlock()
			w.Header().Set("Mcp-Session-Id", id)
		}
		answer(map[string]any{"protocolVersion": "2025-03-26", "capabilities": map[string]any{"tools": map[string]any{}},
			"serverInfo": map[string]any{"name": "hostile", "version": "1"}})
	case "tools/list":
		n := h.lists.Add(1)
		switch h.mode {
		case "pages":
			answer(map[string]any{"tools": []any{tool(fmt.Sprintf("Page%d", n), "a page", plain)}, "nextCursor": fmt.Sprintf("c%d", n)})
		case "raw":
			var page struct {
				Cursor string `json:"cursor"`
			}
			json.Unmarshal(req.Params, &page)
			i := 0
			fmt.Sscan(page.Cursor, &i)
			res := map[string]any{"tools": h.pages[i]}
			if i+1 < len(h.pages) {
				res["nextCursor"] = fmt.Sprint(i + 1)
			}
			answer(res)
		case "schemas":
			big := map[string]any{"type": "object", "properties": map[string]any{}}
			for i := range 400 {
				big["properties"].(map[string]any)[fmt.Sprintf("p%03d", i)] = map[string]any{"type": "string"}
			}
			answer(map[string]any{"tools": []any{
				tool("Good", "A good tool.", plain),
				tool("Wordy", strings.Repeat("word ", 600_000), plain),
				tool("BadType", "Its schema says nombre.", map[string]any{"type": "object", "properties": map[string]any{"a": map[string]any{"type": "nombre"}}}),
				tool("Huge", "A schema of 400 properties.", big),
			}})
		default:
			answer(map[string]any{"tools": []any{tool("Good", "A good tool.", plain)}})
		}
	case "tools/call":
		switch h.mode {
		case "echo":
			http.Error(w, "upstream failed for "+r.Header.Get("Authorization"), http.StatusInternalServerError)
		default:
			answer(map[string]any{"content": []any{map[string]any{"type": "text", "text": "done\x00 \u202eevil\u202c\tok\nnext"}}})
		}
	default:
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{"jsonrpc": "2.0", "id": req.ID, "error": map[string]any{"code": -32601, "message": "Method not found"}})
	}
}

func hostileServer(t *testing.T, mode string) (*hostile, string) {
	h := &hostile{mode: mode, sessions: map[string]bool{}}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return h, srv.URL + "/mcp"
}

func runClient(t *testing.T, s mcp.Settings, check func([]byte) error) (*mcp.Client, *syncBuffer) {
	t.Helper()
	return runClientWith(t, s, func(c *mcp.Client) { c.CheckSchema = check })
}

// runClientWith is runClient with the client set up by setup before it runs.
func runClientWith(t *testing.T, s mcp.Settings, setup func(*mcp.Client)) (*mcp.Client, *syncBuffer) {
	t.Helper()
	log := &syncBuffer{}
	c := mcp.New(s, token, logTo(log))
	setup(c)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); c.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	for deadline := time.Now().Add(10 * time.Second); len(c.Tools()) == 0; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("no tools after 10 s; log:\n%s", log)
		}
	}
	return c, log
}

func TestAHostileServerIsBounded(t *testing.T) {
	t.Run("pages on and on", func(t *testing.T) {
		h, url := hostileServer(t, "pages")
		c, _ := runClient(t, mcp.Settings{Name: "x", URL: url, Allow: []string{"Page1"}}, nil)
		if n := h.lists.Load(); n > 8 {
			t.Errorf("read %d pages, want at most 8", n)
		}
		if tl := c.Tools(); len(tl) != 1 || tl[0].Remote != "Page1" {
			t.Errorf("tools %+v", tl)
		}
	})
	t.Run("descriptions and schemas", func(t *testing.T) {
		_, url := hostileServer(t, "schemas")
		refuse := func(b []byte) error {
			if strings.Contains(string(b), "nombre") {
				return errors.New("type nombre")
			}
			return nil
		}
		c, log := runClient(t, mcp.Settings{Name: "x", URL: url, Allow: []string{"Good", "Wordy", "BadType", "Huge"}}, refuse)
		var names []string
		for _, tl := range c.Tools() {
			names = append(names, tl.Remote)
			if len(tl.Description) > mcp.MaxDescription+len("…") {
				t.Errorf("%s: a description of %d bytes reaches the model", tl.Remote, len(tl.Description))
			}
		}
		if got := strings.Join(names, " "); got != "Good Wordy" {
			t.Errorf("offered %q, want Good and Wordy (clipped): BadType's schema is refused, Huge's over 8 KB", got)
		}
		if s := log.String(); !strings.Contains(s, "BadType") || !strings.Contains(s, "Huge") {
			t.Errorf("the refusals are not logged by name:\n%s", s)
		}
	})
	t.Run("an error that quotes the token", func(t *testing.T) {
		_, url := hostileServer(t, "echo")
		c, log := runClient(t, mcp.Settings{Name: "x", URL: url, Allow: []string{"Good"}}, nil)
		_, err := c.Call(context.Background(), "Good", nil)
		if err == nil || strings.Contains(err.Error(), token) || strings.Contains(log.String(), token) {
			t.Errorf("error %v, log %q: want an error without the token", err, log)
		}
	})
	t.Run("control characters", func(t *testing.T) {
		_, url := hostileServer(t, "plain")
		c, _ := runClient(t, mcp.Settings{Name: "x", URL: url, Allow: []string{"Good"}}, nil)
		text, err := c.Call(context.Background(), "Good", nil)
		if err != nil || text != "done evil\tok\nnext" {
			t.Errorf("got %q, %v", text, err)
		}
	})
	t.Run("a session forgotten on restart", func(t *testing.T) {
		h, url := hostileServer(t, "session")
		c, _ := runClient(t, mcp.Settings{Name: "x", URL: url, Allow: []string{"Good"}}, nil)
		if _, err := c.Call(context.Background(), "Good", nil); err != nil {
			t.Fatal(err)
		}
		h.mu.Lock()
		clear(h.sessions) // the server restarted
		h.mu.Unlock()
		if _, err := c.Call(context.Background(), "Good", nil); err == nil {
			t.Fatal("a call in a forgotten session went through")
		}
		var err error
		for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
			if _, err = c.Call(context.Background(), "Good", nil); err == nil {
				return
			}
		}
		t.Errorf("still failing 5 s after the restart: %v", err)
	})
}

// TestAToolThatDoesNotDecodeIsSkipped: a server's list with tools mixed
// in that do not decode as MCP tools (a schema that is a string, a name
// that is a number, ...). The others are offered and called; each of
// those is left out, named in the log (by its place in the list when its
// name cannot be read) and counted.
func TestAToolThatDoesNotDecodeIsSkipped(t *testing.T) {
	bad := []struct {
		what, tool string
		name       string // "": its name cannot be read
	}{
		{"a schema that is a string", `{"name":"StringSchema","inputSchema":"object"}`, "StringSchema"},
		{"a schema that is a number", `{"name":"NumberSchema","inputSchema":42}`, "NumberSchema"},
		{"a name that is a number", `{"name":7,"inputSchema":{"type":"object"}}`, ""},
		{"annotations that are not an object", `{"name":"Annotated","inputSchema":{"type":"object"},"annotations":"read only"}`, "Annotated"},
		{"a hint that is not a boolean", `{"name":"Hinted","inputSchema":{"type":"object"},"annotations":{"readOnlyHint":"yes"}}`, "Hinted"},
		{"properties that are a list", `{"name":"Listed","inputSchema":{"type":"object","properties":["a"]}}`, "Listed"},
		{"a schema type that is a number", `{"name":"Typed","inputSchema":{"type":5}}`, "Typed"},
		{"a description that is an object", `{"name":"Described","description":{"en":"x"},"inputSchema":{"type":"object"}}`, "Described"},
		{"a tool that is a string", `"HassTurnOn"`, ""},
		{"a tool that is a list", `[{"name":"Inner","inputSchema":{"type":"object"}}]`, ""},
	}
	good := func(name string) json.RawMessage {
		return json.RawMessage(`{"name":"` + name + `","description":"A good tool.","inputSchema":{"type":"object","properties":{"name":{"type":"string"}}}}`)
	}
	run := func(t *testing.T, pages [][]json.RawMessage, allow []string) (*mcp.Client, *syncBuffer, func() map[string]int) {
		t.Helper()
		h, url := hostileServer(t, "raw")
		h.pages = pages
		var mu sync.Mutex
		counted := map[string]int{}
		c, log := runClientWith(t, mcp.Settings{Name: "x", URL: url, Allow: allow}, func(c *mcp.Client) {
			c.Refused = func(why string) { mu.Lock(); counted[why]++; mu.Unlock() }
		})
		return c, log, func() map[string]int { mu.Lock(); defer mu.Unlock(); return maps.Clone(counted) }
	}
	offered := func(t *testing.T, c *mcp.Client, want ...string) {
		t.Helper()
		var names []string
		for _, tl := range c.Tools() {
			names = append(names, tl.Remote)
		}
		if got := strings.Join(names, " "); got != strings.Join(want, " ") {
			t.Fatalf("offered %q, want %q", got, strings.Join(want, " "))
		}
		for _, name := range want {
			if text, err := c.Call(context.Background(), name, json.RawMessage(`{"name":"kitchen"}`)); err != nil || !strings.HasPrefix(text, "done") {
				t.Errorf("call %s: %q, %v", name, text, err)
			}
		}
	}
	// named: the log names a skipped tool, by its name or its place.
	named := func(t *testing.T, log, name string, page, index int) {
		t.Helper()
		want := fmt.Sprintf("tool=%s page=%d", name, page)
		if name == "" {
			want = fmt.Sprintf("tool=tools[%d] page=%d", index, page)
		}
		for _, line := range strings.Split(log, "\n") {
			if strings.Contains(line, "does not decode") && strings.Contains(line, want+" ") {
				return
			}
		}
		t.Errorf("no warning with %q:\n%s", want, log)
	}
	for _, b := range bad {
		t.Run(b.what, func(t *testing.T) {
			allow := []string{"Before", "After"}
			if b.name != "" {
				allow = append(allow, b.name)
			}
			c, log, counted := run(t, [][]json.RawMessage{{good("Before"), json.RawMessage(b.tool), good("After")}}, allow)
			offered(t, c, "Before", "After")
			if n := counted(); n["malformed"] != 1 || len(n) != 1 {
				t.Errorf("counted %v, want malformed: 1", n)
			}
			named(t, log.String(), b.name, 1, 1)
		})
	}
	t.Run("all of them, on two pages", func(t *testing.T) {
		pages := make([][]json.RawMessage, 2)
		allow := []string{}
		var want []string
		for i, b := range bad {
			p := i % 2
			name := fmt.Sprintf("Good%d", i)
			pages[p] = append(pages[p], good(name), json.RawMessage(b.tool))
			want, allow = append(want, name), append(allow, name)
			if b.name != "" {
				allow = append(allow, b.name)
			}
		}
		slices.SortStableFunc(want, func(a, b string) int { // page 1's tools first
			var i, j int
			fmt.Sscanf(a, "Good%d", &i)
			fmt.Sscanf(b, "Good%d", &j)
			return i%2 - j%2
		})
		c, log, counted := run(t, pages, allow)
		offered(t, c, want...)
		if n := counted(); n["malformed"] != len(bad) || len(n) != 1 {
			t.Errorf("counted %v, want malformed: %d", n, len(bad))
		}
		logged := 0 // the first 8 of the list are named, in its order
		for p := range 2 {
			for i, b := range bad {
				if i%2 == p {
					if logged++; logged <= 8 {
						named(t, log.String(), b.name, p+1, i/2*2+1)
					}
				}
			}
		}
		if !strings.Contains(log.String(), fmt.Sprintf("more=%d", len(bad)-8)) {
			t.Errorf("the tools past the first 8 are not told:\n%s", log)
		}
		_, _, has, err := c.Check(context.Background())
		if err != nil || strings.Join(has, " ") != strings.Join(want, " ") {
			t.Errorf("the doctor: has %q, %v; want %q", has, err, want)
		}
	})
}
