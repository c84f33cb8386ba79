package tool_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chorus-robotics/chorus/runtime/protocol"
	"github.com/chorus-robotics/chorus/runtime/tool"
)

func answers(text string) func(context.Context, tool.Call) (tool.Result, error) {
	return func(context.Context, tool.Call) (tool.Result, error) { return tool.Result{Text: text}, nil }
}

func names(ts []tool.Tool) string {
	var out []string
	for _, t := range ts {
		out = append(out, t.Name)
	}
	return strings.Join(out, ",")
}

// Add refuses what cannot be offered, naming the tool and why.
func TestAddRefuses(t *testing.T) {
	r := &tool.Registry{}
	if err := r.Add(tool.Tool{Name: "date_time", Call: answers("noon")}); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		t    tool.Tool
		want string
	}{
		{tool.Tool{Name: "", Call: answers("")}, "not a tool name"},
		{tool.Tool{Name: "has space", Call: answers("")}, "not a tool name"},
		{tool.Tool{Name: strings.Repeat("x", 65), Call: answers("")}, "not a tool name"},
		{tool.Tool{Name: "Speak", Call: answers("")}, "reserved"},
		{tool.Tool{Name: "Date_Time", Call: answers("")}, "taken"},
		{tool.Tool{Name: "weather"}, "nothing runs it"},
	} {
		if err := r.Add(tc.t); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Add(%q): %v, want an error saying %q", tc.t.Name, err, tc.want)
		}
	}
	if err := r.Add(tool.Tool{Name: "nod", Kind: tool.WithWords}); err != nil {
		t.Errorf("a body action needs no Call: %v", err)
	}
}

// The first registration of a name keeps it, whatever the case, fixed
// tools before sources and sources in their order; what is left out is
// told once per name and source, and who may call a tool decides whom
// it is listed for.
func TestToolsClaimNamesInOrder(t *testing.T) {
	var mu sync.Mutex
	var told []string
	r := &tool.Registry{Clash: func(name, source, why string) {
		mu.Lock()
		defer mu.Unlock()
		told = append(told, source+":"+name)
	}}
	must := func(err error) {
		if err != nil {
			t.Fatal(err)
		}
	}
	must(r.Add(tool.Tool{Name: "date_time", Call: answers("noon")}))
	must(r.Add(tool.Tool{Name: "look", Use: tool.ForAgents, Call: answers("picture")}))
	r.Source(func() []tool.Tool {
		return tool.Actions([]protocol.ActionDef{{Name: "nod", Schema: json.RawMessage(`{"type":"object"}`)}})
	})
	r.Source(func() []tool.Tool {
		return []tool.Tool{
			{Name: "weather", Source: tool.FromBody, Call: answers("sunny")},
			{Name: "DATE_TIME", Source: tool.FromBody, Call: answers("the body's clock")},
			{Name: "nod", Source: tool.FromBody, Call: answers("?")},
			{Name: "bad name", Source: tool.FromBody, Call: answers("?")},
			{Name: "speak", Source: tool.FromBody, Call: answers("?")},
		}
	})
	for range 3 {
		if got := names(r.Tools(tool.ForModel)); got != "date_time,nod,weather" {
			t.Fatalf("for the model: %s", got)
		}
		if got := names(r.Tools(tool.ForAgents)); got != "look,nod" {
			t.Fatalf("for agents: %s", got)
		}
	}
	if want := []string{"body:DATE_TIME", "body:nod", "body:bad name", "body:speak"}; !slices.Equal(told, want) {
		t.Errorf("told %v, want each once: %v", told, want)
	}
}

// A registry lists at most MaxTools.
func TestToolsAreBounded(t *testing.T) {
	r := &tool.Registry{}
	r.Source(func() []tool.Tool {
		out := make([]tool.Tool, tool.MaxTools+10)
		for i := range out {
			out[i] = tool.Tool{Name: "t" + strings.Repeat("x", i%60) + string(rune('a'+i%26)) + string(rune('a'+i/26%26)), Call: answers("")}
		}
		return out
	})
	if n := len(r.Tools(tool.ForModel)); n != tool.MaxTools {
		t.Fatalf("%d tools listed, want %d", n, tool.MaxTools)
	}
}

// Run calls a tool by its name with its caller, bounded by the tool's
// timeout or the default; a name nobody registered, a body action with
// nothing to run it, and a tool not for that use are errors.
func TestRunByName(t *testing.T) {
	r := &tool.Registry{}
	var got tool.Call
	stuck := make(chan struct{})
	defer close(stuck)
	for _, tl := range []tool.Tool{
		{Name: "memory_search", Call: func(_ context.Context, c tool.Call) (tool.Result, error) {
			got = c
			return tool.Result{Text: "tea"}, nil
		}},
		{Name: "stuck", Timeout: 20 * time.Millisecond, Call: func(ctx context.Context, _ tool.Call) (tool.Result, error) {
			select {
			case <-ctx.Done():
				return tool.Result{}, ctx.Err()
			case <-stuck:
				return tool.Result{Text: "late"}, nil
			}
		}},
		{Name: "slow", Call: func(ctx context.Context, _ tool.Call) (tool.Result, error) {
			<-ctx.Done()
			return tool.Result{}, ctx.Err()
		}},
		{Name: "nod", Kind: tool.WithWords},
		{Name: "look", Use: tool.ForAgents, Call: answers("picture")},
	} {
		if err := r.Add(tl); err != nil {
			t.Fatal(err)
		}
	}
	ctx := context.Background()
	res, err := r.Run(ctx, tool.ForModel, tool.Call{Name: "memory_search", Args: json.RawMessage(`{"query":"drinks"}`), Caller: "alice"}, time.Second)
	if err != nil || res.Text != "tea" || got.Caller != "alice" || string(got.Args) != `{"query":"drinks"}` {
		t.Fatalf("%+v %v, the tool got %+v", res, err, got)
	}
	start := time.Now()
	if _, err := r.Run(ctx, tool.ForModel, tool.Call{Name: "stuck"}, time.Hour); !errors.Is(err, context.DeadlineExceeded) || time.Since(start) > time.Second {
		t.Fatalf("stuck: %v after %v, want its own 20 ms timeout", err, time.Since(start))
	}
	if _, err := r.Run(ctx, tool.ForModel, tool.Call{Name: "slow"}, 20*time.Millisecond); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("slow: %v, want the default timeout", err)
	}
	if _, err := r.Run(ctx, tool.ForModel, tool.Call{Name: "nod"}, time.Second); err == nil || !strings.Contains(err.Error(), "nothing runs it") {
		t.Fatalf("nod: %v", err)
	}
	if _, err := r.Run(ctx, tool.ForModel, tool.Call{Name: "look"}, time.Second); !errors.Is(err, tool.ErrUnknown) {
		t.Fatalf("look for the model: %v, want ErrUnknown", err)
	}
	if res, err := r.Run(ctx, tool.ForAgents, tool.Call{Name: "look"}, time.Second); err != nil || res.Text != "picture" {
		t.Fatalf("look for an agent: %+v %v", res, err)
	}
	if _, err := r.Run(ctx, tool.ForModel, tool.Call{Name: "nobody"}, time.Second); !errors.Is(err, tool.ErrUnknown) {
		t.Fatalf("nobody: %v", err)
	}
}

// A tool's parameters are offered as a JSON Schema object; none is an
// empty object's schema, and anything else is an error naming the tool.
func TestSchema(t *testing.T) {
	for _, tc := range []struct {
		params string
		ok     bool
	}{
		{"", true},
		{`{"type":"object","properties":{"q":{"type":"string"}}}`, true},
		{`"a string"`, false},
		{`[1,2]`, false},
		{`null`, false},
		{`{"type":`, false},
	} {
		s, err := tool.Tool{Name: "x", Parameters: json.RawMessage(tc.params)}.Schema()
		if (err == nil) != tc.ok || tc.ok && s["type"] != "object" && tc.params == "" {
			t.Errorf("Schema(%s) = %v, %v", tc.params, s, err)
		}
		if err != nil && !strings.Contains(err.Error(), "tool x") {
			t.Errorf("the error does not name the tool: %v", err)
		}
	}
}

// A source of more bad tools than the registry remembers is told once per
// tool it remembers, and then no more: never a log line per listing.
func TestToldIsBounded(t *testing.T) {
	var n atomic.Int64
	r := &tool.Registry{Clash: func(name, source, why string) { n.Add(1) }}
	r.Source(func() []tool.Tool {
		var out []tool.Tool
		for i := range 1100 {
			out = append(out, tool.Tool{Name: fmt.Sprintf("bad name %d", i), Source: tool.FromMCP("ha"), Call: answers("")})
		}
		return out
	})
	for range 3 {
		r.Tools(tool.ForModel)
	}
	if got := n.Load(); got != 1024 {
		t.Errorf("told %d times over 3 listings of 1100 bad tools, want 1024 (then no more)", got)
	}
}

// A name is claimed per use: the agents' camera (look) does not hide a
// body action look from the model, and the model's own tool does not
// hide an agent's.
func TestNamesAreClaimedPerUse(t *testing.T) {
	r := &tool.Registry{}
	if err := r.Add(tool.Tool{Name: "look", Use: tool.ForAgents, Call: answers("picture")}); err != nil {
		t.Fatal(err)
	}
	r.Source(func() []tool.Tool {
		return []tool.Tool{{Name: "look", Kind: tool.WithWords, Use: tool.ForModel | tool.ForAgents, Source: tool.FromBody}}
	})
	if got := r.Tools(tool.ForModel); names(got) != "look" || got[0].Kind != tool.WithWords {
		t.Errorf("for the model: %+v, want the body's look action", got)
	}
	if got := r.Tools(tool.ForAgents); names(got) != "look" || got[0].Call == nil || got[0].Kind != tool.Answers {
		t.Errorf("for agents: %+v, want the camera", got)
	}
}
