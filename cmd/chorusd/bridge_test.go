package main

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

// startNode runs tests/node/aikyo-client.mjs against url; without node or
// its ws package the test is skipped, unless CHORUS_REQUIRE_NODE=1 (CI).
func startNode(t *testing.T, url string) *nodeClient {
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
	cmd := exec.Command("node", filepath.Join(dir, "aikyo-client.mjs"))
	cmd.Env = append(os.Environ(), "CHORUS_BRIDGE_URL="+url)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr syncBuffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	n := &nodeClient{}
	done := make(chan struct{})
	go func() {
		defer close(done)
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
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
		<-done
		if t.Failed() {
			t.Logf("--- node stderr:\n%s", stderr.String())
		}
	})
	return n
}

// A body written in another language: aikyo's client example, as a Node
// ws client, registers through chorusd's WebSocket bridge as device
// web-bot; companion bot, whose body that is, looks through it (its model
// calls the vision tool and is shown the Node body's picture) and speaks
// through it. A user on the bridge starts the conversation. No token and
// no API key appears in the log or in a frame.
func TestBridgeNodeBody(t *testing.T) {
	chorusd, _ := buildBinaries(t)
	dir := t.TempDir()
	tokens := filepath.Join(dir, "tokens.yaml")
	os.WriteFile(tokens, []byte(fmt.Sprintf("- {token: %s, role: device, name: web-bot}\n- {token: %s, role: user, name: alice}\n", e2eDeviceToken, e2eUserToken)), 0o600)
	mqttPort, httpPort := bustest.FreePort(t), bustest.FreePort(t)
	cfg := filepath.Join(dir, "box.yaml")
	model := llmtest.New()
	defer model.Close()
	model.Look, model.APIKey, model.ClosingAfter = true, e2eAPIKey, 2
	os.WriteFile(cfg, []byte(fmt.Sprintf(bridgeDeviceYAML, mqttPort, httpPort, tokens, model.BaseURL())), 0o644)
	p := startEnv(t, chorusd, cfg, "box", "CHORUS_TEST_API_KEY="+e2eAPIKey)
	base := fmt.Sprintf("127.0.0.1:%d", httpPort)
	deadline := time.Now().Add(15 * time.Second)
	for {
		resp, err := http.Get("http://" + base + "/healthz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("chorusd not healthy: %v\n%s", err, p.log.String())
		}
		time.Sleep(100 * time.Millisecond)
	}

	node := startNode(t, "ws://"+base+"/ws?token="+e2eDeviceToken)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	user, _, err := websocket.Dial(ctx, "ws://"+base+"/ws", &websocket.DialOptions{HTTPHeader: http.Header{"Authorization": {"Bearer " + e2eUserToken}}})
	if err != nil {
		t.Fatal(err)
	}
	defer user.CloseNow()
	time.Sleep(300 * time.Millisecond) // node connects
	hello, _ := json.Marshal(protocol.NewMessage(protocol.NewID(), "alice", []string{"bot"}, "Hello bot, are you there?", ""))
	if err := user.Write(ctx, websocket.MessageText, hello); err != nil {
		t.Fatal(err)
	}
	var said string
	var frames []string
	for said == "" {
		_, b, err := user.Read(ctx)
		if err != nil {
			t.Fatalf("no answer from bot on the bridge: %v\n%s", err, p.log.String())
		}
		frames = append(frames, string(b))
		var m protocol.Message
		if json.Unmarshal(b, &m) == nil && m.Method == protocol.MethodMessage && m.Params.From == "bot" {
			said = m.Params.Message
		}
	}
	states := 0 // aikyo's Japanese State schema requires an id: Chorus's States carry one
	for _, f := range frames {
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
	// picture.
	want, _ := os.ReadFile("../../tests/node/frame.jpg")
	images := model.Images()
	if len(node.await("vision")) == 0 || len(images) == 0 || !strings.HasSuffix(images[0], base64.StdEncoding.EncodeToString(want)) {
		t.Fatalf("vision queries at the Node body %v; pictures the model saw: %d", node.queries("vision"), len(images))
	}
	if pr := model.Problems(); len(pr) > 0 {
		t.Fatalf("the model server saw bad requests: %v", pr)
	}
	t.Logf("bot looked through the Node body (%d vision queries, %d pictures shown to the model)", len(node.queries("vision")), len(images))
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
	frames = append(frames, page.String())
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
