package bridge

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/chorus-robotics/chorus/runtime/protocol"
	"github.com/chorus-robotics/chorus/runtime/query"
)

const (
	weatherDef = `{"name":"weather","description":"Today's weather where the robot is","parameters":{"type":"object","properties":{"day":{"enum":["today","tomorrow"]}},"additionalProperties":false}}`
	hoursDef   = `{"name":"opening_hours","description":"When the shop opens","parameters":{"type":"object"}}`
)

// knowledgeFrame is a knowledge.declare with id and the tools defs.
func knowledgeFrame(id string, defs ...string) string {
	return `{"jsonrpc":"2.0","id":"` + id + `","method":"knowledge.declare","params":{"knowledge":[` + strings.Join(defs, ",") + `]}}`
}

// declaredKnowledge sends a knowledge.declare and waits for its answer.
func declaredKnowledge(t *testing.T, c *websocket.Conn, id string, defs ...string) {
	t.Helper()
	send(t, c, knowledgeFrame(id, defs...))
	f := next(t, c, "the answer to "+id, func(f map[string]any) bool { return f["id"] == id })
	res, _ := f["result"].(map[string]any)
	if res["declared"] != float64(len(defs)) {
		t.Fatalf("declaring %d knowledge tools was answered %v", len(defs), f)
	}
}

func knowledgeNamesOf(defs []protocol.KnowledgeDef) []string {
	var n []string
	for _, d := range defs {
		n = append(n, d.Name)
	}
	return n
}

// A device declares its body's knowledge: Knowledge returns a copy; a new
// declaration (here in aikyo's envelope) replaces the old; the actions it
// declared are another list; the declaration outlives a client while
// another of the device is connected and is forgotten when the last one
// goes.
func TestDeviceDeclaresKnowledge(t *testing.T) {
	r := newRig(t, nil)
	b := r.bridge
	if b.Knowledge("web-bot") != nil {
		t.Fatal("knowledge before any declaration")
	}
	d := r.dial(deviceToken)
	declared(t, d, "acts-1", "", waveDef)
	declaredKnowledge(t, d, "know-1", weatherDef, hoursDef)
	got := b.Knowledge("web-bot")
	if !slices.Equal(knowledgeNamesOf(got), []string{"weather", "opening_hours"}) || got[0].Description != "Today's weather where the robot is" ||
		!strings.Contains(string(got[0].Parameters), `"tomorrow"`) {
		t.Fatalf("Knowledge: %+v", got)
	}
	got[0].Name, got[0].Parameters[0] = "rain", 'X'
	if again := b.Knowledge("web-bot"); again[0].Name != "weather" || again[0].Parameters[0] != '{' {
		t.Fatalf("Knowledge handed out its own: %+v", again)
	}
	if n := names(b.Actions("web-bot")); !slices.Equal(n, []string{"wave"}) {
		t.Fatalf("the knowledge changed the actions: %v", n)
	}
	if b.Knowledge("alice") != nil {
		t.Fatal("knowledge of a device that declared none")
	}

	send(t, d, `{"topic":"queries","body":{"jsonrpc":"2.0","id":9,"method":"knowledge.declare","params":{"knowledge":[`+hoursDef+`]}}}`)
	f := next(t, d, "the answer to the enveloped declaration", func(f map[string]any) bool { return f["id"] == float64(9) })
	if res, _ := f["result"].(map[string]any); res["declared"] != float64(1) {
		t.Fatalf("the enveloped declaration was answered %v", f)
	}
	if n := knowledgeNamesOf(b.Knowledge("web-bot")); !slices.Equal(n, []string{"opening_hours"}) {
		t.Fatalf("after the new declaration: %v", n)
	}
	declaredKnowledge(t, d, "know-none") // [] declares none
	if b.Knowledge("web-bot") != nil {
		t.Fatal("an empty declaration kept the old one")
	}
	declaredKnowledge(t, d, "know-2", weatherDef)

	d2 := r.dial(deviceToken)
	d.Close(websocket.StatusNormalClosure, "")
	time.Sleep(200 * time.Millisecond) // d's going is handled
	if n := knowledgeNamesOf(b.Knowledge("web-bot")); !slices.Equal(n, []string{"weather"}) {
		t.Fatalf("with a client of the device still connected: %v", n)
	}
	d2.CloseNow() // the last one, killed
	deadline := time.Now().Add(5 * time.Second)
	for b.Knowledge("web-bot") != nil {
		if time.Now().After(deadline) {
			t.Fatal("the knowledge outlived the device's last client")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// Bad knowledge declarations are refused, each with an error frame that
// names what is wrong and a count; the declaration made before stays, and
// the connection carries on.
func TestBadKnowledgeDeclarationsAreRefused(t *testing.T) {
	r := newRig(t, nil)
	d := r.dial(deviceToken)
	u := r.dial(userToken)
	v := r.dial(viewerToken)
	declaredKnowledge(t, d, "good-1", weatherDef)
	var many []string
	for i := range 17 {
		many = append(many, fmt.Sprintf(`{"name":"k%d","description":"d","parameters":{"type":"object"}}`, i))
	}
	cases := []refusal{
		{"a user", u, knowledgeFrame("b1", weatherDef), "forbidden", "a user may not declare knowledge"},
		{"a viewer", v, knowledgeFrame("b2", weatherDef), "forbidden", "a viewer may not declare knowledge"},
		{"an unknown field in params", d, `{"jsonrpc":"2.0","id":"b3","method":"knowledge.declare","params":{"knowledge":[],"delivery":"query"}}`, "invalid", "knowledge.declare: params.delivery: unknown field"},
		{"an unknown field in a tool", d, knowledgeFrame("b4", `{"name":"weather","description":"Weather","parameters":{"type":"object"},"schema":{}}`), "invalid", "params.knowledge[].schema: unknown field"},
		{"an unknown field in the frame", d, `{"jsonrpc":"2.0","id":"b5","method":"knowledge.declare","params":{"knowledge":[]},"meta":{}}`, "invalid", `knowledge.declare: unknown field "meta"`},
		{"parameters that are not JSON Schema", d, knowledgeFrame("b6", `{"name":"weather","description":"Weather","parameters":{"type":"object","properties":{"day":{"enum":"today"}}}}`), "invalid",
			`knowledge.declare: knowledge "weather": parameters: not a valid JSON Schema`},
		{"parameters that load another", d, knowledgeFrame("b7", `{"name":"weather","description":"Weather","parameters":{"type":"object","$ref":"http://example.com/x.json"}}`), "invalid",
			"may not refer to another document"},
		{"a name declared twice", d, knowledgeFrame("b8", weatherDef, weatherDef), "invalid", `params.knowledge[1].name: "weather" is declared twice`},
		{"vision", d, knowledgeFrame("b9", `{"name":"vision","description":"What I see","parameters":{"type":"object"}}`), "invalid", "params.knowledge[0].name: speak and vision are the brain's own tools"},
		{"17 tools", d, knowledgeFrame("b10", many...), "invalid", "params.knowledge: at most 16 knowledge tools, got 17"},
		{"no knowledge", d, `{"jsonrpc":"2.0","id":"b11","method":"knowledge.declare","params":{}}`, "invalid", "params.knowledge: required"},
		{"no parameters", d, knowledgeFrame("b12", `{"name":"weather","description":"Weather"}`), "invalid", "params.knowledge[0].parameters: required"},
		{"a description too long", d, knowledgeFrame("b13", `{"name":"weather","description":"`+strings.Repeat("w", protocol.MaxActionDescription+1)+`","parameters":{"type":"object"}}`), "invalid",
			"params.knowledge[0].description: must be at most 1024 bytes"},
		{"no jsonrpc", d, `{"id":"b14","method":"knowledge.declare","params":{"knowledge":[]}}`, "invalid", `jsonrpc must be "2.0"`},
	}
	r.refusesEach(t, cases)
	if n := knowledgeNamesOf(r.bridge.Knowledge("web-bot")); !slices.Equal(n, []string{"weather"}) {
		t.Fatalf("after the refusals the device has %v, want the declaration before them", n)
	}
	declaredKnowledge(t, d, "good-2", hoursDef) // still up
}

// A knowledge query goes to the body as query.send, and the body's answer
// reaches the asker as a KnowledgeResult (query.Know).
func TestKnowledgeQueryIsAnsweredByTheBody(t *testing.T) {
	r := newRig(t, nil)
	d := r.dial(deviceToken)
	declaredKnowledge(t, d, "know-1", weatherDef)
	ctx, qc := r.askerWithin(10 * time.Second)
	type known struct {
		res protocol.KnowledgeResult
		err error
	}
	done := make(chan known, 1)
	go func() {
		res, err := query.Call(ctx, qc, "web-bot", query.Knowledge, protocol.KnowledgeRequest{Name: "weather", Args: json.RawMessage(`{"day":"today"}`)}, 5*time.Second)
		done <- known{res, err}
	}()
	q := next(t, d, "the knowledge query", func(f map[string]any) bool { return f["method"] == protocol.MethodQuery })
	p, _ := q["params"].(map[string]any)
	body, _ := json.Marshal(p["body"])
	if p["type"] != protocol.TypeKnowledge || p["from"] != "bot" || string(body) != `{"args":{"day":"today"},"name":"weather"}` {
		t.Fatalf("the body got %v", q)
	}
	send(t, d, fmt.Sprintf(`{"jsonrpc":"2.0","id":%q,"result":{"success":true,"body":{"text":"Sunny, 21 °C."}}}`, q["id"]))
	a := <-done
	if a.err != nil || a.res.Text != "Sunny, 21 °C." {
		t.Fatalf("the asker got %+v, %v", a.res, a.err)
	}

	// An answer that is not {text} is a bad result, named.
	go func() {
		res, err := query.Call(ctx, qc, "web-bot", query.Knowledge, protocol.KnowledgeRequest{Name: "weather"}, 5*time.Second)
		done <- known{res, err}
	}()
	q = next(t, d, "the second knowledge query", func(f map[string]any) bool { return f["method"] == protocol.MethodQuery })
	send(t, d, fmt.Sprintf(`{"jsonrpc":"2.0","id":%q,"result":{"success":true,"body":{"answer":"sunny"}}}`, q["id"]))
	if a := <-done; a.err == nil || !strings.Contains(a.err.Error(), "knowledge from web-bot") {
		t.Fatalf("a result without text: %+v, %v", a.res, a.err)
	}
}
