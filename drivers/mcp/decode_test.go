package mcp_test

import (
	"encoding/json"
	"testing"

	mcpgo "github.com/mark3labs/mcp-go/mcp"
)

// FuzzListToolsResult: a tools/list answer decodes tool by tool (the
// patched mcp-go's ListToolsResult.UnmarshalJSON). It fails only when its
// envelope does; then every tool of its list is either kept, when it
// decodes on its own, or skipped, noted by its place, when it does not.
func FuzzListToolsResult(f *testing.F) {
	for _, seed := range []string{
		`{"tools":[{"name":"Good","inputSchema":{"type":"object","properties":{"name":{"type":"string"}}}}]}`,
		`{"tools":[{"name":"A","inputSchema":{"type":"object"}},{"name":"B","inputSchema":"object"},{"name":7},"C",[1],null],"nextCursor":"2"}`,
		`{"tools":[{"name":"H","inputSchema":{"type":"object"},"annotations":{"readOnlyHint":"yes"}},{"name":"L","inputSchema":{"type":"object","properties":["a"]}}]}`,
		`{"tools":[{"name":"D","description":{"en":"x"},"inputSchema":{"type":5},"annotations":"ro"}]}`,
		`{"tools":[{"name":"R","inputSchema":{"type":"object","definitions":{"a":{"type":"string"}},"properties":{"a":{"$ref":"#/definitions/a"}}}}]}`,
		`{"tools":5}`, `{"tools":null}`, `{"nextCursor":5,"tools":[]}`, `{}`, `null`, `[]`, `"x"`, `{"tools":[`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var res mcpgo.ListToolsResult
		err := json.Unmarshal(data, &res)
		var envelope struct {
			mcpgo.PaginatedResult
			Tools []json.RawMessage `json:"tools"`
		}
		if envErr := json.Unmarshal(data, &envelope); (err != nil) != (envErr != nil) {
			t.Fatalf("the result: %v; its envelope: %v", err, envErr)
		}
		if err != nil {
			return
		}
		if len(res.Tools)+len(res.Skipped) != len(envelope.Tools) {
			t.Fatalf("%d tools kept and %d skipped of %d", len(res.Tools), len(res.Skipped), len(envelope.Tools))
		}
		if res.NextCursor != envelope.NextCursor {
			t.Fatalf("next cursor %q, want %q", res.NextCursor, envelope.NextCursor)
		}
		kept, next := 0, 0
		for i, raw := range envelope.Tools {
			var alone mcpgo.Tool
			aloneErr := json.Unmarshal(raw, &alone)
			if next < len(res.Skipped) && res.Skipped[next].Index == i {
				s := res.Skipped[next]
				next++
				if aloneErr == nil || s.Err == nil {
					t.Fatalf("tools[%d] %s skipped (%v), and it decodes on its own", i, raw, s.Err)
				}
				var named struct {
					Name string `json:"name"`
				}
				json.Unmarshal(raw, &named)
				if s.Name != named.Name {
					t.Fatalf("tools[%d] %s skipped as %q, want %q", i, raw, s.Name, named.Name)
				}
				continue
			}
			if aloneErr != nil {
				t.Fatalf("tools[%d] %s kept, and it does not decode on its own: %v", i, raw, aloneErr)
			}
			if res.Tools[kept].Name != alone.Name {
				t.Fatalf("tools[%d] kept as %q, want %q", i, res.Tools[kept].Name, alone.Name)
			}
			kept++
		}
		if next != len(res.Skipped) {
			t.Fatalf("skipped %+v: indexes out of order or out of the list", res.Skipped)
		}
	})
}
