package system

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// chorusd --doctor, the built binary on this machine: a good config passes
// (exit 0), a broken one names each failure with its fix (exit 1), an
// unreadable one says so (exit 2).
func TestDoctor(t *testing.T) {
	chorusd, _ := buildBinaries(t)
	dir := t.TempDir()
	good := `version: 1
device: {id: doc1}
room: {name: lab, members: [kyoko], floor: true}
mqtt:
  broker: tcp://127.0.0.1:1
  embedded: {enabled: true, listen: "127.0.0.1:1", allow_anonymous: true}
companion: {id: kyoko, name: Kyoko, language: en}
brain: {provider: rule}
drivers:
  camera: {kind: testpattern, width: 320, height: 240}
  audio: {kind: wav, dir: ` + filepath.Join(dir, "out") + `}
  tts: {kind: tone}
http: {listen: "off"}
`
	envFile := filepath.Join(dir, "chorusd.env")
	os.WriteFile(envFile, []byte("# the unit's\nDOCTOR_FROM_FILE=pw\n"), 0o600)
	for _, tc := range []struct {
		name    string
		yaml    string
		args    []string
		code    int
		want    []string
		notWant []string
	}{
		{"good", good, nil, 0, []string{"✓ config: valid", "✓ camera (testpattern): a 320×240 frame", "✓ audio output (wav)", "✓ TTS (tone)",
			"the embedded broker is not running", "✓ environment " + filepath.Join(dir, "none") + ": not there", "all 10 checks passed"}, []string{"✗"}},
		{"broken", strings.NewReplacer(
			"allow_anonymous: true}", "allow_anonymous: true}\n  password_env: DOCTOR_NOT_SET",
			"tts: {kind: tone}", "tts: {kind: piper, binary: /nonexistent/piper, model: /nonexistent/voice.onnx}\n  gpio: {button: GPIO27}").Replace(good),
			nil, 1, []string{"✗ secrets: mqtt.password_env: environment variable DOCTOR_NOT_SET is not set", "✗ drivers: drivers.tts.binary",
				`✗ GPIO GPIO27 (drivers.gpio.button): gpio: no pin named "GPIO27"`, "fix: ", "✓ camera (testpattern)"}, nil},
		{"secret in the unit's environment file", strings.Replace(good, "allow_anonymous: true}", "allow_anonymous: true}\n  password_env: DOCTOR_FROM_FILE", 1),
			[]string{"--env-file", envFile}, 0, []string{"✓ environment " + envFile + ": read, as chorusd.service does: set DOCTOR_FROM_FILE", "✓ secrets: DOCTOR_FROM_FILE: set and readable"}, []string{"✗"}},
		{"missing", "", []string{"--config", filepath.Join(dir, "nonexistent.yaml")}, 2, []string{"fix: the config file " + filepath.Join(dir, "nonexistent.yaml") + " is missing"}, nil},
		{"unreadable", "version: 1\ndevice: {id: \"a/b\"}\n", nil, 2, []string{"✗ config:", "device.id"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := filepath.Join(dir, tc.name+".yaml")
			os.WriteFile(f, []byte(tc.yaml), 0o644)
			cmd := exec.Command(chorusd, append([]string{"--doctor", "--config", f, "--env-file", filepath.Join(dir, "none")}, tc.args...)...)
			out, err := cmd.CombinedOutput()
			code := 0
			var ee *exec.ExitError
			if errors.As(err, &ee) {
				code = ee.ExitCode()
			} else if err != nil {
				t.Fatal(err)
			}
			if code != tc.code {
				t.Errorf("exit %d, want %d", code, tc.code)
			}
			for _, w := range tc.want {
				if !strings.Contains(string(out), w) {
					t.Errorf("output lacks %q", w)
				}
			}
			for _, w := range tc.notWant {
				if strings.Contains(string(out), w) {
					t.Errorf("output has %q", w)
				}
			}
			if t.Failed() {
				t.Logf("output:\n%s", out)
			}
		})
	}
}
