package system

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/chorus-robotics/chorus/device/bridge"
	"github.com/chorus-robotics/chorus/runtime/brain/llm/llmtest"
	"github.com/chorus-robotics/chorus/runtime/bus"
	"github.com/chorus-robotics/chorus/runtime/bus/bustest"
	"github.com/chorus-robotics/chorus/runtime/protocol"
	"github.com/chorus-robotics/chorus/runtime/query"
	"github.com/chorus-robotics/chorus/runtime/room"
	"github.com/chorus-robotics/chorus/runtime/topic"
)

// A body in another language declares its own action (issue 22): the Node
// body of tests/node/action-body.mjs connects to a bridge as device body,
// declares wave, and the bridge lists it; companion bot asks it to wave
// its left hand with an action query (runtime/query's client, on the
// embedded broker with the ACL on), and gets the Node body's own answer.
func TestBridgeNodeActionBody(t *testing.T) {
	needNode(t)
	scheme := topic.New("").WithRoster("lab", []string{"bot"})
	br := bustest.StartEmbedded(t, bustest.Options{ACL: true, Scheme: scheme})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	dial := func(ctx context.Context, id string) (bus.Bus, error) {
		return bus.Dial(ctx, bus.Options{Broker: br.URL(), ClientID: id + "-" + protocol.NewID()[:6], Username: id})
	}
	box, err := dial(ctx, "box")
	if err != nil {
		t.Fatal(err)
	}
	defer box.Close()
	rm := room.New(box, scheme, "lab", nil, nil)
	rm.SetMembers([]string{"bot"})
	const token = "body-token-3c1d9e7f20"
	told := make(chan []protocol.ActionDef, 4)
	b, err := bridge.New(bridge.Config{Room: rm, Dial: dial, Tokens: []bridge.Token{{Secret: token, Role: bridge.Device, Name: "body"}},
		OnActions: func(device string, defs []protocol.ActionDef) {
			if device == "body" {
				told <- defs
			}
		}})
	if err != nil {
		t.Fatal(err)
	}
	rctx, stop := context.WithCancel(ctx)
	ran := make(chan error, 1)
	go func() { ran <- b.Run(rctx) }()
	srv := httptest.NewServer(b)
	defer func() { stop(); <-ran; srv.Close() }()

	node := runNode(t, "action-body.mjs", "CHORUS_BRIDGE_URL=ws"+strings.TrimPrefix(srv.URL, "http")+"/?token="+token)
	if !node.opened() {
		t.Fatal("the Node body did not connect")
	}
	select {
	case defs := <-told:
		if len(defs) != 1 || defs[0].Name != "wave" {
			t.Fatalf("OnActions told %+v", defs)
		}
	case <-ctx.Done():
		t.Fatalf("the Node body declared nothing; it printed %v", node.printed())
	}
	defs := b.Actions("body")
	if len(defs) != 1 || defs[0].Name != "wave" || !strings.Contains(string(defs[0].Schema), `"enum":["left","right"]`) {
		t.Fatalf("Actions(body) = %+v", defs)
	}
	if l := node.awaitEvent("declared"); l == nil || l["declared"] != float64(1) {
		t.Fatalf("the Node body was not told its declaration was taken: %v", node.printed())
	}

	asker, err := dial(ctx, "bot")
	if err != nil {
		t.Fatal(err)
	}
	defer asker.Close()
	qc := query.NewClient(asker, scheme, "bot", query.ClientOptions{})
	defer qc.Close()
	raw, err := qc.Ask(ctx, "body", protocol.TypeAction, protocol.ActionRequest{Name: "wave", Args: json.RawMessage(`{"hand":"left"}`)}, 10*time.Second)
	if err != nil {
		t.Fatalf("wave: %v", err)
	}
	res, err := protocol.DecodeActionResult(raw, 0)
	if err != nil || res.Name != "wave" || !res.Done || res.DurationMs != 5 || res.Detail != "waved left" {
		t.Fatalf("the Node body answered %s: %+v %v", raw, res, err)
	}
	qs := node.await("action")
	if len(qs) != 1 {
		t.Fatalf("the Node body printed %d action queries: %v", len(qs), qs)
	}
	if body := fmt.Sprint(qs[0]["body"]); qs[0]["from"] != "bot" || body != "map[args:map[hand:left] name:wave]" {
		t.Fatalf("the Node body got the query %v", qs[0])
	}
	t.Logf("the Node body declared wave and waved: %s", raw)
}

// printed is a copy of the lines the client printed.
func (n *nodeClient) printed() []map[string]any {
	n.mu.Lock()
	defer n.mu.Unlock()
	return append([]map[string]any(nil), n.lines...)
}

// awaitEvent returns the first line the client printed of event ev,
// waiting up to 5 s; nil if none came.
func (n *nodeClient) awaitEvent(ev string) map[string]any {
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		for _, l := range n.printed() {
			if l["event"] == ev {
				return l
			}
		}
	}
	return nil
}

// The whole chain (issue 22): chorusd runs companion bot, whose body is
// the Node body behind its bridge; the body declares wave when it
// connects, bot's model (a server as strict as the real API) is offered
// wave in the call that drafts its words and calls it with them, and the
// Node body is asked to wave — tied to the words' message id — and
// answers. The room's Message lists the action.
func TestNodeBodyWavesWithItsWords(t *testing.T) {
	needNode(t)
	chorusd, _ := buildBinaries(t)
	model := llmtest.New()
	defer model.Close()
	model.APIKey, model.ClosingAfter, model.Gesture, model.GestureArgs = e2eAPIKey, 10, "wave", `{"hand":"left"}`
	_, base := startBridgeBox(t, chorusd, model)
	node := runNode(t, "action-body.mjs", "CHORUS_BRIDGE_URL=ws://"+base+"/?token="+e2eDeviceToken)
	if l := node.awaitEvent("declared"); l == nil || l["declared"] != float64(1) {
		t.Fatalf("the Node body's declaration was not taken: %v", node.printed())
	}
	user := dialUser(t, base, 60*time.Second)
	user.say("Hello bot, can you wave to me?")
	var said protocol.Message
	user.until(30*time.Second, "bot's answer", func(b []byte) bool {
		return json.Unmarshal(b, &said) == nil && said.Method == protocol.MethodMessage && said.Params.From == "bot"
	})
	if got := fmt.Sprint(model.Offered()); !strings.Contains(got, "wave") {
		t.Fatalf("bot's model was offered %s, not the body's wave", got)
	}
	if acts := fmt.Sprint(said.Params.Metadata[protocol.MetaActions]); acts != "[wave]" {
		t.Fatalf("bot's Message lists actions %s, want [wave]: %+v", acts, said.Params)
	}
	qs := node.await("action")
	if len(qs) != 1 {
		t.Fatalf("the Node body got %d action queries: %v", len(qs), node.printed())
	}
	body, _ := qs[0]["body"].(map[string]any)
	if qs[0]["from"] != "bot" || body["name"] != "wave" || fmt.Sprint(body["args"]) != "map[hand:left]" || body["messageId"] != said.Params.ID {
		t.Fatalf("the Node body was asked %v; want wave with the left hand, tied to message %s", qs[0], said.Params.ID)
	}
	if spoke := node.await("speak"); len(spoke) == 0 {
		t.Fatal("the Node body was not asked to speak the words")
	}
	if pr := model.Problems(); len(pr) > 0 {
		t.Fatalf("the model server saw bad requests: %v", pr)
	}
	t.Logf("bot said %q and waved (%v)", said.Params.Message, body)
}
