package bridge

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chorus-robotics/chorus/runtime/logtest"

	"github.com/coder/websocket"

	"github.com/chorus-robotics/chorus/runtime/bus"
	"github.com/chorus-robotics/chorus/runtime/bus/bustest"
	"github.com/chorus-robotics/chorus/runtime/metrics"
	"github.com/chorus-robotics/chorus/runtime/protocol"
	"github.com/chorus-robotics/chorus/runtime/query"
	"github.com/chorus-robotics/chorus/runtime/room"
	"github.com/chorus-robotics/chorus/runtime/topic"
)

const (
	viewerToken = "viewer-token-0123456789"
	userToken   = "alice-token-0123456789"
	deviceToken = "device-token-0123456789"
)

type rig struct {
	t      *testing.T
	broker string
	ws     string // ws:// URL of the bridge
	m      *metrics.Metrics
	logs   *logtest.Buffer
	scheme topic.Scheme
	bridge *Bridge
}

// newRig runs a bridge for room lab (member bot) on the embedded broker
// with the ACL on.
func newRig(t *testing.T, tune func(*Config)) *rig {
	t.Helper()
	scheme := topic.New("").WithRoster("lab", []string{"bot"}).WithVoice("lab", "guest")
	br := bustest.StartEmbedded(t, bustest.Options{ACL: true, Scheme: scheme})
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	dev, err := bus.Dial(ctx, bus.Options{Broker: br.URL(), ClientID: "console-box", Username: "console-box"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { dev.Close() })
	r := &rig{t: t, broker: br.URL(), m: metrics.New(), logs: &logtest.Buffer{}, scheme: scheme}
	rm := room.New(dev, scheme, "lab", nil, nil)
	rm.SetMembers([]string{"bot"})
	cfg := Config{
		Room: rm,
		Dial: func(ctx context.Context, id string) (bus.Bus, error) {
			return bus.Dial(ctx, bus.Options{Broker: br.URL(), ClientID: id + "-bridge-" + protocol.NewID()[:6], Username: id})
		},
		Tokens: []Token{{Secret: viewerToken, Role: Viewer}, {Secret: userToken, Role: User, Name: "alice"},
			{Secret: deviceToken, Role: Device, Name: "web-bot"}},
		Log:     slog.New(slog.NewTextHandler(r.logs, nil)),
		Metrics: r.m,
	}
	if tune != nil {
		tune(&cfg)
	}
	b, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	r.bridge = b
	done := make(chan error, 1)
	go func() { done <- b.Run(ctx) }()
	srv := httptest.NewServer(b)
	t.Cleanup(func() { cancel(); <-done; srv.Close() })
	r.ws = "ws" + strings.TrimPrefix(srv.URL, "http")
	time.Sleep(100 * time.Millisecond) // the room subscriptions
	return r
}

// dial connects with token ("" for none).
func (r *rig) dial(token string) *websocket.Conn {
	r.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c, resp, err := websocket.Dial(ctx, r.ws+"?token="+token, nil)
	if err != nil {
		r.t.Fatalf("dial: %v (%v)", err, resp)
	}
	r.t.Cleanup(func() { c.CloseNow() })
	time.Sleep(50 * time.Millisecond) // the identity's connection
	return c
}

// next reads frames until one satisfies ok; each must be JSON.
func next(t *testing.T, c *websocket.Conn, what string, ok func(map[string]any) bool) map[string]any {
	t.Helper()
	var f map[string]any
	nextRaw(t, c, what, func(b []byte) bool {
		f = nil
		if err := json.Unmarshal(b, &f); err != nil {
			t.Fatalf("a frame that is not JSON: %q", b)
		}
		return ok(f)
	})
	return f
}

// nextRaw reads frames, as they come, until one satisfies ok.
func nextRaw(t *testing.T, c *websocket.Conn, what string, ok func([]byte) bool) []byte {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for {
		_, b, err := c.Read(ctx)
		if err != nil {
			t.Fatalf("waiting for %s: %v", what, err)
		}
		if ok(b) {
			return b
		}
	}
}

func send(t *testing.T, c *websocket.Conn, frame string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := c.Write(ctx, websocket.MessageText, []byte(frame)); err != nil {
		t.Fatal(err)
	}
}

func isError(contains string) func(map[string]any) bool {
	return func(f map[string]any) bool {
		e, ok := f["error"].(map[string]any)
		return ok && strings.Contains(fmt.Sprint(e["message"]), contains)
	}
}

// asker is a query client of member bot, as a companion asks its body.
func (r *rig) asker(ctx context.Context) *query.Client {
	r.t.Helper()
	b, err := bus.Dial(ctx, bus.Options{Broker: r.broker, ClientID: "bot-asker-" + protocol.NewID()[:6], Username: "bot"})
	if err != nil {
		r.t.Fatal(err)
	}
	qc := query.NewClient(b, r.scheme, "bot", query.ClientOptions{})
	r.t.Cleanup(func() { qc.Close(); b.Close() })
	return qc
}

// askerWithin is an asker whose context ends after d (or with the test).
func (r *rig) askerWithin(d time.Duration) (context.Context, *query.Client) {
	r.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	r.t.Cleanup(cancel)
	return ctx, r.asker(ctx)
}

// refusal is a frame a client sends and the error it is answered with:
// the counted reason and a part of the error's message.
type refusal struct {
	name   string
	c      *websocket.Conn
	frame  string
	reason string
	says   string
}

// refusesEach sends each case's frame and wants an error frame with the
// frame's id, saying what the case says, and one more count of its reason.
func (r *rig) refusesEach(t *testing.T, cases []refusal) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			before := r.dropped(tc.reason)
			send(t, tc.c, tc.frame)
			f := next(t, tc.c, tc.says, isError(tc.says))
			if r.dropped(tc.reason) != before+1 {
				t.Fatalf("%s not counted", tc.reason)
			}
			if _, ok := f["id"].(string); !ok {
				t.Fatalf("the refusal has id %v, want the frame's", f["id"])
			}
		})
	}
}

func (r *rig) publishAs(id, t string, v any) {
	r.t.Helper()
	ctx := context.Background()
	b, err := bus.Dial(ctx, bus.Options{Broker: r.broker, ClientID: id + "-pub-" + protocol.NewID()[:6], Username: id})
	if err != nil {
		r.t.Fatal(err)
	}
	defer b.Close()
	p, _ := json.Marshal(v)
	if err := b.Publish(ctx, t, p, false); err != nil {
		r.t.Fatal(err)
	}
}

func (r *rig) dropped(reason string) float64 {
	return metrics.Value(r.m.BridgeDropped.WithLabelValues(reason))
}

// droppedOnce waits up to 2 s for a drop the client may see before the
// bridge counts it (a close frame is on the wire before Read returns its
// error on the bridge's side) and says whether it was counted exactly once.
func (r *rig) droppedOnce(reason string) bool {
	for deadline := time.Now().Add(2 * time.Second); r.dropped(reason) < 1 && time.Now().Before(deadline); {
		time.Sleep(5 * time.Millisecond)
	}
	return r.dropped(reason) == 1
}

// A viewer receives the room's Messages as they are and grants as
// turn.grant notifications.
func TestViewerReceivesTheRoom(t *testing.T) {
	r := newRig(t, nil)
	c := r.dial(viewerToken)
	m := protocol.NewMessage(protocol.NewID(), "carol", nil, "Hello robots", "")
	r.publishAs("carol", r.scheme.Message("lab", "carol"), m)
	got := next(t, c, "the message", func(f map[string]any) bool { return f["method"] == protocol.MethodMessage })
	if p := got["params"].(map[string]any); p["message"] != "Hello robots" || p["id"] != m.Params.ID {
		t.Fatalf("message frame %v", got)
	}
	bot := "bot"
	g := protocol.TurnGrant{From: topic.DefaultFloorID, MessageID: m.Params.ID, Speaker: &bot, Reason: "selected", DecidedBy: protocol.DecidedAllVoted,
		Votes: []protocol.Vote{{From: "bot", State: protocol.Speak, Importance: 5, Closing: protocol.ClosingNone}}}
	r.publishAs(topic.DefaultFloorID, r.scheme.Turns("lab"), g)
	grant := next(t, c, "the grant", func(f map[string]any) bool { return f["method"] == "turn.grant" })
	if p := grant["params"].(map[string]any); p["speaker"] != "bot" || p["messageId"] != m.Params.ID {
		t.Fatalf("grant frame %v", grant)
	}
}

// What a person is saying as they say it: the floor's caption (a partial
// report under the room's person) reaches a viewer as heard.caption; a
// robot's own partial report is a heard.report, never a caption.
func TestViewerSeesCaptions(t *testing.T) {
	r := newRig(t, nil)
	c := r.dial(viewerToken)
	now := time.Now().UTC()
	own := protocol.Heard{From: "bot", ID: "h1", Device: "bot", Start: now, End: now, Text: "what is", Confidence: -1, Level: -120, Utterance: "u1", State: protocol.HeardPartial}
	r.publishAs("bot", r.scheme.Heard("lab", "bot"), own)
	rep := next(t, c, "the robot's report", func(f map[string]any) bool { return f["method"] == "heard.report" || f["method"] == "heard.caption" })
	if rep["method"] != "heard.report" {
		t.Fatalf("a robot's partial report came as %v", rep)
	}
	fwd := own
	fwd.From, fwd.ID, fwd.Text, fwd.Utterance = "guest", "c1", "what is the weather", "voice-bot-u1"
	r.publishAs(topic.DefaultFloorID, r.scheme.Heard("lab", "guest"), fwd)
	got := next(t, c, "the caption", func(f map[string]any) bool { return f["method"] == "heard.caption" })
	if p := got["params"].(map[string]any); p["text"] != "what is the weather" || p["from"] != "guest" || p["state"] != protocol.HeardPartial {
		t.Fatalf("caption frame %v", got)
	}
}

// A user's message.send reaches the room under its name, plain or in
// aikyo's {topic, body} envelope; one naming someone else is refused with
// an error frame, counted, and the connection stays up.
func TestUserSpeaksToTheRoom(t *testing.T) {
	r := newRig(t, nil)
	watch := r.dial(viewerToken)
	c := r.dial(userToken)
	m := protocol.NewMessage(protocol.NewID(), "alice", nil, "Hi from the browser", "")
	b, _ := json.Marshal(m)
	send(t, c, string(b))
	next(t, watch, "alice's message", func(f map[string]any) bool {
		p, _ := f["params"].(map[string]any)
		return f["method"] == protocol.MethodMessage && p["id"] == m.Params.ID
	})
	spoof := protocol.NewMessage(protocol.NewID(), "bob", nil, "I am bob", "")
	b, _ = json.Marshal(spoof)
	send(t, c, string(b))
	next(t, c, "the refusal", isError(`this client speaks as "alice"`))
	m2 := protocol.NewMessage(protocol.NewID(), "alice", nil, "In an envelope", "")
	b, _ = json.Marshal(map[string]any{"topic": "messages", "body": m2})
	send(t, c, string(b))
	next(t, watch, "the enveloped message", func(f map[string]any) bool {
		p, _ := f["params"].(map[string]any)
		return p["id"] == m2.Params.ID
	})
	if n := r.dropped("forbidden"); n != 1 {
		t.Fatalf("forbidden frames counted %v, want 1", n)
	}
}

// A device client gets the queries addressed to its device id and
// answers them; an answer to a query addressed elsewhere is refused.
// answer is what a query's asker got.
type answer struct {
	raw json.RawMessage
	err error
}

// askAsync asks device web-bot a query of type typ (5 s timeout) in a
// goroutine; the answer comes on the channel.
func askAsync(ctx context.Context, qc *query.Client, typ string, body any) <-chan answer {
	done := make(chan answer, 1)
	go func() {
		raw, err := qc.Ask(ctx, "web-bot", typ, body, 5*time.Second)
		done <- answer{raw, err}
	}()
	return done
}

func TestDeviceAnswersQueries(t *testing.T) {
	r := newRig(t, nil)
	c := r.dial(deviceToken)
	ctx := context.Background()
	qc := r.asker(ctx)
	done := askAsync(ctx, qc, "vision", nil)
	q := next(t, c, "the query", func(f map[string]any) bool { return f["method"] == protocol.MethodQuery })
	send(t, c, `{"jsonrpc":"2.0","id":"not-asked-0001","result":{"success":true,"body":{}}}`)
	next(t, c, "the refusal", isError("was not addressed to device web-bot"))
	send(t, c, fmt.Sprintf(`{"jsonrpc":"2.0","id":%q,"result":{"success":true,"body":{"image":"aGVsbG8="}}}`, q["id"]))
	a := <-done
	if a.err != nil || !strings.Contains(string(a.raw), "aGVsbG8=") {
		t.Fatalf("the asker got %s, %v", a.raw, a.err)
	}
	if n := r.dropped("not_addressed"); n != 1 {
		t.Fatalf("not_addressed counted %v, want 1", n)
	}
}

// Bad frames: each gets an error frame and a count, and the connection
// carries on.
func TestBadFramesAreRefused(t *testing.T) {
	r := newRig(t, nil)
	v := r.dial(viewerToken)
	d := r.dial(deviceToken)
	cases := []struct {
		c      *websocket.Conn
		frame  string
		reason string
		says   string
	}{
		{v, `not json at all`, "not_json", "not a JSON object"},
		{v, `{"jsonrpc":"2.0","method":"message.send","params":{}}`, "forbidden", "a viewer may not send message.send"},
		{d, `{"jsonrpc":"2.0","method":"state.send","params":{}}`, "forbidden", `method "state.send" is not one a client may send`},
		{d, `{"topic":"states","body":{}}`, "forbidden", `topic "states"`},
		{v, `{"jsonrpc":"2.0","id":"x1","result":{"success":true,"body":{}}}`, "forbidden", "may not send query results"},
		{d, `{"jsonrpc":"2.0","id":"x1"}`, "invalid", "needs a method"},
		{d, `{"jsonrpc":"2.0","id":"x1","result":{"body":{}}}`, "invalid", "result.success"},
	}
	for _, tc := range cases {
		before := r.dropped(tc.reason)
		send(t, tc.c, tc.frame)
		next(t, tc.c, tc.says, isError(tc.says))
		if r.dropped(tc.reason) != before+1 {
			t.Fatalf("%s: %s not counted", tc.frame, tc.reason)
		}
	}
	send(t, v, `still there?`) // the connection stayed up: it still answers
	next(t, v, "another answer", isError("not a JSON object"))
}

// A frame over the cap closes that connection (1009) and is counted; the
// others carry on.
func TestOversizeFrame(t *testing.T) {
	r := newRig(t, func(c *Config) { c.MaxFrame = 4096 })
	big := r.dial(userToken)
	other := r.dial(viewerToken)
	send(t, big, `{"pad":"`+strings.Repeat("x", 8000)+`"}`)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	var err error
	for err == nil { // the hello frame and the snapshot come first
		_, _, err = big.Read(ctx)
	}
	if websocket.CloseStatus(err) != websocket.StatusMessageTooBig {
		t.Fatalf("the oversize client: %v, want close 1009", err)
	}
	if !r.droppedOnce("oversize") {
		t.Fatalf("oversize counted %v times, want once", r.dropped("oversize"))
	}
	send(t, other, `{}`)
	next(t, other, "an answer to another client", isError("needs a method"))
}

// No token, a wrong token, and a client over the cap are refused before
// the upgrade, with a count; no token appears in a log line.
func TestTokensAndTheClientCap(t *testing.T) {
	r := newRig(t, func(c *Config) { c.MaxClients = 2 })
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for _, tok := range []string{"", "wrong-token-0123456789"} {
		_, resp, err := websocket.Dial(ctx, r.ws+"?token="+tok, nil)
		if err == nil || resp == nil || resp.StatusCode != http.StatusUnauthorized {
			t.Fatalf("token %q: %v %v, want 401", tok, err, resp)
		}
	}
	r.dial(viewerToken)
	r.dial(userToken)
	_, resp, err := websocket.Dial(ctx, r.ws+"?token="+viewerToken, nil)
	if err == nil || resp == nil || resp.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("a third client: %v %v, want 503", err, resp)
	}
	if r.dropped("no_token") != 1 || r.dropped("bad_token") != 1 || r.dropped("too_many") != 1 {
		t.Fatalf("refusals counted: no_token %v, bad_token %v, too_many %v", r.dropped("no_token"), r.dropped("bad_token"), r.dropped("too_many"))
	}
	for _, tok := range []string{viewerToken, userToken, deviceToken, "wrong-token-0123456789"} {
		if strings.Contains(r.logs.String(), tok) {
			t.Fatalf("a token in the log:\n%s", r.logs.String())
		}
	}
}

// A client that never reads is dropped once its queue is full; another
// client gets every message, and the room's publishes never wait.
func TestSlowClientIsDropped(t *testing.T) {
	const total = 1500 // 13 MB: more than the kernel's socket buffers hold
	r := newRig(t, func(c *Config) { c.WriteTimeout = 300 * time.Millisecond; c.QueueBytes = 1 << 20 })
	// A client that never reads, with a small receive buffer so that its
	// socket fills at once.
	ctx0, cancel0 := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel0()
	dialSmall(t, ctx0, r.ws+"?token="+viewerToken)
	fast := r.dial(viewerToken)
	got := make(chan int, 1)
	go func() {
		n := 0
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		for n < total {
			if _, _, err := fast.Read(ctx); err != nil {
				break
			}
			n++
		}
		got <- n
	}()
	ctx := context.Background()
	b, err := bus.Dial(ctx, bus.Options{Broker: r.broker, ClientID: "carol-flood", Username: "carol"})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	pad := strings.Repeat("words ", 1500) // 9 KB a message: the slow socket fills fast
	start := time.Now()
	for i := range total {
		p, _ := json.Marshal(protocol.NewMessage(protocol.NewID(), "carol", nil, fmt.Sprintf("%d %s", i, pad), ""))
		if err := b.Publish(ctx, r.scheme.Message("lab", "carol"), p, false); err != nil {
			t.Fatal(err)
		}
		if i%20 == 19 {
			time.Sleep(5 * time.Millisecond) // a busy room, not a flood: the reader keeps up
		}
	}
	took := time.Since(start)
	if n := <-got; n != total {
		t.Fatalf("the reading client got %d of %d frames", n, total)
	}
	if n := r.dropped("slow"); n != 1 {
		t.Fatalf("slow drops counted %v, want 1: the client that never reads, once", n)
	}
	t.Logf("%d messages published in %v with a client that never reads", total, took)
}

// One client's flood of frames is rate limited with error frames and
// counts; the connection stays up and later frames go through.
func TestFloodFromOneClient(t *testing.T) {
	r := newRig(t, func(c *Config) { c.RatePerSec = 10 })
	c := r.dial(userToken)
	watch := r.dial(viewerToken)
	for i := range 100 {
		m := protocol.NewMessage(fmt.Sprintf("flood%04d", i), "alice", nil, "flood", "")
		b, _ := json.Marshal(m)
		send(t, c, string(b))
	}
	next(t, c, "a rate-limit error", isError("frames a second"))
	for deadline := time.Now().Add(5 * time.Second); r.dropped("rate_limited") < 70; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("rate_limited counted %v, want most of 100 (a burst of 20 passes)", r.dropped("rate_limited"))
		}
	}
	time.Sleep(time.Second)
	m := protocol.NewMessage(protocol.NewID(), "alice", nil, "after the flood", "")
	b, _ := json.Marshal(m)
	send(t, c, string(b))
	next(t, watch, "the message after the flood", func(f map[string]any) bool {
		p, _ := f["params"].(map[string]any)
		return p["id"] == m.Params.ID
	})
}

// camera.get: a client whose token allows it gets the device's frame
// through a real vision query (to this client only); one without is
// refused.
func TestCameraGet(t *testing.T) {
	var scheme topic.Scheme
	r := newRig(t, func(c *Config) {
		scheme = c.Room.Scheme
		ctx := context.Background()
		c.Tokens = append(c.Tokens, Token{Secret: "camera-token-0123456789", Role: User, Name: "carol", Camera: true})
		asker, err := c.Dial(ctx, "bot")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { asker.Close() })
		qc := query.NewClient(asker, scheme, "bot", query.ClientOptions{})
		t.Cleanup(qc.Close)
		c.Look = func(ctx context.Context, device string) (json.RawMessage, error) {
			return qc.Ask(ctx, device, "vision", nil, 5*time.Second)
		}
		cam, err := c.Dial(ctx, "cam")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cam.Close() })
		srv := &query.Server{Bus: cam, Scheme: scheme, Device: "cam"}
		srv.Handle("vision", func(context.Context, string, json.RawMessage) (any, error) {
			return map[string]string{"image": "aGVsbG8=", "mime": "image/jpeg"}, nil
		})
		sctx, cancel := context.WithCancel(ctx)
		served := make(chan struct{})
		go func() { defer close(served); srv.Serve(sctx) }()
		t.Cleanup(func() { cancel(); <-served })
	})
	time.Sleep(200 * time.Millisecond)
	c := r.dial("camera-token-0123456789")
	send(t, c, `{"jsonrpc":"2.0","method":"camera.get","id":"look-1","params":{"device":"cam"}}`)
	got := next(t, c, "the frame", func(f map[string]any) bool { return f["id"] == "look-1" })
	res, _ := got["result"].(map[string]any)
	frame, _ := res["frame"].(map[string]any)
	if frame["image"] != "aGVsbG8=" {
		t.Fatalf("camera.get answered %v", got)
	}
	v := r.dial(userToken)
	send(t, v, `{"jsonrpc":"2.0","method":"camera.get","id":"look-2","params":{"device":"cam"}}`)
	next(t, v, "the refusal", isError("may not ask for camera frames"))
}

// A client that answers no ping (it never reads, so its pongs are never
// sent) is dropped after a ping period and a write timeout; one that
// reads stays.
func TestPingDropsADeadClient(t *testing.T) {
	r := newRig(t, func(c *Config) { c.PingEvery = 200 * time.Millisecond; c.WriteTimeout = 200 * time.Millisecond })
	r.dial(viewerToken) // never reads
	alive := r.dial(viewerToken)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { // reading answers the pings
		for {
			if _, _, err := alive.Read(ctx); err != nil {
				return
			}
		}
	}()
	deadline := time.Now().Add(5 * time.Second)
	for r.dropped("no_pong") < 1 {
		if time.Now().After(deadline) {
			t.Fatal("the client that answers no ping was not dropped")
		}
		time.Sleep(50 * time.Millisecond)
	}
	time.Sleep(600 * time.Millisecond)
	if n := r.dropped("no_pong"); n != 1 {
		t.Fatalf("%v clients dropped for no pong, want 1 (the reading one stays)", n)
	}
}

// Clients that come and go leave nothing behind: no goroutine, no
// identity connection.
func TestClientsLeaveNothingBehind(t *testing.T) {
	r := newRig(t, nil)
	settle := func() int {
		time.Sleep(300 * time.Millisecond)
		return runtime.NumGoroutine()
	}
	before := settle()
	for range 30 {
		for _, tok := range []string{userToken, deviceToken, viewerToken} {
			c := r.dial(tok)
			c.Close(websocket.StatusNormalClosure, "bye")
		}
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		after := settle()
		if after <= before+3 {
			t.Logf("goroutines %d before, %d after 90 clients came and went", before, after)
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("goroutines %d before, %d after 90 clients came and went", before, after)
		}
	}
	if n := metrics.Value(r.m.BridgeClients); n != 0 {
		t.Fatalf("chorus_bridge_clients %v with nobody connected", n)
	}
}

// A body keeps its place through a burst of room traffic: chatter that
// does not fit its queue is dropped and counted, its queries still come.
func TestDeviceKeepsItsQueriesThroughABurst(t *testing.T) {
	// A body slower than the chatter, for seconds: its writes wait, but
	// not past the write timeout (a body that stops reading altogether is
	// dropped like any client).
	r := newRig(t, func(c *Config) { c.Queue = 64; c.WriteTimeout = 30 * time.Second })
	ctx, cancel := context.WithTimeout(context.Background(), 40*time.Second)
	defer cancel()
	d := r.dial(deviceToken)
	var frames, queries atomic.Int64
	var readErr atomic.Value
	go func() { // the body: answers every query, slowly enough to fall behind the chatter
		for {
			_, b, err := d.Read(ctx)
			if err != nil {
				readErr.Store(err.Error())
				return
			}
			frames.Add(1)
			if bytes.Contains(b, []byte(`"query.send"`)) {
				queries.Add(1)
			}
			var q protocol.Query
			if json.Unmarshal(b, &q) == nil && q.Method == protocol.MethodQuery {
				d.Write(ctx, websocket.MessageText, []byte(fmt.Sprintf(`{"jsonrpc":"2.0","id":%q,"result":{"success":true,"body":{"ok":true}}}`, q.ID)))
			}
			time.Sleep(time.Millisecond)
		}
	}()
	b, err := bus.Dial(ctx, bus.Options{Broker: r.broker, ClientID: "carol-burst", Username: "carol"})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	pad := strings.Repeat("chatter ", 500) // 4 KB a message: 8 MB in all, more than the sockets hold
	for i := range 2000 {
		p, _ := json.Marshal(protocol.NewMessage(protocol.NewID(), "carol", nil, fmt.Sprintf("burst %d %s", i, pad), ""))
		if err := b.Publish(ctx, r.scheme.Message("lab", "carol"), p, false); err != nil {
			t.Fatal(err)
		}
	}
	qc := r.asker(ctx)
	if _, err := qc.Ask(ctx, "web-bot", "speak", map[string]string{"message": "still there?"}, 30*time.Second); err != nil {
		t.Fatalf("the body's query after the burst: %v (slow %v, frame_dropped %v, not_addressed %v, invalid %v; the body read %d frames, %d queries, then %v)", err,
			r.dropped("slow"), r.dropped("frame_dropped"), r.dropped("not_addressed"), r.dropped("invalid"), frames.Load(), queries.Load(), readErr.Load())
	}
	if r.dropped("slow") != 0 || r.dropped("frame_dropped") < 1 {
		t.Fatalf("slow drops %v (want 0), chatter frames dropped %v (want some)", r.dropped("slow"), r.dropped("frame_dropped"))
	}
}

// What the bridge publishes is the checked value, encoded anew: a
// duplicate key does not reach the bus, and invalid UTF-8 is refused.
func TestPublishesTheCheckedValue(t *testing.T) {
	r := newRig(t, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	watch, err := bus.Dial(ctx, bus.Options{Broker: r.broker, ClientID: "raw-watch", Username: "bot"})
	if err != nil {
		t.Fatal(err)
	}
	defer watch.Close()
	raw := make(chan string, 4)
	watch.Subscribe(ctx, r.scheme.Message("lab", "alice"), func(_ string, p []byte) { raw <- string(p) })
	c := r.dial(userToken)
	send(t, c, `{"jsonrpc":"2.0","method":"message.send","params":{"id":"dup1","from":"bob","from":"alice","message":"hi"}}`)
	select {
	case p := <-raw:
		if strings.Count(p, `"from"`) != 1 || strings.Contains(p, "bob") {
			t.Fatalf("the bus got %s", p)
		}
	case <-ctx.Done():
		t.Fatal("nothing published")
	}
	if err := c.Write(ctx, websocket.MessageText, []byte("{\"jsonrpc\":\"2.0\",\"method\":\"message.send\",\"params\":{\"id\":\"u1\",\"from\":\"alice\",\"message\":\"\xff\xfe\"}}")); err != nil {
		t.Fatal(err)
	}
	next(t, c, "the refusal", isError("not valid UTF-8"))
	deep := strings.Repeat(`{"a":`, 40) + "1" + strings.Repeat("}", 40)
	send(t, c, `{"jsonrpc":"2.0","method":"message.send","id":7,"params":{"id":"d1","from":"alice","message":"x","metadata":`+deep+`}}`)
	f := next(t, c, "the refusal", isError("nests"))
	if f["id"] != float64(7) {
		t.Fatalf("the answer's id %v, want the frame's 7", f["id"])
	}
}

// dialSmall connects with a 4 KB receive buffer.
func dialSmall(t *testing.T, ctx context.Context, url string) *websocket.Conn {
	t.Helper()
	small := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := (&net.Dialer{}).DialContext(ctx, network, addr)
		if tc, ok := c.(*net.TCPConn); ok {
			tc.SetReadBuffer(4096)
		}
		return c, err
	}}}
	c, _, err := websocket.Dial(ctx, url, &websocket.DialOptions{HTTPClient: small})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.CloseNow() })
	return c
}

// A body answers vision queries with camera frames: a device's frame may
// be as large as a query result (MaxDeviceFrame), a viewer's or a user's
// stays small (MaxFrame), and one over its role's cap closes only that
// connection.
func TestFrameCapByRole(t *testing.T) {
	r := newRig(t, func(c *Config) { c.MaxFrame = 16 << 10; c.MaxDeviceFrame = 2 << 20 })
	d := r.dial(deviceToken)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	qc := r.asker(ctx)
	picture := strings.Repeat("A", 1<<20) // a 768 KB picture in base64, as a 720p webcam frame
	done := make(chan error, 1)
	go func() {
		raw, err := qc.Ask(ctx, "web-bot", "vision", nil, 15*time.Second)
		if err == nil && !strings.Contains(string(raw), picture) {
			err = fmt.Errorf("the result lost its picture: %d bytes", len(raw))
		}
		done <- err
	}()
	q := next(t, d, "the query", func(f map[string]any) bool { return f["method"] == protocol.MethodQuery })
	send(t, d, fmt.Sprintf(`{"jsonrpc":"2.0","id":%q,"result":{"success":true,"body":{"image":%q}}}`, q["id"], picture))
	if err := <-done; err != nil {
		t.Fatalf("a device's 1 MB answer: %v", err)
	}
	u := r.dial(userToken)
	send(t, u, `{"pad":"`+strings.Repeat("x", 20<<10)+`"}`)
	var err error
	for err == nil {
		_, _, err = u.Read(ctx)
	}
	if websocket.CloseStatus(err) != websocket.StatusMessageTooBig {
		t.Fatalf("a user's 20 KB frame: %v, want close 1009", err)
	}
	send(t, d, `{"pad":"`+strings.Repeat("x", 3<<20)+`"}`)
	for err = nil; err == nil; {
		_, _, err = d.Read(ctx)
	}
	if websocket.CloseStatus(err) != websocket.StatusMessageTooBig {
		t.Fatalf("a device's 3 MB frame: %v, want close 1009", err)
	}
}

// A body's connection is its presence: online while a client of it is
// connected, and the moment the last one goes the bridge says so
// (OnDeviceGone), so queries waiting on it fail at once.
func TestDevicePresenceIsItsConnection(t *testing.T) {
	gone := make(chan string, 4)
	r := newRig(t, func(c *Config) { c.OnDeviceGone = func(d string) { gone <- d } })
	b := r.bridge
	if !b.Serves("web-bot") || b.Serves("alice") || b.Serves("kiosk") {
		t.Fatal("Serves: web-bot is the only device token")
	}
	if b.DeviceOnline("web-bot") {
		t.Fatal("online before any client connected")
	}
	d1 := r.dial(deviceToken)
	d2 := r.dial(deviceToken)
	if !b.DeviceOnline("web-bot") {
		t.Fatal("offline with two clients connected")
	}
	d1.Close(websocket.StatusNormalClosure, "")
	time.Sleep(200 * time.Millisecond)
	if !b.DeviceOnline("web-bot") || len(gone) != 0 {
		t.Fatal("offline with one client still connected")
	}
	d2.CloseNow() // killed: no close frame
	select {
	case d := <-gone:
		if d != "web-bot" || b.DeviceOnline("web-bot") {
			t.Fatalf("gone %q, online %v", d, b.DeviceOnline("web-bot"))
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the last client went and nobody was told")
	}
	r.dial(deviceToken)
	if !b.DeviceOnline("web-bot") {
		t.Fatal("not back online when the client reconnected")
	}
}

// aikyo's clients dial ws://host:port: a WebSocket upgrade at "/" is the
// bridge, a plain GET of "/" (and anything under it) the page.
func TestBridgeOnRoot(t *testing.T) {
	r := newRig(t, nil)
	page := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "the console") })
	srv := httptest.NewServer(r.bridge.OrPage(page))
	defer srv.Close()
	for _, path := range []string{"/", "/app.js"} {
		resp, err := http.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if string(b) != "the console" {
			t.Fatalf("GET %s: %q", path, b)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(srv.URL, "http")+"?token="+deviceToken, nil)
	if err != nil {
		t.Fatalf("a WebSocket at /: %v", err)
	}
	defer c.CloseNow()
	hello := next(t, c, "the hello", func(f map[string]any) bool { return f["method"] == "bridge.hello" })
	if p := hello["params"].(map[string]any); p["role"] != "device" || p["name"] != "web-bot" {
		t.Fatalf("hello %v", hello)
	}
	if _, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(srv.URL, "http")+"/?token=wrong-token-000000000", nil); err == nil {
		t.Fatal("a wrong token at / was let in")
	}
}

// What aikyo's zod schemas want: a Message without "to" goes out with
// "to":[] (MessageSchema refuses null), and a realtime broadcast, signed
// by the floor on the bus, names its speaker as from (the floor's
// signature kept in metadata.floor); a floor Message naming no member
// stays the floor's.
func TestFramesAsAikyoClientsWantThem(t *testing.T) {
	r := newRig(t, nil)
	c := r.dial(viewerToken)
	raw := func(id string) string {
		t.Helper()
		return string(nextRaw(t, c, id, func(b []byte) bool { return bytes.Contains(b, []byte(`"id":"`+id+`"`)) }))
	}
	r.publishAs("carol", r.scheme.Message("lab", "carol"), json.RawMessage(`{"jsonrpc":"2.0","method":"message.send","params":{"id":"no-to-1","from":"carol","message":"hi"}}`))
	if f := raw("no-to-1"); !strings.Contains(f, `"to":[]`) {
		t.Fatalf("a Message without to: %s", f)
	}
	floor := topic.DefaultFloorID
	m := protocol.NewMessage("rt-1", floor, nil, "I think it will rain.", "")
	m.Params.Metadata[protocol.MetaSpeaker] = "bot"
	m.Params.Metadata[protocol.MetaIdx] = 3
	r.publishAs(floor, r.scheme.Message("lab", floor), m)
	var got protocol.Message
	json.Unmarshal([]byte(raw("rt-1")), &got)
	if got.Params.From != "bot" || got.Params.Metadata[MetaFloor] != floor || got.Params.Metadata[protocol.MetaSpeaker] != "bot" || got.Params.To == nil {
		t.Fatalf("a realtime broadcast: %+v", got.Params)
	}
	m = protocol.NewMessage("rt-2", floor, nil, "not a member's words", "")
	m.Params.Metadata[protocol.MetaSpeaker] = "mallory"
	r.publishAs(floor, r.scheme.Message("lab", floor), m)
	json.Unmarshal([]byte(raw("rt-2")), &got)
	if got.Params.From != floor {
		t.Fatalf("a broadcast naming a non-member as speaker went out from %q", got.Params.From)
	}
}

// camera.get for a body that is not there (a bridge body not connected, a
// device whose presence is offline) is answered at once, and the client's
// next frame is not held behind a LookTimeout wait. A device never seen in
// a presence (a body without a companion) is still asked.
func TestCameraGetForAnAbsentDevice(t *testing.T) {
	looked := make(chan string, 4)
	r := newRig(t, func(c *Config) {
		c.Tokens = append(c.Tokens, Token{Secret: "camera-token-0123456789", Role: User, Name: "alice", Camera: true})
		c.Look = func(ctx context.Context, device string) (json.RawMessage, error) {
			looked <- device
			if device == "stranger" {
				return nil, errors.New("no answer")
			}
			<-ctx.Done() // as a vision query to nobody: until LookTimeout
			return nil, ctx.Err()
		}
		c.Online = func(device string) (bool, bool) {
			switch device {
			case "cam":
				return true, true
			case "ghost":
				return false, true
			}
			return false, false
		}
	})
	watch := r.dial(viewerToken)
	c := r.dial("camera-token-0123456789")
	for _, tc := range []struct{ name, device string }{
		{"a bridge body with no client", "web-bot"},
		{"a device whose presence is offline", "ghost"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			start := time.Now()
			send(t, c, `{"jsonrpc":"2.0","method":"camera.get","id":"look-1","params":{"device":"`+tc.device+`"}}`)
			m := protocol.NewMessage(protocol.NewID(), "alice", nil, "right after", "")
			b, _ := json.Marshal(m)
			send(t, c, string(b))
			got := next(t, c, "the answer", func(f map[string]any) bool { return f["id"] == "look-1" })
			if !isError("device " + tc.device + " is offline")(got) {
				t.Fatalf("camera.get answered %v", got)
			}
			next(t, watch, "the message sent after it", func(f map[string]any) bool {
				p, _ := f["params"].(map[string]any)
				return p["id"] == m.Params.ID
			})
			if d := time.Since(start); d > time.Second {
				t.Fatalf("answered and published after %v, want under 1 s", d)
			}
		})
	}
	select {
	case d := <-looked:
		t.Fatalf("asked the absent device %s for a frame", d)
	default:
	}
	send(t, c, `{"jsonrpc":"2.0","method":"camera.get","id":"look-2","params":{"device":"stranger"}}`)
	next(t, c, "the stranger's answer", isError("camera of stranger: no answer"))
	if d := <-looked; d != "stranger" {
		t.Fatalf("asked %s", d)
	}
}

// A broker that refuses the login of a token's identity (a users file
// without it, no mqtt_password_env) is named in the upgrade's answer, not
// told as an unreachable broker.
func TestRefusedBrokerLogin(t *testing.T) {
	strict := bustest.StartEmbedded(t, bustest.Options{Users: map[string]string{"someone": "pw-0123456789"}})
	r := newRig(t, func(c *Config) {
		c.Dial = func(ctx context.Context, id string) (bus.Bus, error) {
			b, err := bus.Dial(ctx, bus.Options{Broker: strict.URL(), ClientID: id + "-bridge", Username: id})
			if err != nil {
				return nil, fmt.Errorf("bridge: connect as %s: %w", id, err)
			}
			return b, nil
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c, resp, err := websocket.Dial(ctx, r.ws+"?token="+userToken, nil)
	if err == nil {
		c.CloseNow()
		t.Fatal("upgraded with a login the broker refused")
	}
	if resp == nil {
		t.Fatalf("no HTTP answer: %v", err)
	}
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusServiceUnavailable || !strings.Contains(string(body), `the broker refused this token's identity "alice"`) {
		t.Fatalf("answered %d %q, want 503 naming alice", resp.StatusCode, body)
	}
}
