package system

import (
	"bufio"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/chorus-robotics/chorus/runtime/brain/llm/llmtest"
	"github.com/chorus-robotics/chorus/runtime/bus/bustest"
	"github.com/chorus-robotics/chorus/runtime/logtest"
	"github.com/chorus-robotics/chorus/runtime/protocol"
)

const bridgeDeviceYAML = `version: 1
device: {id: box}
room: {name: lab, members: [bot], floor: true, vote_timeout: 3s}
mqtt: {broker: "tcp://127.0.0.1:%[1]d", embedded: {enabled: true, listen: "127.0.0.1:%[1]d", allow_anonymous: true}}
companion:
  id: bot
  name: Bot
  sample_lines: ["I am a robot in a browser."]
  language: en
  body: web-bot
brain: {provider: openai, base_url: "%[4]s", model: gemma3-4b, api_key_env: CHORUS_TEST_API_KEY, timeout: 10s}
drivers: {camera: {kind: none}, audio: {kind: null}, tts: {kind: tone}}
http:
  listen: "127.0.0.1:%[2]d"
  websocket: {enabled: true, tokens_file: %[3]s}
`

const (
	e2eDeviceToken = "web-bot-token-5f1c9a0e"
	e2eUserToken   = "alice-token-77d02b31c4"
	e2eAPIKey      = "sk-test-0f9e8d7c6b5a4f3e"
)

// nodeClient is the aikyo client example (tests/node) running under node,
// with the lines it printed.
type nodeClient struct {
	mu    sync.Mutex
	lines []map[string]any
	cmd   *exec.Cmd
	done  chan struct{}
}

// kill ends the client at once, as a crash or a pulled cable does: no
// close frame.
func (n *nodeClient) kill() {
	n.cmd.Process.Kill()
	<-n.done
}

// opened waits up to 5 s for the client's connection to open.
func (n *nodeClient) opened() bool {
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		n.mu.Lock()
		for _, l := range n.lines {
			if l["event"] == "open" {
				n.mu.Unlock()
				return true
			}
		}
		n.mu.Unlock()
	}
	return false
}

func (n *nodeClient) queries(typ string) []map[string]any {
	n.mu.Lock()
	defer n.mu.Unlock()
	var out []map[string]any
	for _, l := range n.lines {
		if l["event"] == "query" && l["type"] == typ {
			out = append(out, l)
		}
	}
	return out
}

// await returns the queries of typ the client printed, waiting up to 5 s
// for a first one (its line comes a moment after it answered).
func (n *nodeClient) await(typ string) []map[string]any {
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if qs := n.queries(typ); len(qs) > 0 {
			return qs
		}
	}
	return nil
}

// startNode runs tests/node/aikyo-client.mjs against url, its camera
// seeing the JPEG at frame; without node or its ws package the test is
// skipped, unless CHORUS_REQUIRE_NODE=1 (CI).
func startNode(t *testing.T, url, frame string) *nodeClient {
	t.Helper()
	return runNode(t, "aikyo-client.mjs", "CHORUS_BRIDGE_URL="+url, "CHORUS_FRAME="+frame)
}

// needNode returns the folder of the Node clients; without node or its ws
// package the test is skipped, unless CHORUS_REQUIRE_NODE=1 (CI).
func needNode(t *testing.T) string {
	t.Helper()
	dir, _ := filepath.Abs("../../tests/node")
	_, errNode := exec.LookPath("node")
	_, errWS := os.Stat(filepath.Join(dir, "node_modules", "ws"))
	if errNode != nil || errWS != nil {
		if os.Getenv("CHORUS_REQUIRE_NODE") == "1" {
			t.Fatalf("node or its ws package is missing (npm ci --prefix tests/node): %v %v", errNode, errWS)
		}
		t.Skip("node or tests/node/node_modules/ws is missing (npm ci --prefix tests/node)")
	}
	return dir
}

// runNode runs the Node client tests/node/<script> with env added to the
// environment, collecting the JSON lines it prints.
func runNode(t *testing.T, script string, env ...string) *nodeClient {
	t.Helper()
	dir := needNode(t)
	cmd := exec.Command("node", filepath.Join(dir, script))
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr logtest.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	n := &nodeClient{cmd: cmd, done: make(chan struct{})}
	scanned := make(chan struct{})
	go func() {
		defer close(scanned)
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			var l map[string]any
			if json.Unmarshal(sc.Bytes(), &l) == nil {
				n.mu.Lock()
				n.lines = append(n.lines, l)
				n.mu.Unlock()
			}
		}
	}()
	go func() { <-scanned; cmd.Wait(); close(n.done) }()
	t.Cleanup(func() {
		cmd.Process.Kill()
		<-n.done
		if t.Failed() {
			t.Logf("--- node stderr:\n%s", stderr.String())
		}
	})
	return n
}

// realFrame makes a 1280x720 JPEG that compresses as a photo does
// (ffmpeg's testsrc2 under grain), the size a webcam hands a browser or
// Node body: several hundred KB, far over a Message's 64 KiB.
func realFrame(t *testing.T) string {
	t.Helper()
	if _, err := exec.LookPath("ffmpeg"); err != nil {
		if os.Getenv("CHORUS_REQUIRE_NODE") == "1" {
			t.Fatal("ffmpeg is missing: it makes the test's camera frame")
		}
		t.Skip("ffmpeg is missing: it makes the test's camera frame")
	}
	out := filepath.Join(t.TempDir(), "frame-720p.jpg")
	cmd := exec.Command("ffmpeg", "-hide_banner", "-loglevel", "error", "-y", "-f", "lavfi", "-i", "testsrc2=size=1280x720:rate=1",
		"-vf", "noise=alls=24:allf=t", "-frames:v", "1", "-q:v", "4", out)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("ffmpeg: %v\n%s", err, b)
	}
	if fi, err := os.Stat(out); err != nil || fi.Size() < 200<<10 {
		t.Fatalf("the frame is not of a real camera's size: %v %v", fi, err)
	}
	return out
}

// bridgeUser is a user client of the bridge: it says things and reads
// the room's frames.
type bridgeUser struct {
	t    *testing.T
	c    *websocket.Conn
	ctx  context.Context
	seen []string
}

// dialUser connects alice, the user of e2eUserToken, to the bridge at base
// (host:port) for at most d; the test's end closes the connection.
func dialUser(t *testing.T, base string, d time.Duration) *bridgeUser {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	conn, _, err := websocket.Dial(ctx, "ws://"+base+"/ws", &websocket.DialOptions{HTTPHeader: http.Header{"Authorization": {"Bearer " + e2eUserToken}}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.CloseNow() })
	return &bridgeUser{t: t, c: conn, ctx: ctx}
}

// startBridgeBox runs chorusd with companion bot, whose brain is model,
// and its bridge for web-bot's body (e2eDeviceToken) and alice
// (e2eUserToken); it returns once /healthz answers at base (host:port).
func startBridgeBox(t *testing.T, chorusd string, model *llmtest.Server) (p *proc, base string) {
	t.Helper()
	dir := t.TempDir()
	tokens := filepath.Join(dir, "tokens.yaml")
	os.WriteFile(tokens, []byte(fmt.Sprintf("- {token: %s, role: device, name: web-bot}\n- {token: %s, role: user, name: alice}\n", e2eDeviceToken, e2eUserToken)), 0o600)
	mqttPort, httpPort := bustest.FreePort(t), bustest.FreePort(t)
	cfg := filepath.Join(dir, "box.yaml")
	os.WriteFile(cfg, []byte(fmt.Sprintf(bridgeDeviceYAML, mqttPort, httpPort, tokens, model.BaseURL())), 0o644)
	p = startEnv(t, chorusd, cfg, "box", "CHORUS_TEST_API_KEY="+e2eAPIKey)
	base = fmt.Sprintf("127.0.0.1:%d", httpPort)
	waitHealthy(t, p, base)
	return p, base
}

func (u *bridgeUser) say(text string) string {
	u.t.Helper()
	m := protocol.NewMessage(protocol.NewID(), "alice", []string{"bot"}, text, "")
	b, _ := json.Marshal(m)
	if err := u.c.Write(u.ctx, websocket.MessageText, b); err != nil {
		u.t.Fatal(err)
	}
	return m.Params.ID
}

// until reads frames until ok says so, for at most d.
func (u *bridgeUser) until(d time.Duration, what string, ok func(f []byte) bool) []byte {
	u.t.Helper()
	ctx, cancel := context.WithTimeout(u.ctx, d)
	defer cancel()
	for {
		_, b, err := u.c.Read(ctx)
		if err != nil {
			u.t.Fatalf("%s: %v", what, err)
		}
		u.seen = append(u.seen, string(b))
		if ok(b) {
			return b
		}
	}
}

// botSaid reads until bot's next Message and returns its words.
func (u *bridgeUser) botSaid(d time.Duration) string {
	u.t.Helper()
	var m protocol.Message
	u.until(d, "bot's answer", func(b []byte) bool {
		return json.Unmarshal(b, &m) == nil && m.Method == protocol.MethodMessage && m.Params.From == "bot"
	})
	return m.Params.Message
}

// A body written in another language: aikyo's client example, as a Node
// ws client, registers through chorusd's WebSocket bridge as device
// web-bot, with only its URL changed (ws://host:port/?token=…, the root
// path as aikyo's clients dial it); companion bot, whose body that is,
// looks through it — a real-size 720p camera frame, sent without a media
// type as the seed's client sends it, shown to a model server as strict
// as the real API — and speaks through it. Then the body is killed
// mid-conversation: bot's queries to it fail at once and bot votes
// listen, so the room decides within vote_timeout; the body comes back
// and bot speaks through it again. No token and no API key appears in the
// log or in a frame.
func TestBridgeNodeBody(t *testing.T) {
	chorusd, _ := buildBinaries(t)
	frame := realFrame(t)
	model := llmtest.New()
	defer model.Close()
	model.Look, model.APIKey, model.ClosingAfter = true, e2eAPIKey, 10
	p, base := startBridgeBox(t, chorusd, model)

	bodyURL := "ws://" + base + "/?token=" + e2eDeviceToken // the one line a user changes in aikyo's client
	node := startNode(t, bodyURL, frame)
	if !node.opened() {
		t.Fatal("the Node body did not connect at ws://host:port/")
	}
	user := dialUser(t, base, 90*time.Second)
	user.say("Hello bot, are you there?")
	said := user.botSaid(30 * time.Second)
	states := 0 // aikyo's Japanese State schema requires an id: Chorus's States carry one
	for _, f := range user.seen {
		var st protocol.State
		if json.Unmarshal([]byte(f), &st) == nil && st.Method == protocol.MethodState {
			if st.Params.ID == "" {
				t.Fatalf("a State without an id: %s", f)
			}
			states++
		}
	}
	if states == 0 {
		t.Fatal("no State came through the bridge")
	}
	spoke := node.await("speak")
	if len(spoke) == 0 || !strings.Contains(said, fmt.Sprint(spoke[0]["message"])) {
		t.Fatalf("bot said %q; the Node body was asked to speak %v", said, spoke)
	}
	t.Logf("bot said %q through the Node body (%d speak queries)", said, len(spoke))

	// bot looked before it answered: its model was shown the Node body's
	// 720p picture, typed from its bytes (the body sent none).
	want, _ := os.ReadFile(frame)
	images := model.Images()
	if len(node.await("vision")) == 0 || len(images) == 0 || images[0] != "data:image/jpeg;base64,"+base64.StdEncoding.EncodeToString(want) {
		t.Fatalf("vision queries at the Node body %v; pictures the model saw: %d (%.40q)", node.queries("vision"), len(images), images)
	}
	if pr := model.Problems(); len(pr) > 0 {
		t.Fatalf("the model server saw bad requests: %v", pr)
	}
	t.Logf("bot looked through the Node body (%d vision queries, a %d KB frame shown to the model)", len(node.queries("vision")), len(want)>>10)

	// The body dies mid-conversation. bot's next turn does not wait on
	// it: bot votes listen at once, and the floor decides with every vote
	// in, well within vote_timeout (3 s), not at a query's timeout.
	node.kill()
	time.Sleep(200 * time.Millisecond) // the bridge sees the connection drop
	sent := time.Now()
	id := user.say("Bot, can you still hear me?")
	var g protocol.TurnGrant
	var vote *protocol.State
	var took time.Duration
	// The State and the grant come from two MQTT clients on two topics:
	// the bridge may pass them on in either order.
	user.until(3*time.Second, "bot's vote and the grant for the message after the body died", func(b []byte) bool {
		var st protocol.State
		if json.Unmarshal(b, &st) == nil && st.Method == protocol.MethodState && st.Params.MessageID == id && st.Params.From == "bot" {
			vote = &st
		}
		var n struct {
			Method string             `json:"method"`
			Params protocol.TurnGrant `json:"params"`
		}
		if json.Unmarshal(b, &n) == nil && n.Method == "turn.grant" && n.Params.MessageID == id {
			g, took = n.Params, time.Since(sent)
		}
		return vote != nil && g.MessageID == id
	})
	if vote == nil || vote.Params.State != protocol.Listen || g.SpeakerID() != "" || g.DecidedBy != protocol.DecidedAllVoted {
		t.Fatalf("with its body gone bot voted %+v; the grant %+v after %v", vote, g, took)
	}
	t.Logf("body killed: bot voted listen, the floor decided in %v (%s)", took.Round(time.Millisecond), g.DecidedBy)

	// The body comes back (its client restarted): bot speaks through it.
	node = startNode(t, bodyURL, frame)
	if !node.opened() {
		t.Fatal("the Node body did not reconnect")
	}
	user.say("Welcome back, bot! What do you see?")
	said = user.botSaid(30 * time.Second)
	if spoke := node.await("speak"); len(spoke) == 0 || !strings.Contains(said, fmt.Sprint(spoke[0]["message"])) {
		t.Fatalf("after the body came back bot said %q; the new Node body was asked to speak %v", said, spoke)
	}
	if pr := model.Problems(); len(pr) > 0 {
		t.Fatalf("the model server saw bad requests: %v", pr)
	}

	var page strings.Builder // the console this device serves
	for _, asset := range []string{"/", "/app.js", "/style.css"} {
		resp, err := http.Get("http://" + base + asset)
		if err != nil || resp.StatusCode != 200 {
			t.Fatalf("console %s: %v %v", asset, err, resp)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		page.Write(b)
	}
	frames := append(user.seen, page.String())
	for _, secret := range []string{e2eDeviceToken, e2eUserToken, e2eAPIKey} {
		if strings.Contains(p.log.String(), secret) {
			t.Fatalf("a secret in chorusd's log:\n%s", p.log.String())
		}
		for _, f := range frames {
			if strings.Contains(f, secret) {
				t.Fatalf("a secret in a frame or the console page: %.300s", f)
			}
		}
	}
}

// waitHealthy waits up to 15 s for p's /healthz at base (host:port) to
// answer 200.
func waitHealthy(t *testing.T, p *proc, base string) {
	t.Helper()
	for deadline := time.Now().Add(15 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		resp, err := http.Get("http://" + base + "/healthz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("chorusd not healthy: %v\n%s", err, p.log.String())
		}
	}
}
