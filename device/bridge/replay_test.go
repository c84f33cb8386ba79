package bridge

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/chorus-robotics/chorus/runtime/protocol"
)

// A client that connects after the talk gets the room's recent Messages in
// one bridge.replay, after its hello and before anything live: oldest
// first, a Message the bus delivered twice once, no more than Replay of
// them. A Message said after it comes live, and is not replayed to it.
func TestReplayToANewClient(t *testing.T) {
	r := newRig(t, func(c *Config) { c.Replay = 3 })
	early := r.dial(viewerToken)
	var ms []protocol.Message
	for i := range 4 {
		m := protocol.NewMessage(protocol.NewID(), "carol", nil, fmt.Sprintf("line %d", i), "")
		ms = append(ms, m)
		r.publishAs("carol", r.scheme.Message("lab", "carol"), m)
		if i == 2 { // at least once: a copy of line 2
			r.publishAs("carol", r.scheme.Message("lab", "carol"), m)
		}
	}
	// Both copies go out live. Each line is published by a connection of
	// its own, and a broker orders messages per publisher only: under
	// load the copy of line 2 came after line 3 (CI), so the lines are
	// counted, not read in order.
	var lines []string
	for len(lines) < 5 {
		f := next(t, early, fmt.Sprintf("live line %d of 5 (so far %v)", len(lines)+1, lines), func(f map[string]any) bool {
			return f["method"] == protocol.MethodMessage
		})
		lines = append(lines, f["params"].(map[string]any)["message"].(string))
	}
	// The bridge keeps Messages in the order it saw them, which is the
	// order the early client was sent them: the replay is the last three
	// of that order, the copy of line 2 left out.
	var order []string
	for _, l := range lines {
		if !slices.Contains(order, l) {
			order = append(order, l)
		}
	}
	sorted := slices.Sorted(slices.Values(lines))
	if strings.Join(sorted, ",") != "line 0,line 1,line 2,line 2,line 3" {
		t.Fatalf("live %v; want every line, line 2 twice", lines)
	}

	late := r.dial(viewerToken)
	var methods []string
	replay := next(t, late, "the replay", func(f map[string]any) bool {
		methods = append(methods, fmt.Sprint(f["method"]))
		return f["method"] == MethodReplay
	})
	if methods[0] != "bridge.hello" {
		t.Fatalf("frames before the replay: %v; want bridge.hello first", methods)
	}
	var got []string
	for _, m := range replay["params"].(map[string]any)["messages"].([]any) {
		f := m.(map[string]any)
		if f["method"] != protocol.MethodMessage {
			t.Fatalf("a replayed frame is not a Message: %v", f)
		}
		got = append(got, f["params"].(map[string]any)["message"].(string))
	}
	if want := strings.Join(order[1:], ","); strings.Join(got, ",") != want {
		t.Fatalf("replayed %q; want the last three as they went out live (%q), each once, oldest first", got, want)
	}

	live := protocol.NewMessage(protocol.NewID(), "carol", nil, "after", "")
	r.publishAs("carol", r.scheme.Message("lab", "carol"), live)
	next(t, late, "the live message", func(f map[string]any) bool {
		if f["method"] == MethodReplay {
			t.Fatalf("a second replay: %v", f)
		}
		return f["method"] == protocol.MethodMessage && f["params"].(map[string]any)["id"] == live.Params.ID
	})
}

// What the bridge keeps is bounded by count and by bytes, the oldest
// going first; a copy of a Message kept is not kept again, and one too
// large to keep at all leaves the rest as they were.
func TestRecentIsBounded(t *testing.T) {
	f := func(n int) []byte { return []byte(`"` + strings.Repeat("x", n-2) + `"`) } // n bytes of JSON
	type add struct {
		id   string
		size int
		new  bool
	}
	for _, tc := range []struct {
		name       string
		max, bytes int
		adds       []add
		want       []string
	}{
		{"by count", 2, 1000, []add{{"a", 10, true}, {"b", 10, true}, {"c", 10, true}}, []string{"b", "c"}},
		{"by bytes", 10, 25, []add{{"a", 10, true}, {"b", 10, true}, {"c", 10, true}}, []string{"b", "c"}},
		{"a copy once", 10, 1000, []add{{"a", 10, true}, {"b", 10, true}, {"a", 10, false}}, []string{"a", "b"}},
		{"too large for any", 10, 25, []add{{"a", 10, true}, {"big", 30, true}, {"b", 10, true}}, []string{"a", "b"}},
		{"forgotten, then kept again", 1, 1000, []add{{"a", 10, true}, {"b", 10, true}, {"a", 10, true}}, []string{"a"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newRecent(tc.max, tc.bytes)
			for _, a := range tc.adds {
				if got := r.add(a.id, f(a.size)); got != a.new {
					t.Fatalf("add %s: %v, want %v", a.id, got, a.new)
				}
			}
			if strings.Join(r.ids, ",") != strings.Join(tc.want, ",") || len(r.kept) != len(r.ids) {
				t.Fatalf("kept %v (%d in the set); want %v", r.ids, len(r.kept), tc.want)
			}
			total := 0
			for _, b := range r.frames {
				total += len(b)
			}
			if total != r.bytes || total > tc.bytes || len(r.frames) > tc.max {
				t.Fatalf("%d frames, %d bytes (counted %d); bounds %d, %d", len(r.frames), total, r.bytes, tc.max, tc.bytes)
			}
			var rep struct {
				Method string `json:"method"`
				Params struct {
					Messages []json.RawMessage `json:"messages"`
				} `json:"params"`
			}
			if err := json.Unmarshal(r.frame(), &rep); err != nil || rep.Method != MethodReplay || len(rep.Params.Messages) != len(tc.want) {
				t.Fatalf("the replay frame %s: %v", r.frame(), err)
			}
		})
	}
}
