package doctor

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"net"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chorus-robotics/chorus/drivers/stt/wyoming/wyomingtest"
	wy "github.com/chorus-robotics/chorus/drivers/wyoming"
)

// wakeServer is a Wyoming wake-word server with openWakeWord 2's wake
// words: it answers describe with them and takes any stream.
func wakeServer(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	t.Cleanup(func() { ln.Close(); wg.Wait() })
	wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Go(func() {
				defer c.Close()
				c.SetDeadline(time.Now().Add(30 * time.Second))
				r := bufio.NewReader(c)
				for {
					ev, err := wy.ReadEvent(r)
					if err != nil {
						return
					}
					if ev.Type == "describe" {
						info, _ := wy.NewEvent("info", map[string]any{"wake": []any{map[string]any{"name": "openwakeword", "installed": true,
							"models": []any{map[string]any{"name": "okay_nabu"}, map[string]any{"name": "hey_jarvis_v0.1"}}}}}, nil)
						wy.WriteEvent(c, info)
						return
					}
				}
			})
		}
	})
	return ln.Addr().String()
}

// A robot hearing through Wyoming servers: the doctor warms the
// speech-to-text server's model — its first utterance takes longer than
// hearing.stt.timeout, as wyoming-faster-whisper's does when it loads
// its model — and says so and how long it took; it checks the model
// named is the server's; and it fails a wake word the server lacks
// (ok_nabu, which openWakeWord 2 calls okay_nabu), where the stream
// alone looked fine.
func TestHearingThroughWyoming(t *testing.T) {
	b, _ := room(t, "sk")
	t.Setenv("DOCTOR_TEST_PW", "right-pw")
	srv := &wyomingtest.Server{Load: 1500 * time.Millisecond}
	addr, err := srv.Start()
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	wakeAddr := wakeServer(t)
	for _, tc := range []struct {
		name, model, names string
		failed             int
		want               []string
	}{
		{"wrong wake word", "fake", "[ok_nabu, hey_jarvis]", 1, []string{
			"✓ speech to text (wyoming): warmed the model: its first utterance took 1.",
			"longer than hearing.stt.timeout (1s)",
			"; then wyoming answered half a second of silence in",
			`✓ speech to text (wyoming): hearing.stt.model: model "fake": the server lists it`,
			`✗ wake word (wyoming): wake wyoming: ` + wakeAddr + ` has no wake word "ok_nabu" (did you mean "okay_nabu"?)`,
			"fix: set hearing.wake.names to wake words the server has (openWakeWord 2 names okay_nabu, not ok_nabu)"}},
		{"right names, a model it lacks", "large-v3", "[okay_nabu, hey_jarvis]", 1, []string{
			"✓ wake word (wyoming): wyoming takes the microphone's stream; the server has okay_nabu, hey_jarvis_v0.1",
			`✗ speech to text (wyoming): hearing.stt.model: stt wyoming: ` + addr + ` lists no model "large-v3" (it lists: fake)`,
			"✓ speech to text (wyoming): warmed the model"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := load(t, fmt.Sprintf(hearingConf, b, `{kind: command, command: [sh, -c, "exit 1"]}`,
				fmt.Sprintf(`{kind: wyoming, url: "tcp://%s", timeout: 1s, model: %s}`, addr, tc.model),
				fmt.Sprintf(`{kind: wyoming, url: "tcp://%s", names: %s}`, wakeAddr, tc.names)))
			res := Run(context.Background(), c, Options{FrameTimeout: 2 * time.Second, Timeout: 3 * time.Second, EnvFile: filepath.Join(t.TempDir(), "none")})
			var out bytes.Buffer
			failed := Write(&out, res)
			if !strings.Contains(out.String(), "✗ microphone (command)") { // the one failure the config brings along
				t.Errorf("the microphone that exits passed:\n%s", &out)
			}
			if failed != tc.failed+1 {
				t.Errorf("%d failed, want %d:\n%s", failed, tc.failed+1, &out)
			}
			for _, w := range tc.want {
				if !strings.Contains(out.String(), w) {
					t.Errorf("report lacks %q:\n%s", w, &out)
				}
			}
		})
	}
}
