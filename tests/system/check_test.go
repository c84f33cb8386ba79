package system

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chorus-robotics/chorus/device/parts"
)

// chorusd --check-config names every bad field at once, the kinds and
// their fields included (the registry of this build checks those).
func TestCheckConfigNamesEveryBadFieldAtOnce(t *testing.T) {
	chorusd, _ := buildBinaries(t)
	out := checkConfig(t, chorusd, `version: 2
device: {id: "a/b"}
room: {name: lab, members: [k], vote_timeout: 5ms, repetition: {threshold: 1.5}}
mqtt: {broker: "http://x"}
companion: {id: k, name: "", language: fr}
brain: {provider: gpt, timeout: 1h}
drivers:
  camera: {kind: webcam, quality: 101}
  audio: {kind: wav}
  tts: {kind: voicevox}
log: {level: loud}
`)
	for _, want := range []string{
		"version: must be 1, got 2",
		"device.id: must not contain",
		"room.vote_timeout: must be from 10ms to 1m, got 5ms",
		"room.repetition.threshold:",
		"mqtt.broker: must be tcp://",
		"companion.name: must not be empty",
		`brain.provider: must be one of anthropic, openai, rule, got "gpt"`,
		"brain.timeout:",
		"drivers.camera.kind:",
		"drivers.camera.quality:",
		"drivers.audio.dir: required for kind wav",
		"drivers.tts.url: required for kind voicevox",
		"log.level:",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}

// --check-config fails exactly where a start would, naming the field: a
// driver this build lacks, a users or TLS file that is not there, a
// companion named like the floor, a piper binary that is not there
// (issue 11). A start of the same config fails the same way.
func TestCheckConfigRejectsWhatAStartWould(t *testing.T) {
	chorusd, _ := buildBinaries(t)
	head := `version: 1
device: {id: dev1}
room: {name: lab, members: [k]}
mqtt: {broker: "tcp://127.0.0.1:1"}
companion: {id: k, name: K, language: en}
`
	cases := map[string]struct{ yaml, want string }{
		"users file missing": {strings.Replace(head, `mqtt: {broker: "tcp://127.0.0.1:1"}`,
			`mqtt: {broker: "tcp://127.0.0.1:1", embedded: {enabled: true, listen: "127.0.0.1:0", users_file: /nonexistent/users.yaml}}`, 1),
			"mqtt.embedded.users_file: open /nonexistent/users.yaml"},
		"TLS file missing": {strings.Replace(head, `mqtt: {broker: "tcp://127.0.0.1:1"}`,
			`mqtt: {broker: "tcp://127.0.0.1:1", embedded: {enabled: true, listen: "127.0.0.1:0", allow_anonymous: true, tls_cert: /nonexistent/c.pem, tls_key: /nonexistent/k.pem}}`, 1),
			"mqtt.embedded.tls_cert: open /nonexistent/c.pem"},
		"companion named like the floor": {strings.NewReplacer("members: [k]", "members: [floor]", "id: k,", "id: floor,").Replace(head),
			`companion.id: "floor" is a floor identity`},
		"piper binary missing": {head + "drivers: {tts: {kind: piper, binary: /nonexistent/piper, model: /nonexistent/voice.onnx}}\n",
			`drivers.tts.binary: "/nonexistent/piper" is not there`},
		"camera program missing": {head + "drivers: {camera: {kind: command, command: [rpicam-vid-not-installed, -o, \"-\"]}}\n",
			`drivers.camera.command[0]: "rpicam-vid-not-installed" is not there`},
		"audio player missing": {head + "drivers: {audio: {kind: command, command: [/nonexistent/aplay, -r, \"{rate}\"]}}\n",
			`drivers.audio.command[0]: "/nonexistent/aplay" is not there`},
	}
	if !parts.Cameras.Built("gocv") {
		cases["gocv without its tag"] = struct{ yaml, want string }{head + "drivers: {camera: {kind: gocv, device: \"0\"}}\n",
			`drivers.camera.kind: "gocv" is not built into this chorusd: build chorusd with -tags gocv`}
	}
	if !parts.Audio.Built("portaudio") {
		cases["portaudio without its tag"] = struct{ yaml, want string }{head + "drivers: {audio: {kind: portaudio}}\n",
			`drivers.audio.kind: "portaudio" is not built into this chorusd: build chorusd with -tags portaudio`}
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			if out := checkConfig(t, chorusd, c.yaml); !strings.Contains(out, c.want) {
				t.Errorf("--check-config output lacks %q:\n%s", c.want, out)
			}
			// A start fails with the same words, before it touches anything.
			f := filepath.Join(t.TempDir(), "c.yaml")
			os.WriteFile(f, []byte(c.yaml), 0o644)
			out, err := exec.Command(chorusd, "--config", f).CombinedOutput()
			if err == nil || !strings.Contains(string(out), c.want) {
				t.Errorf("start: %v\n%s", err, out)
			}
		})
	}
}

func checkConfig(t *testing.T, chorusd, yaml string) string {
	t.Helper()
	f := filepath.Join(t.TempDir(), "c.yaml")
	if err := os.WriteFile(f, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(chorusd, "--check-config", f).CombinedOutput()
	if err == nil {
		t.Fatalf("--check-config accepted it:\n%s", out)
	}
	return string(out)
}

// chorusd --list shows the drivers that need no C library (issue 19).
func TestListShowsTheCommandDrivers(t *testing.T) {
	chorusd, _ := buildBinaries(t)
	out, err := exec.Command(chorusd, "--list").CombinedOutput()
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	for _, want := range []string{"  command      a program writing MJPEG to stdout", "  command      pipes s16le PCM to a player"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("--list lacks %q:\n%s", want, out)
		}
	}
}
