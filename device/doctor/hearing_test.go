package doctor

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chorus-robotics/chorus/drivers/mic/mictest"
)

const hearingConf = `version: 1
device: {id: dev1}
room: {name: lab, members: [kyoko]}
mqtt: {broker: "%s", username: kyoko, password_env: DOCTOR_TEST_PW}
companion: {id: kyoko, name: Kyoko, language: en}
drivers:
  audio: {kind: null}
  tts: {kind: tone}
  mic: %s
hearing:
  enabled: true
  stt: %s
  wake: %s
`

// A robot that hears: the doctor checks its microphone gives audio, its
// speech-to-text engine answers and its wake-word server takes a stream;
// each broken one is a ✗ with the fix.
func TestHearing(t *testing.T) {
	mictest.Need(t, "pocketsphinx_continuous", "espeak-ng", "sox")
	b, _ := room(t, "sk")
	t.Setenv("DOCTOR_TEST_PW", "right-pw")
	wav := mictest.SpeechWAV(t, "", "hello robots")
	down := func() string {
		ln, _ := net.Listen("tcp", "127.0.0.1:0")
		a := ln.Addr().String()
		ln.Close()
		return "tcp://" + a
	}()
	if _, err := exec.LookPath("sh"); err != nil {
		t.Skip("no sh")
	}
	for _, tc := range []struct {
		name, mic, stt, wake string
		failed               int
		want                 []string
	}{
		{"good", fmt.Sprintf("{kind: file, path: %s}", wav), "{kind: pocketsphinx}", "{kind: none}", 0,
			[]string{"✓ microphone (file): a second of audio", "✓ speech to text (pocketsphinx): pocketsphinx answered half a second of silence"}},
		{"microphone program exits", `{kind: command, command: [sh, -c, "echo no device >&2; exit 1"]}`, "{kind: pocketsphinx}", "{kind: none}", 1,
			[]string{"✗ microphone (command):", "no device", "fix: check drivers.mic"}},
		{"microphone faster than real time", `{kind: command, command: [sh, -c, "exec cat /dev/zero"]}`, "{kind: pocketsphinx}", "{kind: none}", 1,
			[]string{"✗ microphone (command):", "faster than real time"}},
		{"speech-to-text server down", fmt.Sprintf("{kind: file, path: %s}", wav), "{kind: wyoming, url: \"" + down + "\"}", "{kind: none}", 1,
			[]string{"✗ speech to text (wyoming):", strings.TrimPrefix(down, "tcp://"), "fix: check hearing.stt"}},
		{"wake-word server down", fmt.Sprintf("{kind: file, path: %s}", wav), "{kind: pocketsphinx}", "{kind: wyoming, url: \"" + down + "\"}", 1,
			[]string{"✗ wake word (wyoming):", "fix: check hearing.wake.url"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := load(t, fmt.Sprintf(hearingConf, b, tc.mic, tc.stt, tc.wake))
			start := time.Now()
			res := Run(context.Background(), c, Options{FrameTimeout: 3 * time.Second, Timeout: 2 * time.Second, EnvFile: filepath.Join(t.TempDir(), "none")})
			var out bytes.Buffer
			if failed := Write(&out, res); failed != tc.failed {
				t.Errorf("%d failed, want %d:\n%s", failed, tc.failed, &out)
			}
			for _, w := range tc.want {
				if !strings.Contains(out.String(), w) {
					t.Errorf("report lacks %q:\n%s", w, &out)
				}
			}
			if took := time.Since(start); took > 15*time.Second {
				t.Errorf("took %v", took)
			}
		})
	}
}
