package bridge

import (
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/chorus-robotics/chorus/runtime/protocol"
)

const (
	waveDef = `{"name":"wave","description":"Wave a hand","schema":{"type":"object","properties":{"hand":{"enum":["left","right"]}},"additionalProperties":false}}`
	nodDef  = `{"name":"nod","description":"Nod once","schema":{"type":"object"}}`
)

// declareFrame is an actions.declare with id, the actions defs and
// delivery ("" leaves it out).
func declareFrame(id, delivery string, defs ...string) string {
	d := ""
	if delivery != "" {
		d = `,"delivery":"` + delivery + `"`
	}
	return `{"jsonrpc":"2.0","id":"` + id + `","method":"actions.declare","params":{"actions":[` + strings.Join(defs, ",") + `]` + d + `}}`
}

// declared sends an actions.declare and waits for its answer.
func declared(t *testing.T, c *websocket.Conn, id, delivery string, defs ...string) {
	t.Helper()
	send(t, c, declareFrame(id, delivery, defs...))
	f := next(t, c, "the answer to "+id, func(f map[string]any) bool { return f["id"] == id })
	res, _ := f["result"].(map[string]any)
	if res["declared"] != float64(len(defs)) {
		t.Fatalf("declaring %d actions was answered %v", len(defs), f)
	}
}

func names(defs []protocol.ActionDef) []string {
	var n []string
	for _, d := range defs {
		n = append(n, d.Name)
	}
	return n
}

type toldActions struct {
	device string
	defs   []protocol.ActionDef
}

// A device declares its body's actions: Actions returns a copy of them
// and OnActions is told; a new declaration (here in aikyo's envelope)
// replaces the old; the declaration outlives a client of the device while
// another is connected and is forgotten (OnActions with nil) when the
// last one goes.
func TestDeviceDeclaresActions(t *testing.T) {
	told := make(chan toldActions, 8)
	var br atomic.Pointer[Bridge]
	r := newRig(t, func(c *Config) {
		c.OnActions = func(device string, defs []protocol.ActionDef) {
			if got := br.Load().Actions(device); !slices.Equal(names(got), names(defs)) { // it may call Actions
				t.Errorf("OnActions told %v while Actions says %v", names(defs), names(got))
			}
			told <- toldActions{device, defs}
		}
	})
	br.Store(r.bridge)
	b := r.bridge
	expect := func(want ...string) {
		t.Helper()
		select {
		case got := <-told:
			if got.device != "web-bot" || !slices.Equal(names(got.defs), want) || (want == nil) != (got.defs == nil) {
				t.Fatalf("OnActions told %s %v, want web-bot %v", got.device, names(got.defs), want)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("OnActions not told %v", want)
		}
	}
	if b.Actions("web-bot") != nil {
		t.Fatal("actions before any declaration")
	}
	d := r.dial(deviceToken)
	declared(t, d, "decl-1", "", waveDef, nodDef)
	expect("wave", "nod")
	got := b.Actions("web-bot")
	if !slices.Equal(names(got), []string{"wave", "nod"}) || got[0].Description != "Wave a hand" || !strings.Contains(string(got[0].Schema), `"left"`) {
		t.Fatalf("Actions: %+v", got)
	}
	got[0].Name, got[0].Schema[0] = "jump", 'X'
	if again := b.Actions("web-bot"); again[0].Name != "wave" || again[0].Schema[0] != '{' {
		t.Fatalf("Actions handed out its own: %+v", again)
	}
	if b.Actions("alice") != nil || b.Actions("kiosk") != nil {
		t.Fatal("actions of a device that declared none")
	}

	send(t, d, `{"topic":"queries","body":{"jsonrpc":"2.0","id":7,"method":"actions.declare","params":{"actions":[`+nodDef+`],"delivery":"notify"}}}`)
	f := next(t, d, "the answer to the enveloped declaration", func(f map[string]any) bool { return f["id"] == float64(7) })
	if res, _ := f["result"].(map[string]any); res["declared"] != float64(1) {
		t.Fatalf("the enveloped declaration was answered %v", f)
	}
	expect("nod")
	if n := names(b.Actions("web-bot")); !slices.Equal(n, []string{"nod"}) {
		t.Fatalf("after the new declaration: %v", n)
	}

	d2 := r.dial(deviceToken)
	d.Close(websocket.StatusNormalClosure, "")
	time.Sleep(200 * time.Millisecond)
	if n := names(b.Actions("web-bot")); !slices.Equal(n, []string{"nod"}) || len(told) != 0 {
		t.Fatalf("with a client of the device still connected: %v, %d told", n, len(told))
	}
	d2.CloseNow() // the last one, killed
	expect()
	if b.Actions("web-bot") != nil {
		t.Fatal("the declaration outlived the device's last client")
	}
}

// Bad declarations are refused, each with an error frame that names what
// is wrong and a count; the declaration made before stays, and the
// connection carries on.
func TestBadDeclarationsAreRefused(t *testing.T) {
	r := newRig(t, nil)
	d := r.dial(deviceToken)
	u := r.dial(userToken)
	v := r.dial(viewerToken)
	declared(t, d, "good-1", "notify", waveDef)
	var many []string
	for i := range 33 {
		many = append(many, fmt.Sprintf(`{"name":"a%d","description":"d","schema":{"type":"object"}}`, i))
	}
	cases := []refusal{
		{"a user", u, declareFrame("b1", "", waveDef), "forbidden", "a user may not declare actions"},
		{"a viewer", v, declareFrame("b2", "", waveDef), "forbidden", "a viewer may not declare actions"},
		{"an unknown field in params", d, `{"jsonrpc":"2.0","id":"b3","method":"actions.declare","params":{"actions":[` + waveDef + `],"extra":1}}`, "invalid", "actions.declare: params.extra: unknown field"},
		{"an unknown field in an action", d, declareFrame("b4", "", `{"name":"wave","description":"Wave","schema":{"type":"object"},"speed":3}`), "invalid", "speed: unknown field"},
		{"an unknown field in the frame", d, `{"jsonrpc":"2.0","id":"b5","method":"actions.declare","params":{"actions":[]},"meta":{}}`, "invalid", `actions.declare: unknown field "meta"`},
		{"a schema that is not JSON Schema", d, declareFrame("b6", "", `{"name":"wave","description":"Wave","schema":{"type":"object","properties":{"hand":{"enum":"left"}}}}`), "invalid",
			`actions.declare: action "wave": schema: not a valid JSON Schema`},
		{"a schema that loads another", d, declareFrame("b7", "", `{"name":"wave","description":"Wave","schema":{"type":"object","$ref":"http://example.com/x.json"}}`), "invalid",
			"may not refer to another document"},
		{"a name declared twice", d, declareFrame("b8", "", waveDef, waveDef), "invalid", `params.actions[1].name: "wave" is declared twice`},
		{"speak", d, declareFrame("b9", "", `{"name":"speak","description":"Say","schema":{"type":"object"}}`), "invalid", "params.actions[0].name: speak and vision are the brain's own tools"},
		{"33 actions", d, declareFrame("b10", "", many...), "invalid", "params.actions: at most 32 actions, got 33"},
		{"no actions", d, `{"jsonrpc":"2.0","id":"b11","method":"actions.declare","params":{"delivery":"query"}}`, "invalid", "params.actions: required"},
		{"a delivery of its own", d, declareFrame("b12", "later", waveDef), "invalid", `params.delivery: must be "query" or "notify"`},
		{"no jsonrpc", d, `{"id":"b13","method":"actions.declare","params":{"actions":[]}}`, "invalid", `jsonrpc must be "2.0"`},
	}
	r.refusesEach(t, cases)
	if n := names(r.bridge.Actions("web-bot")); !slices.Equal(n, []string{"wave"}) {
		t.Fatalf("after the refusals the device has %v, want the declaration before them", n)
	}
	declared(t, d, "good-2", "", nodDef) // still up
}

// A device that takes actions as aikyo's Action frames (delivery
// "notify"): an action query addressed to it goes out as action.send,
// never as query.send, and the asker gets the bridge's done result; an
// action it did not declare, or arguments its schema refuses, get an
// error result naming what is wrong; other queries go as query.send.
func TestNotifyDeliverySendsActionSend(t *testing.T) {
	r := newRig(t, nil)
	d := r.dial(deviceToken)
	declared(t, d, "decl-1", "notify", waveDef, nodDef)
	ctx, qc := r.askerWithin(20 * time.Second)
	ask := func(name, args string) (json.RawMessage, error) {
		return qc.Ask(ctx, "web-bot", protocol.TypeAction, protocol.ActionRequest{Name: name, Args: json.RawMessage(args)}, 5*time.Second)
	}

	raw, err := ask("wave", `{"hand":"left"}`)
	if err != nil {
		t.Fatalf("wave: %v", err)
	}
	res, err := protocol.DecodeActionResult(raw, 0)
	if err != nil || res.Name != "wave" || !res.Done || res.Detail != SentDetail {
		t.Fatalf("wave answered %s: %+v %v", raw, res, err)
	}
	var sent protocol.ActionSend
	next(t, d, "the action.send", func(f map[string]any) bool {
		if f["method"] == protocol.MethodQuery {
			t.Fatalf("a query.send reached a notify body: %v", f)
		}
		if f["method"] != protocol.MethodActionSend {
			return false
		}
		b, _ := json.Marshal(f)
		if sent, err = protocol.DecodeActionSend(b, 0); err != nil {
			t.Fatalf("the frame %s: %v", b, err)
		}
		return true
	})
	if sent.Params.From != "bot" || sent.Params.Name != "wave" || string(sent.Params.Params) != `{"hand":"left"}` {
		t.Fatalf("action.send %+v", sent.Params)
	}

	for _, tc := range []struct{ name, args, says string }{
		{"jump", `{}`, `action "jump": body web-bot did not declare it (it declared: wave, nod)`},
		{"wave", `{"hand":"up"}`, `action "wave": args: at /hand`},
		{"wave", `{"speed":3}`, `action "wave": args:`},
		{"speak", `{}`, "speak and vision are the brain's own tools"},
	} {
		if _, err := ask(tc.name, tc.args); err == nil || !strings.Contains(err.Error(), tc.says) {
			t.Fatalf("%s %s: %v, want an error saying %q", tc.name, tc.args, err, tc.says)
		}
	}
	raw, err = ask("nod", "") // no args: {}
	if res, _ := protocol.DecodeActionResult(raw, 0); err != nil || res.Name != "nod" || !res.Done {
		t.Fatalf("nod: %s %v", raw, err)
	}

	done := make(chan error, 1)
	go func() {
		_, err := qc.Ask(ctx, "web-bot", "vision", nil, 5*time.Second)
		done <- err
	}()
	var actions []string
	q := next(t, d, "the vision query", func(f map[string]any) bool {
		if f["method"] == protocol.MethodActionSend {
			p, _ := f["params"].(map[string]any)
			actions = append(actions, fmt.Sprint(p["name"]))
		}
		if f["method"] == protocol.MethodQuery {
			if p, _ := f["params"].(map[string]any); p["type"] != "vision" {
				t.Fatalf("a %v query reached a notify body as query.send", p["type"])
			}
			return true
		}
		return false
	})
	if !slices.Equal(actions, []string{"nod"}) {
		t.Fatalf("action.send frames after wave: %v, want only nod's (refused actions are not sent)", actions)
	}
	send(t, d, fmt.Sprintf(`{"jsonrpc":"2.0","id":%q,"result":{"success":true,"body":{"image":"aGVsbG8="}}}`, q["id"]))
	if err := <-done; err != nil {
		t.Fatalf("vision through a notify body: %v", err)
	}
}

// Delivery "query" (the default): an action query goes to the body as
// query.send and the body's answer is the result.
func TestQueryDeliveryActionIsAQuery(t *testing.T) {
	r := newRig(t, nil)
	d := r.dial(deviceToken)
	declared(t, d, "decl-1", "", waveDef)
	ctx, qc := r.askerWithin(10 * time.Second)
	done := askAsync(ctx, qc, protocol.TypeAction, protocol.ActionRequest{Name: "wave", Args: json.RawMessage(`{"hand":"right"}`)})
	q := next(t, d, "the action query", func(f map[string]any) bool { return f["method"] == protocol.MethodQuery })
	p, _ := q["params"].(map[string]any)
	body, _ := json.Marshal(p["body"])
	if p["type"] != protocol.TypeAction || string(body) != `{"args":{"hand":"right"},"name":"wave"}` {
		t.Fatalf("the body got %v", q)
	}
	send(t, d, fmt.Sprintf(`{"jsonrpc":"2.0","id":%q,"result":{"success":true,"body":{"name":"wave","done":true,"durationMs":5,"detail":"waved right"}}}`, q["id"]))
	a := <-done
	res, err := protocol.DecodeActionResult(a.raw, 0)
	if a.err != nil || err != nil || res.Detail != "waved right" || res.DurationMs != 5 {
		t.Fatalf("the asker got %s, %v, %v", a.raw, a.err, err)
	}
}

// Every reason the bridge refuses a frame with has a JSON-RPC code, and
// the package doc lists every code.
func TestErrorCodesListed(t *testing.T) {
	files, _ := os.ReadDir(".")
	used := regexp.MustCompile(`(?:refuse\([^,]+, [^,]+|errorFrame\([^,]+), "([a-z_]+)"`)
	var src strings.Builder
	for _, f := range files {
		if strings.HasSuffix(f.Name(), ".go") && !strings.HasSuffix(f.Name(), "_test.go") {
			b, _ := os.ReadFile(f.Name())
			src.Write(b)
		}
	}
	for _, m := range used.FindAllStringSubmatch(src.String(), -1) {
		if _, ok := errorCodes[m[1]]; !ok {
			t.Errorf("reason %q has no code in errorCodes", m[1])
		}
	}
	doc, _ := os.ReadFile("bridge.go")
	pkg, _, _ := strings.Cut(string(doc), "package bridge")
	for reason, code := range errorCodes {
		if !strings.Contains(pkg, strconv.Itoa(code)+" ") {
			t.Errorf("the package doc does not list %d (%s)", code, reason)
		}
	}
}

// A body behind the bridge serves speak but not speak.more: the bridge
// answers an append with an error and the body never sees it.
func TestSpeakMoreNeverReachesABridgeBody(t *testing.T) {
	r := newRig(t, nil)
	d := r.dial(deviceToken)
	declared(t, d, "decl-1", "", waveDef)
	ctx, qc := r.askerWithin(10 * time.Second)
	_, err := qc.Ask(ctx, "web-bot", protocol.TypeSpeakMore, protocol.SpeakMore{MessageID: "m1", Seq: 1, Message: "More."}, 5*time.Second)
	if err == nil || !strings.Contains(err.Error(), "does not serve it") {
		t.Fatalf("speak.more to a bridge body: %v, want the bridge's refusal", err)
	}
	done := askAsync(ctx, qc, protocol.TypeSpeak, protocol.SpeakRequest{Message: "Hello."})
	q := next(t, d, "the speak query", func(f map[string]any) bool { return f["method"] == protocol.MethodQuery })
	if p, _ := q["params"].(map[string]any); p["type"] != protocol.TypeSpeak {
		t.Fatalf("the body got %v, want the speak (never the speak.more)", q)
	}
	send(t, d, fmt.Sprintf(`{"jsonrpc":"2.0","id":%q,"result":{"success":true,"body":{}}}`, q["id"]))
	if a := <-done; a.err != nil {
		t.Fatalf("speak through the bridge: %v", a.err)
	}
}
