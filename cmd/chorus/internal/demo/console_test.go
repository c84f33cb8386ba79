package demo

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chorus-robotics/chorus/runtime/bus/bustest"
	"github.com/chorus-robotics/chorus/runtime/logtest"
)

// The room console in a real browser (issue 14): `chorus demo -console`'s
// room, Debian's Chromium driven by playwright-core on a phone-sized
// screen: the page goes live, a message typed in its box is answered by a
// companion, the vote table for that message fills, the page reloaded
// mid-conversation shows the conversation so far (the bridge's replay),
// the timeline shows the turn with the silences the page saw (under a
// second: none measured across the reload), a device's camera frame comes
// on request and a robot without a camera has no button, a room without
// microphones shows none, and turn-taking is not shown as an error; in the realtime demo
// room, the phase opens with remaining counts, is talked in, and ends. In
// the turn room the console's robot remembers people (Options.Memory):
// the memory panel lists what it remembers about the console's person
// (guest), shows its refusal of another person's, and forgets after a
// confirm; a realtime room keeps no memory, and the panel says that its
// device did not answer. The screenshot is kept in $CHORUS_ARTIFACTS (default: the
// test's temporary folder). Without node, playwright-core or Chromium the
// test is skipped, unless CHORUS_REQUIRE_NODE=1 (CI).
func TestConsoleInABrowser(t *testing.T) {
	for _, mode := range []string{"turn", "realtime"} {
		t.Run(mode, func(t *testing.T) { consoleInABrowser(t, mode) })
	}
}

func consoleInABrowser(t *testing.T, mode string) {
	dir, _ := filepath.Abs("../../../../tests/node")
	chromium := os.Getenv("CHROMIUM")
	if chromium == "" {
		chromium = "/usr/bin/chromium"
	}
	_, errNode := exec.LookPath("node")
	_, errPW := os.Stat(filepath.Join(dir, "node_modules", "playwright-core"))
	_, errChromium := os.Stat(chromium)
	if errNode != nil || errPW != nil || errChromium != nil {
		if os.Getenv("CHORUS_REQUIRE_NODE") == "1" {
			t.Fatalf("node, playwright-core (npm ci --prefix tests/node) or %s is missing: %v %v %v", chromium, errNode, errPW, errChromium)
		}
		t.Skip("node, tests/node/node_modules/playwright-core or Chromium is missing")
	}
	addr := fmt.Sprintf("127.0.0.1:%d", bustest.FreePort(t))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	transcript := &logtest.Buffer{}
	cfgs, err := Configs("", mode)
	if err != nil {
		t.Fatal(err)
	}
	memDevice, memDir := cfgs[0].Device.ID, t.TempDir()
	url, stop, err := startConsoleDemo(ctx, func(ctx context.Context, onConsole func(string)) error {
		_, err := Run(ctx, Options{Mode: mode, Console: addr, OnConsole: onConsole, Memory: memDir, Paced: mode == "turn", W: transcript})
		return err
	}, 20*time.Second, 30*time.Second)
	defer func() {
		if err := stop(); err != nil {
			t.Errorf("the demo: %v", err)
		}
	}()
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if csp := resp.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "default-src 'self'") {
		t.Fatalf("the page's Content-Security-Policy: %q", csp)
	}

	artifacts := os.Getenv("CHORUS_ARTIFACTS")
	if artifacts == "" {
		artifacts = t.TempDir()
	}
	os.MkdirAll(artifacts, 0o755)
	shot := filepath.Join(artifacts, "console-"+mode+".png")
	cmd := exec.CommandContext(ctx, "node", filepath.Join(dir, "console-check.mjs"), url, shot)
	cmd.Env = append(os.Environ(), "CHROMIUM="+chromium, "CONSOLE_MODE="+mode, "MEMORY_DEVICE="+memDevice)
	if mode == "turn" {
		cmd.Env = append(cmd.Env, "MEMORY_ON=1")
	}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("console check: %v\n%s\n--- transcript:\n%s", err, out, transcript.String())
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	var res struct {
		OK       bool   `json:"ok"`
		Votes    int    `json:"votes"`
		Grant    string `json:"grant"`
		Answer   string `json:"answer"`
		Actions  string `json:"actions"`
		Bars     int    `json:"bars"`
		Phase    string `json:"phase"`
		Person   string `json:"person"`
		Memory   string `json:"memory"`
		Silences string `json:"silences"`
	}
	err = json.Unmarshal([]byte(lines[len(lines)-1]), &res)
	if err != nil || !res.OK || (mode == "turn" && (res.Votes < 1 || res.Bars < 1 || !strings.HasPrefix(res.Actions, "does: nod") || res.Silences == "")) || (mode == "realtime" && !strings.Contains(res.Phase, "ended")) ||
		res.Person != "guest" || (mode == "turn" && !strings.Contains(res.Memory, "about guest")) || (mode == "realtime" && !strings.Contains(res.Memory, "no answer within")) {
		t.Fatalf("console check: %+v %v\n%s", res, err, out)
	}
	t.Logf("the page: %d votes, %q, answered %q, actions %q, %d timeline bars, %q, phase %q, memory %q; screenshot %s", res.Votes, res.Grant, res.Answer, res.Actions, res.Bars, res.Silences, res.Phase, res.Memory, shot)
}

// startConsoleDemo runs a demo in the background (run calls onConsole with
// its console's URL) and waits up to wait for the URL. A demo that ends
// before (it could not start) is an error at once, not a wait. stop
// cancels the demo and waits up to stopWait for it to end; it returns the
// demo's error, unless start already returned it.
func startConsoleDemo(ctx context.Context, run func(ctx context.Context, onConsole func(string)) error, wait, stopWait time.Duration) (url string, stop func() error, err error) {
	ctx, cancel := context.WithCancel(ctx)
	urls := make(chan string, 1)
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, func(u string) {
			select {
			case urls <- u:
			default:
			}
		})
	}()
	ended := false
	stop = func() error {
		cancel()
		if ended {
			return nil
		}
		select {
		case err := <-done:
			ended = true
			return err
		case <-time.After(stopWait):
			return fmt.Errorf("still running %v after it was stopped", stopWait)
		}
	}
	select {
	case url = <-urls:
		return url, stop, nil
	case err := <-done:
		ended = true
		return "", stop, fmt.Errorf("the demo ended before its console came up: %v", err)
	case <-time.After(wait):
		return "", stop, fmt.Errorf("no console URL within %v", wait)
	}
}

// The console test fails at once, not at the test's timeout, when the demo
// cannot start, and never waits forever for a demo that does not stop.
func TestStartConsoleDemoFailsPromptly(t *testing.T) {
	busy := errors.New("listen tcp 127.0.0.1:8080: address already in use")
	t0 := time.Now()
	_, stop, err := startConsoleDemo(context.Background(), func(context.Context, func(string)) error { return busy }, 10*time.Second, 10*time.Second)
	if err == nil || !strings.Contains(err.Error(), "address already in use") {
		t.Fatalf("a demo that cannot start: %v", err)
	}
	if err := stop(); err != nil {
		t.Fatalf("stop after the demo ended: %v", err)
	}
	if d := time.Since(t0); d > 2*time.Second {
		t.Fatalf("a demo that cannot start took %v to report", d)
	}

	// A demo that never stops: stop gives up after stopWait.
	never := make(chan struct{})
	defer close(never)
	url, stop, err := startConsoleDemo(context.Background(), func(_ context.Context, on func(string)) error {
		on("http://127.0.0.1:1/")
		<-never
		return nil
	}, 10*time.Second, 100*time.Millisecond)
	if err != nil || url != "http://127.0.0.1:1/" {
		t.Fatalf("started: %q, %v", url, err)
	}
	if err := stop(); err == nil || !strings.Contains(err.Error(), "still running") {
		t.Fatalf("a demo that does not stop: %v", err)
	}

	// A demo that stops with an error reports it at stop.
	_, stop, err = startConsoleDemo(context.Background(), func(ctx context.Context, on func(string)) error {
		on("http://127.0.0.1:1/")
		<-ctx.Done()
		return busy
	}, 10*time.Second, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if err := stop(); !errors.Is(err, busy) {
		t.Fatalf("stop: %v; want the demo's error", err)
	}
}
