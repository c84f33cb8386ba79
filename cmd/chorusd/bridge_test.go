package main

import (
	"bufio"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/chorus-robotics/chorus/device/vision"
	"github.com/chorus-robotics/chorus/runtime/bus"
	"github.com/chorus-robotics/chorus/runtime/bus/bustest"
	"github.com/chorus-robotics/chorus/runtime/protocol"
	"github.com/chorus-robotics/chorus/runtime/query"
	"github.com/chorus-robotics/chorus/runtime/topic"
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
brain: {provider: rule, closing_after: 2}
drivers: {camera: {kind: none}, audio: {kind: null}, tts: {kind: tone}}
http:
  listen: "127.0.0.1:%[2]d"
  websocket: {enabled: true, tokens_file: %[3]s}
`

const (
	e2eDeviceToken = "web-bot-token-5f1c9a0e"
	e2eUserToken   = "alice-token-77d02b31c4"
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
// web-bot; companion bot, whose body that is, speaks through it, and its
// brain's vision tool sees through it. A user on the bridge starts the
// conversation. No token appears in the log.
func TestBridgeNodeBody(t *testing.T) {
	chorusd, _ := buildBinaries(t)
	dir := t.TempDir()
	tokens := filepath.Join(dir, "tokens.yaml")
	os.WriteFile(tokens, []byte(fmt.Sprintf("- {token: %s, role: device, name: web-bot}\n- {token: %s, role: user, name: alice}\n", e2eDeviceToken, e2eUserToken)), 0o600)
	mqttPort, httpPort := bustest.FreePort(t), bustest.FreePort(t)
	cfg := filepath.Join(dir, "box.yaml")
	os.WriteFile(cfg, []byte(fmt.Sprintf(bridgeDeviceYAML, mqttPort, httpPort, tokens)), 0o644)
	p := startEnv(t, chorusd, cfg, "box")
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
	for said == "" {
		_, b, err := user.Read(ctx)
		if err != nil {
			t.Fatalf("no answer from bot on the bridge: %v\n%s", err, p.log.String())
		}
		var m protocol.Message
		if json.Unmarshal(b, &m) == nil && m.Method == protocol.MethodMessage && m.Params.From == "bot" {
			said = m.Params.Message
		}
	}
	spoke := node.queries("speak")
	if len(spoke) == 0 || !strings.Contains(said, fmt.Sprint(spoke[0]["message"])) {
		t.Fatalf("bot said %q; the Node body was asked to speak %v", said, spoke)
	}
	t.Logf("bot said %q through the Node body (%d speak queries)", said, len(spoke))

	// The brain's vision tool, as bot's brain calls it.
	b, err := bus.Dial(ctx, bus.Options{Broker: fmt.Sprintf("tcp://127.0.0.1:%d", mqttPort), ClientID: "bot-eyes", Username: "bot"})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	qc := query.NewClient(b, topic.New(""), "bot", query.ClientOptions{})
	defer qc.Close()
	img, err := vision.Looker(qc, "web-bot")(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want, _ := os.ReadFile("../../tests/node/frame.jpg")
	if img.Base64 != base64.StdEncoding.EncodeToString(want) {
		t.Fatalf("the frame seen is not the Node body's (%d base64 bytes)", len(img.Base64))
	}
	if len(node.queries("vision")) != 1 {
		t.Fatalf("vision queries at the Node body: %v", node.queries("vision"))
	}
	for _, secret := range []string{e2eDeviceToken, e2eUserToken} {
		if strings.Contains(p.log.String(), secret) {
			t.Fatalf("a token in chorusd's log:\n%s", p.log.String())
		}
	}
}
