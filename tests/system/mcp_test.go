package system

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chorus-robotics/chorus/runtime/bus/bustest"
)

const mcpRobotYAML = `version: 1
device: {id: box}
room: {name: lab, members: [bot], floor: true, vote_timeout: 3s, pause: 20ms}
mqtt: {broker: "tcp://127.0.0.1:%[1]d", embedded: {enabled: true, listen: "127.0.0.1:%[1]d", allow_anonymous: true}}
companion: {id: bot, name: Bot, sample_lines: ["I am a robot."], language: en}
brain: {provider: rule, closing_after: 2}
memory: {dir: %[4]s}
drivers: {camera: {kind: image, path: %[5]s}, audio: {kind: null}, tts: {kind: tone}}
body:
  actions:
    - {name: wave, description: "Wave your arm.", driver: command, command: ["true"], timeout: 5s,
       schema: {type: object, properties: {hand: {enum: [left, right]}}, additionalProperties: false}}
http:
  listen: "127.0.0.1:%[2]d"
  websocket: {enabled: true, tokens_file: %[3]s}
  mcp: true
`

// mcpAgent runs the official TypeScript SDK's client (tests/node/mcp-client.mjs).
func mcpAgent(t *testing.T, url, token string, args ...string) (map[string]any, int) {
	t.Helper()
	dir := needNode(t)
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "@modelcontextprotocol", "sdk")); err != nil {
		t.Fatalf("the MCP SDK is missing (npm ci --prefix tests/node): %v", err)
	}
	cmd := exec.Command("node", append([]string{filepath.Join(dir, "mcp-client.mjs"), url, token}, args...)...)
	out, err := cmd.Output()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	var res map[string]any
	if err := json.Unmarshal(out, &res); err != nil {
		t.Fatalf("node printed %q: %v", out, err)
	}
	return res, code
}

// An agent uses a robot through the robot's MCP server with the official
// TypeScript SDK: with a user token it lists the robot's tools and makes
// the robot say words (the room hears them from the robot, word for
// word), wave and look; without a token, or with a viewer's, it is
// refused.
func TestAnAgentUsesARobotOverMCP(t *testing.T) {
	chorusd, _ := buildBinaries(t)
	dir := t.TempDir()
	const userToken, viewerToken = "alice-mcp-token-8c1f2a", "viewer-mcp-token-3b7e90"
	tokens := filepath.Join(dir, "tokens.yaml")
	os.WriteFile(tokens, []byte(fmt.Sprintf("- {token: %s, role: user, name: alice}\n- {token: %s, role: viewer}\n", userToken, viewerToken)), 0o600)
	mqttPort, httpPort := bustest.FreePort(t), bustest.FreePort(t)
	cfg := filepath.Join(dir, "box.yaml")
	os.WriteFile(cfg, []byte(fmt.Sprintf(mcpRobotYAML, mqttPort, httpPort, tokens, filepath.Join(dir, "memory"), realFrame(t))), 0o644)
	p := start(t, chorusd, cfg, "box")
	base := fmt.Sprintf("127.0.0.1:%d", httpPort)
	waitHealthy(t, p, base)
	o := observe(t, fmt.Sprintf("tcp://127.0.0.1:%d", mqttPort))
	o.waitOnline(t, "bot")
	url := "http://" + base + "/mcp"

	res, code := mcpAgent(t, url, userToken, "list")
	if code != 0 {
		t.Fatalf("list: exit %d, %v", code, res)
	}
	var names []string
	for _, tl := range res["tools"].([]any) {
		names = append(names, tl.(map[string]any)["name"].(string))
	}
	if got := strings.Join(names, " "); got != "look memory_forget memory_list say wave" {
		t.Fatalf("tools %q", got)
	}

	if res, code := mcpAgent(t, url, userToken, "call", "say", `{"text":"Dinner is ready, everyone!"}`); code != 0 || res["isError"] == true {
		t.Fatalf("say: exit %d, %v", code, res)
	}
	deadline := time.After(15 * time.Second)
	for said := false; !said; {
		select {
		case m := <-o.messages:
			said = m.Params.From == "bot" && m.Params.Message == "Dinner is ready, everyone!"
		case <-deadline:
			t.Fatalf("the robot never said the words\n%s", p.log)
		}
	}
	if res, code := mcpAgent(t, url, userToken, "call", "wave", `{"hand":"left"}`); code != 0 || res["isError"] == true || !strings.Contains(fmt.Sprint(res["content"]), "wave: done") {
		t.Errorf("wave: exit %d, %v", code, res)
	}
	if res, code := mcpAgent(t, url, userToken, "call", "wave", `{"hand":"third"}`); code != 0 || res["isError"] != true {
		t.Errorf("wave with a hand the schema refuses: exit %d, %v", code, res)
	}
	res, code = mcpAgent(t, url, userToken, "call", "look")
	img, _ := res["content"].([]any)
	if first, _ := img[0].(map[string]any); code != 0 || len(img) != 1 || first["mimeType"] != "image/jpeg" || first["bytes"].(float64) < 50_000 {
		t.Errorf("look: exit %d, %v: want the camera's picture of a 720p frame", code, res)
	} else {
		t.Logf("look: the picture of a 720p camera frame, %.0f base64 bytes", first["bytes"])
	}
	if res, code := mcpAgent(t, url, userToken, "call", "memory_list"); code != 0 || !strings.Contains(fmt.Sprint(res["content"]), "alice") {
		t.Errorf("memory_list: exit %d, %v", code, res)
	}
	for _, tok := range []string{"-", "not-a-token-at-all-12", viewerToken} {
		if res, code := mcpAgent(t, url, tok, "list"); code != 2 {
			t.Errorf("token %q: exit %d, %v: want refused", tok, code, res)
		}
	}
	for _, model := range []string{"date_time", "memory_search", "vision", "speak"} { // the model's, not agents'
		if res, code := mcpAgent(t, url, userToken, "call", model, `{}`); code != 3 || !strings.Contains(fmt.Sprint(res["error"]), model) {
			t.Errorf("%s, a tool of the model's: exit %d, %v; want the server's error naming it", model, code, res)
		}
	}
}

// A robot in a realtime room (no companion: realtime agents) serves its
// body's camera and actions over MCP as a robot of a turn room does (an
// outside check found them gone: the tool registry was the companion's).
func TestARealtimeRobotServesItsBodyOverMCP(t *testing.T) {
	chorusd, _ := buildBinaries(t)
	dir := t.TempDir()
	const userToken = "alice-mcp-token-8c1f2a"
	tokens := filepath.Join(dir, "tokens.yaml")
	os.WriteFile(tokens, []byte(fmt.Sprintf("- {token: %s, role: user, name: alice}\n", userToken)), 0o600)
	mqttPort, httpPort := bustest.FreePort(t), bustest.FreePort(t)
	cfg := filepath.Join(dir, "box.yaml")
	yaml := strings.Replace(mcpRobotYAML, "pause: 20ms}", "pause: 20ms, mode: realtime}", 1)
	os.WriteFile(cfg, []byte(fmt.Sprintf(yaml, mqttPort, httpPort, tokens, filepath.Join(dir, "memory"), realFrame(t))), 0o644)
	p := start(t, chorusd, cfg, "box")
	base := fmt.Sprintf("127.0.0.1:%d", httpPort)
	waitHealthy(t, p, base)
	url := "http://" + base + "/mcp"
	res, code := mcpAgent(t, url, userToken, "list")
	var names []string
	for _, tl := range res["tools"].([]any) {
		names = append(names, tl.(map[string]any)["name"].(string))
	}
	if got := strings.Join(names, " "); code != 0 || got != "look memory_forget memory_list say wave" {
		t.Fatalf("tools %q (exit %d)\n%s", got, code, p.log)
	}
	if res, code := mcpAgent(t, url, userToken, "call", "wave", `{"hand":"right"}`); code != 0 || res["isError"] == true || !strings.Contains(fmt.Sprint(res["content"]), "wave: done") {
		t.Errorf("wave: exit %d, %v", code, res)
	}
	if res, code := mcpAgent(t, url, userToken, "call", "look"); code != 0 || res["isError"] == true {
		t.Errorf("look: exit %d, %v", code, res)
	}
}
