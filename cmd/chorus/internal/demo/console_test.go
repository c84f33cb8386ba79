package demo

import (
	"bytes"
	"context"
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

	"github.com/chorus-robotics/chorus/runtime/bus/bustest"
)

// The room console in a real browser (issue 14): `chorus demo -console`'s
// room, Debian's Chromium driven by playwright-core on a phone-sized
// screen: the page goes live, a message typed in its box is answered by a
// companion, the vote table for that message fills, the timeline shows the
// turn, and a device's camera frame comes on request; in the realtime demo
// room, the phase opens with remaining counts, is talked in, and ends. The screenshot is kept in $CHORUS_ARTIFACTS (default: the
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
	urls := make(chan string, 1)
	transcript := &syncWriter{w: &bytes.Buffer{}}
	done := make(chan error, 1)
	go func() {
		_, err := Run(ctx, Options{Mode: mode, Console: addr, OnConsole: func(u string) { urls <- u }, Paced: true, W: transcript})
		done <- err
	}()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("the demo: %v", err)
		}
	}()
	var url string
	select {
	case url = <-urls:
	case err := <-done:
		t.Fatalf("the demo ended: %v", err)
	case <-time.After(20 * time.Second):
		t.Fatal("no console URL")
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
	cmd.Env = append(os.Environ(), "CHROMIUM="+chromium, "CONSOLE_MODE="+mode)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("console check: %v\n%s\n--- transcript:\n%s", err, out, transcript.String())
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	var res struct {
		OK     bool   `json:"ok"`
		Votes  int    `json:"votes"`
		Grant  string `json:"grant"`
		Answer string `json:"answer"`
		Bars   int    `json:"bars"`
		Phase  string `json:"phase"`
	}
	err = json.Unmarshal([]byte(lines[len(lines)-1]), &res)
	if err != nil || !res.OK || (mode == "turn" && (res.Votes < 1 || res.Bars < 1)) || (mode == "realtime" && !strings.Contains(res.Phase, "ended")) {
		t.Fatalf("console check: %+v %v\n%s", res, err, out)
	}
	t.Logf("the page: %d votes, %q, answered %q, %d timeline bars, phase %q; screenshot %s", res.Votes, res.Grant, res.Answer, res.Bars, res.Phase, shot)
}

// syncWriter serializes writes from the demo's goroutines.
type syncWriter struct {
	mu sync.Mutex
	w  *bytes.Buffer
}

func (s *syncWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(p)
}

func (s *syncWriter) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.String()
}
