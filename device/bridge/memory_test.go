package bridge

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/chorus-robotics/chorus/runtime/memory"
	"github.com/chorus-robotics/chorus/runtime/memory/control"
	"github.com/chorus-robotics/chorus/runtime/protocol"
)

const rootToken = "root-token-0123456789"

// memoryRig is a rig whose device kiosk answers memory requests with a
// real control server (operator: root) on the embedded broker with the
// ACL on; ghost is a device whose presence is offline.
func memoryRig(t *testing.T) *rig {
	t.Helper()
	return newRig(t, func(c *Config) {
		c.Tokens = append(c.Tokens, Token{Secret: rootToken, Role: User, Name: "root"})
		c.Online = func(device string) (bool, bool) {
			switch device {
			case "kiosk":
				return true, true
			case "ghost":
				return false, true
			}
			return false, false
		}
		ctx, cancel := context.WithCancel(context.Background())
		dev, err := c.Dial(ctx, "kiosk")
		if err != nil {
			t.Fatal(err)
		}
		st, err := memory.Open(t.TempDir(), "kiosk", memory.Limits{PerPerson: 200, Total: 2000, Bytes: 1 << 20}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := st.Add(memory.Fact{ID: "fa1", Person: "alice", Key: "home", Text: "lives in Osaka", MessageID: "m0"},
			memory.Fact{ID: "fa2", Person: "alice", Key: "like:tea", Text: "likes tea", MessageID: "m0"},
			memory.Fact{ID: "fb1", Person: "bob", Key: "job", Text: "works as a pilot", MessageID: "m1"}); err != nil {
			t.Fatal(err)
		}
		voices, err := memory.OpenVoices(t.TempDir(), "kiosk", memory.VoiceLimits{}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if err := voices.Add("alice", "ecapa", time.Now(), []float32{1, 0.2}, []float32{1, 0.1}); err != nil {
			t.Fatal(err)
		}
		m := &control.Memory{Store: st, Voices: voices, IsOperator: func(id string) bool { return id == "root" }, Log: c.Log}
		served := make(chan error, 1)
		go func() { served <- control.Serve(ctx, dev, c.Room.Scheme, "kiosk", m) }()
		t.Cleanup(func() {
			cancel()
			if err := <-served; err != nil {
				t.Errorf("the control server: %v", err)
			}
			st.Close()
			voices.Close()
			dev.Close()
		})
	})
}

// ask sends a memory frame with id rid and returns its answer.
func ask(t *testing.T, c *websocket.Conn, rid, params string) map[string]any {
	t.Helper()
	send(t, c, fmt.Sprintf(`{"jsonrpc":"2.0","method":"memory","id":%q,"params":%s}`, rid, params))
	return nextWithin(t, c, "the answer to "+rid, 2*MemoryTimeout, func(f map[string]any) bool { return f["id"] == rid })
}

// nextWithin is next with a longer wait (an answer may take MemoryTimeout).
func nextWithin(t *testing.T, c *websocket.Conn, what string, d time.Duration, ok func(map[string]any) bool) map[string]any {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	for {
		_, b, err := c.Read(ctx)
		if err != nil {
			t.Fatalf("waiting for %s: %v", what, err)
		}
		var f map[string]any
		if err := json.Unmarshal(b, &f); err != nil {
			t.Fatalf("a frame that is not JSON: %q", b)
		}
		if ok(f) {
			return f
		}
	}
}

// answered checks a memory result: the device, facts a JSON array (never
// null), forgotten a number.
func answered(t *testing.T, f map[string]any, device string) (facts []any, forgotten float64) {
	t.Helper()
	res, ok := f["result"].(map[string]any)
	if !ok || res["device"] != device {
		t.Fatalf("memory answered %v, want a result for %s", f, device)
	}
	facts, ok = res["facts"].([]any)
	if !ok {
		t.Fatalf("facts is %#v, want an array", res["facts"])
	}
	forgotten, ok = res["forgotten"].(float64)
	if !ok {
		t.Fatalf("forgotten is %#v, want a number", res["forgotten"])
	}
	return facts, forgotten
}

// refusedWith checks an error frame's code and that its message says want.
func refusedWith(t *testing.T, f map[string]any, code int, want string) {
	t.Helper()
	e, ok := f["error"].(map[string]any)
	if !ok || e["code"] != float64(code) || !strings.Contains(fmt.Sprint(e["message"]), want) {
		t.Fatalf("answered %v, want error %d saying %q", f, code, want)
	}
}

// A user's client lists and forgets through the bridge, asking the device
// under its own name: its own facts, yes (also when it names nobody);
// another's, the device's refusal in its words. An operator may ask about
// anyone, and about everyone.
func TestMemoryThroughTheBridge(t *testing.T) {
	r := memoryRig(t)
	alice, root := r.dial(userToken), r.dial(rootToken)

	facts, n := answered(t, ask(t, alice, "m1", `{"device":"kiosk","op":"list","person":"alice"}`), "kiosk")
	if len(facts) != 2 || n != 0 || !strings.Contains(fmt.Sprint(facts), "lives in Osaka") || strings.Contains(fmt.Sprint(facts), "pilot") {
		t.Fatalf("alice's facts: %v, forgotten %v", facts, n)
	}
	if _, n = answered(t, ask(t, alice, "m3", `{"device":"kiosk","op":"forget","person":"alice","fact":"fa2"}`), "kiosk"); n != 1 {
		t.Fatalf("forgetting one fact: forgotten %v", n)
	}
	if facts, _ = answered(t, ask(t, alice, "m3b", `{"device":"kiosk","op":"list","person":"alice"}`), "kiosk"); len(facts) != 1 {
		t.Fatalf("after forgetting one of two: %v", facts)
	}
	// The voices the device knows people by: alice sees hers, not bob's;
	// forgetting her voice leaves her facts' answer as it was.
	res := ask(t, alice, "v1", `{"device":"kiosk","op":"voices","person":"alice"}`)["result"].(map[string]any)
	if vs := fmt.Sprint(res["voices"]); !strings.Contains(vs, "person:alice") || !strings.Contains(vs, "samples:2") {
		t.Fatalf("alice's voice: %v", res)
	}
	refusedWith(t, ask(t, alice, "v2", `{"device":"kiosk","op":"forget-voice","person":"bob"}`), -32006, "alice may not see or forget")
	if _, n = answered(t, ask(t, alice, "v3", `{"device":"kiosk","op":"forget-voice","person":"alice"}`), "kiosk"); n != 2 {
		t.Fatalf("forgetting alice's voice: forgotten %v", n)
	}
	res = ask(t, root, "v4", `{"device":"kiosk","op":"voices"}`)["result"].(map[string]any)
	if vs, ok := res["voices"].([]any); !ok || len(vs) != 0 {
		t.Fatalf("after alice's voice is forgotten, the voices: %v", res)
	}
	if facts, _ = answered(t, ask(t, alice, "v5", `{"device":"kiosk","op":"list","person":"alice"}`), "kiosk"); len(facts) != 1 {
		t.Fatalf("forgetting her voice took her facts: %v", facts)
	}

	if _, n = answered(t, ask(t, alice, "m2", `{"device":"kiosk","op":"forget","person":"alice"}`), "kiosk"); n != 1 {
		t.Fatalf("forgetting everything about alice: forgotten %v", n)
	}

	refusedWith(t, ask(t, alice, "m4", `{"device":"kiosk","op":"list","person":"bob"}`), -32006, "memory of kiosk: refused: alice may not see or forget what is remembered about bob")
	refusedWith(t, ask(t, alice, "m5", `{"device":"kiosk","op":"forget","person":"bob"}`), -32006, "alice may not see or forget")
	// A list that names nobody is the asker's own (an operator's is
	// everyone's): alice forgot hers, and never sees bob's.
	if facts, _ = answered(t, ask(t, alice, "m6", `{"device":"kiosk","op":"list"}`), "kiosk"); len(facts) != 0 {
		t.Fatalf("alice's list without a person: %v, want her own (none left)", facts)
	}

	if facts, _ = answered(t, ask(t, root, "r1", `{"device":"kiosk","op":"list","person":"bob"}`), "kiosk"); len(facts) != 1 {
		t.Fatalf("the operator lists bob's: %v", facts)
	}
	if facts, _ = answered(t, ask(t, root, "r2", `{"device":"kiosk","op":"list"}`), "kiosk"); len(facts) != 1 {
		t.Fatalf("the operator lists everyone's (alice forgotten): %v", facts)
	}
	if _, n = answered(t, ask(t, root, "r3", `{"device":"kiosk","op":"forget","person":"bob"}`), "kiosk"); n != 1 {
		t.Fatalf("the operator forgets bob: forgotten %v", n)
	}

	// Asked at once, answered at once: a device known offline.
	start := time.Now()
	refusedWith(t, ask(t, alice, "m7", `{"device":"ghost","op":"list","person":"alice"}`), -32006, "memory of ghost: device ghost is offline")
	if d := time.Since(start); d > time.Second {
		t.Fatalf("an offline device's answer took %v", d)
	}

	// Every call's handler is gone once it has its answer: the
	// identity's connection keeps one subscription, not one per request.
	r.bridge.mu.Lock()
	id := r.bridge.ids["alice"]
	r.bridge.mu.Unlock()
	if id == nil {
		t.Fatal("no connection for alice")
	}
	for deadline := time.Now().Add(2 * time.Second); id.memory.Pending() > 0 && time.Now().Before(deadline); {
		time.Sleep(5 * time.Millisecond)
	}
	if n := id.memory.Pending(); n != 0 {
		t.Fatalf("%d answer handlers left after the requests", n)
	}
}

// Viewers and devices may not ask; bad params are refused with the
// reason, before anything reaches the bus, and the connection stays up.
func TestMemoryRefused(t *testing.T) {
	r := memoryRig(t)
	v, d, alice := r.dial(viewerToken), r.dial(deviceToken), r.dial(userToken)
	refusedWith(t, ask(t, v, "v1", `{"device":"kiosk","op":"list","person":"alice"}`), -32001, "a viewer may not ask about memory")
	refusedWith(t, ask(t, d, "d1", `{"device":"kiosk","op":"list","person":"web-bot"}`), -32001, "a device may not ask about memory")
	for _, tc := range []struct{ params, code, want string }{
		{`{"device":"kiosk","op":"export","person":"alice"}`, "-32001", "op export is for chorus memory"},
		{`{"device":"kiosk","op":"wipe"}`, "-32001", "op wipe is for chorus memory"},
		{`{"device":"kiosk","op":"forget-voice"}`, "-32600", "forget-voice needs the person"},
		{`{"device":"kiosk","op":"remember","person":"alice"}`, "-32600", "params.op must be list, forget, voices or forget-voice"},
		{`{"device":"kiosk","op":"enroll-voice","person":"alice"}`, "-32001", "op enroll-voice is for chorus memory and chorus voice"},
		{`{"device":"../kiosk","op":"list","person":"alice"}`, "-32600", "params.device"},
		{`{"device":"kiosk","op":"list","person":"alice/#"}`, "-32600", "params.person"},
		{`{"device":"kiosk","op":"forget"}`, "-32600", "forget needs the person"},
		{`{"device":"kiosk","op":"list","person":"alice","fact":"f1"}`, "-32600", "only forget takes a fact"},
		{`{"device":"kiosk","op":"list","person":"alice","extra":"x"}`, "-32600", "params.extra: unknown"},
		{`{"Device":"kiosk","op":"list","person":"alice"}`, "-32600", "params.Device: unknown"},
		{`{"device":"kiosk","op":"list","person":7}`, "-32600", "params.person must be a string"},
		{`["kiosk"]`, "-32600", "memory needs params"},
		{`null`, "-32600", "memory needs params"},
	} {
		f := ask(t, alice, "bad", tc.params)
		var code int
		fmt.Sscan(tc.code, &code)
		refusedWith(t, f, code, tc.want)
	}
	answered(t, ask(t, alice, "ok", `{"device":"kiosk","op":"list","person":"alice"}`), "kiosk")
}

// parseMemory accepts only what the contract accepts, and refuses
// everything else with a counted reason and a message.
func FuzzParseMemory(f *testing.F) {
	for _, s := range []string{
		`{"params":{"device":"kiosk","op":"list","person":"alice"}}`,
		`{"params":{"device":"kiosk","op":"list"}}`,
		`{"params":{"device":"kiosk","op":"forget","person":"alice","fact":"f-1"}}`,
		`{"params":{"device":"kiosk","op":"wipe"}}`,
		`{"params":{"device":"kiosk","op":"export","person":"alice"}}`,
		`{"params":{"device":"","op":"list"}}`,
		`{"params":{"device":"kiosk","op":"list","person":"a+b"}}`,
		`{"params":{"device":"kiosk","op":"list","person":null}}`,
		`{"params":{"device":"kiosk","op":"list","op":"wipe"}}`,
		`{"params":"x"}`, `{}`, `null`, `[]`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		dev, req, reason, why := parseMemory(data)
		if why != "" {
			if reason != "invalid" && reason != "forbidden" {
				t.Fatalf("refused %q with reason %q", data, reason)
			}
			if _, ok := errorCodes[reason]; !ok {
				t.Fatalf("reason %q has no code", reason)
			}
			return
		}
		if protocol.ValidIdentity(dev) != "" {
			t.Fatalf("accepted device %q", dev)
		}
		if req.Op != protocol.MemoryList && req.Op != protocol.MemoryForget {
			t.Fatalf("accepted op %q", req.Op)
		}
		if _, err := protocol.DecodeMemoryRequest(mustJSON(req), 0); err != nil {
			t.Fatalf("accepted %+v, which the contract refuses: %v", req, err)
		}
	})
}
