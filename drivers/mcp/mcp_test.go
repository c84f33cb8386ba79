package mcp_test

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chorus-robotics/chorus/drivers/mcp"
	"github.com/chorus-robotics/chorus/drivers/mcp/mcptest"
)

const token = "ha-long-lived-token-123456"

// syncBuffer is a log both the client and the test touch.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func logTo(b *syncBuffer) *slog.Logger { return slog.New(slog.NewTextHandler(b, nil)) }

// connect runs a client of the fake Home Assistant until the test ends
// and waits (want: true) for its tools.
func connect(t *testing.T, ha *mcptest.HomeAssistant, s mcp.Settings, tok string, want bool) (*mcp.Client, *syncBuffer) {
	t.Helper()
	log := &syncBuffer{}
	s.URL = ha.URL()
	c := mcp.New(s, tok, logTo(log))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); c.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	if want {
		deadline := time.Now().Add(10 * time.Second)
		for len(c.Tools()) == 0 {
			if time.Now().After(deadline) {
				t.Fatalf("no tools after 10 s; log:\n%s", log)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	return c, log
}

func TestHomeAssistantsToolsAreOfferedAsAllowed(t *testing.T) {
	ha := mcptest.NewHomeAssistant(t, token)
	c, _ := connect(t, ha, mcp.Settings{Name: "ha", Allow: []string{"HassTurnOn", "HassTurnOff", "HassNope"}}, token, true)
	var names []string
	for _, tl := range c.Tools() {
		names = append(names, tl.Name)
		if tl.ReadOnly {
			t.Errorf("%s: read-only, but Home Assistant says nothing of it (it acts)", tl.Name)
		}
	}
	if strings.Join(names, " ") != "ha_HassTurnOff ha_HassTurnOn" && strings.Join(names, " ") != "ha_HassTurnOn ha_HassTurnOff" {
		t.Fatalf("tools %v, want ha_HassTurnOn and ha_HassTurnOff only (HassLightSet is not allowed)", names)
	}
	var on mcp.Tool
	for _, tl := range c.Tools() {
		if tl.Remote == "HassTurnOn" {
			on = tl
		}
	}
	var schema struct {
		Type       string         `json:"type"`
		Properties map[string]any `json:"properties"`
	}
	if err := json.Unmarshal(on.Schema, &schema); err != nil || schema.Type != "object" {
		t.Fatalf("HassTurnOn's schema %s: %v", on.Schema, err)
	}
	for _, p := range []string{"name", "area", "domain"} {
		if schema.Properties[p] == nil {
			t.Errorf("HassTurnOn's schema has no %q: %s", p, on.Schema)
		}
	}
	if m := c.Missing(); len(m) != 1 || m[0] != "HassNope" {
		t.Errorf("missing %v, want [HassNope]", m)
	}
}

func TestCallTurnsOnTheKitchenLight(t *testing.T) {
	ha := mcptest.NewHomeAssistant(t, token)
	c, log := connect(t, ha, mcp.Settings{Name: "ha", Allow: []string{"HassTurnOn"}}, token, true)
	text, err := c.Call(context.Background(), "HassTurnOn", json.RawMessage(`{"name":"kitchen light"}`))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(text, "action_done") || !strings.Contains(text, "light.kitchen") {
		t.Errorf("answer %q, want Home Assistant's action_done naming light.kitchen", text)
	}
	if !ha.Light("light.kitchen") {
		t.Error("the kitchen light is still off")
	}
	calls := ha.Calls()
	if len(calls) != 1 || calls[0].Name != "HassTurnOn" || calls[0].Args["name"] != "kitchen light" {
		t.Errorf("the server received %+v, want one HassTurnOn {name: kitchen light}", calls)
	}
	if strings.Contains(log.String(), token) {
		t.Errorf("the token is in the log:\n%s", log)
	}
}

func TestCallFaults(t *testing.T) {
	ha := mcptest.NewHomeAssistant(t, token)
	c, _ := connect(t, ha, mcp.Settings{Name: "ha", Allow: []string{"HassTurnOn"}, Timeout: 300 * time.Millisecond}, token, true)
	ctx := context.Background()

	t.Run("no such light", func(t *testing.T) {
		_, err := c.Call(ctx, "HassTurnOn", json.RawMessage(`{"name":"garage light"}`))
		if err == nil || !strings.Contains(err.Error(), "the tool failed") || !strings.Contains(err.Error(), "MatchFailedError") {
			t.Errorf("got %v, want the tool's failure as Home Assistant says it", err)
		}
	})
	t.Run("not allowed", func(t *testing.T) {
		before := ha.Requests()
		_, err := c.Call(ctx, "HassTurnOff", json.RawMessage(`{"name":"kitchen light"}`))
		if err == nil || !strings.Contains(err.Error(), "not one of its allowed tools") {
			t.Errorf("got %v, want a refusal", err)
		}
		if ha.Requests() != before {
			t.Error("a tool not allowed reached the server")
		}
	})
	t.Run("arguments not an object", func(t *testing.T) {
		if _, err := c.Call(ctx, "HassTurnOn", json.RawMessage(`[1]`)); err == nil {
			t.Error("no error")
		}
	})
	t.Run("stalls", func(t *testing.T) {
		ha.Stall(5 * time.Second)
		defer ha.Stall(0)
		start := time.Now()
		_, err := c.Call(ctx, "HassTurnOn", json.RawMessage(`{"name":"kitchen light"}`))
		if err == nil || time.Since(start) > 2*time.Second {
			t.Errorf("got %v after %v, want an error within the 300 ms timeout", err, time.Since(start))
		}
	})
	t.Run("down, then back", func(t *testing.T) {
		ha.Down(true)
		start := time.Now()
		if _, err := c.Call(ctx, "HassTurnOn", json.RawMessage(`{"name":"kitchen light"}`)); err == nil || time.Since(start) > 2*time.Second {
			t.Errorf("got %v after %v, want an error at once", err, time.Since(start))
		}
		ha.Down(false)
		if _, err := c.Call(ctx, "HassTurnOn", json.RawMessage(`{"name":"kitchen light"}`)); err != nil {
			t.Errorf("after the server came back: %v", err)
		}
	})
	t.Run("a long answer is clipped", func(t *testing.T) {
		ha.Answer("HassTurnOn", strings.Repeat("é", 100_000))
		defer ha.Answer("HassTurnOn", "")
		text, err := c.Call(ctx, "HassTurnOn", json.RawMessage(`{"name":"kitchen light"}`))
		if err != nil || len(text) > mcp.MaxResult+len("…") || !strings.HasSuffix(text, "…") {
			t.Errorf("got %d bytes, %v; want at most %d and an ellipsis", len(text), err, mcp.MaxResult)
		}
	})
}

func TestWrongTokenOffersNothing(t *testing.T) {
	ha := mcptest.NewHomeAssistant(t, token)
	c, log := connect(t, ha, mcp.Settings{Name: "ha", Allow: []string{"HassTurnOn"}}, "wrong-token-abcdef", false)
	deadline := time.Now().Add(5 * time.Second)
	for ha.Refused() == 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if ha.Refused() == 0 {
		t.Fatal("the server refused nothing")
	}
	if len(c.Tools()) != 0 {
		t.Errorf("tools %v offered without a good token", c.Tools())
	}
	if _, err := c.Call(context.Background(), "HassTurnOn", nil); err == nil {
		t.Error("a call without tools went through")
	}
	for deadline := time.Now().Add(3 * time.Second); !strings.Contains(log.String(), "not offered") && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
	}
	if s := log.String(); !strings.Contains(s, "not offered") || strings.Contains(s, "wrong-token-abcdef") {
		t.Errorf("log %q: want a warning that names no token", s)
	}
}
