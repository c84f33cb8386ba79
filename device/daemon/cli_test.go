package daemon

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A missing config file is said to be missing, not to have wrong fields.
func TestDoctorSaysTheConfigIsMissing(t *testing.T) {
	path := filepath.Join(t.TempDir(), "chorus.yaml")
	var out, errs strings.Builder
	if code := Command(context.Background(), []string{"--doctor", "--config", path, "--env-file", filepath.Join(t.TempDir(), "env")}, "test", &out, &errs); code != 2 {
		t.Errorf("exit %d, want 2", code)
	}
	if !strings.Contains(out.String(), "fix: the config file "+path+" is missing") || strings.Contains(out.String(), "correct the fields") {
		t.Errorf("report:\n%s", &out)
	}
}

// Issue 30, item 5: the doctor reads the config through the start's one
// check: a secret the config names and this machine lacks is a ✗ of the
// config (the doctor's weaker check of old said "valid"), and the doctor
// goes on with its other checks.
func TestDoctorChecksTheConfigAsAStartDoes(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "robot.yaml")
	os.WriteFile(path, []byte(`version: 1
device: {id: pi}
room: {name: lab, members: [kyoko]}
mqtt: {broker: "tcp://127.0.0.1:1"}
companion: {id: kyoko, name: Kyoko, sample_lines: ["Hi."], language: en}
brain: {provider: openai, model: m, base_url: "http://127.0.0.1:1/v1", api_key_env: CHORUS_TEST_NO_SUCH_KEY}
drivers: {audio: {kind: null}, tts: {kind: tone}}
http: {listen: "off"}
`), 0o644)
	var out, errs strings.Builder
	start := Command(context.Background(), []string{"--check-config", path}, "test", &out, &errs)
	if start == 0 {
		t.Fatalf("--check-config passed a config whose key is not set:\n%s", &out)
	}
	out.Reset()
	if code := Command(context.Background(), []string{"--doctor", "--config", path, "--env-file", filepath.Join(dir, "env")}, "test", &out, &errs); code != 1 {
		t.Errorf("doctor exit %d, want 1:\n%s", code, &out)
	}
	if !strings.Contains(out.String(), "✗ config:") || !strings.Contains(out.String(), "CHORUS_TEST_NO_SUCH_KEY") {
		t.Errorf("the doctor's config line does not say what the start says:\n%s\n(start: %s)", &out, &errs)
	}
}

func TestVersionFlag(t *testing.T) {
	var out, errs strings.Builder
	if code := Command(context.Background(), []string{"--version"}, "v1.2.3", &out, &errs); code != 0 || !strings.HasPrefix(out.String(), "chorusd v1.2.3 (go") {
		t.Fatalf("chorusd --version: %d %q %q", code, out.String(), errs.String())
	}
}

// --check-config reports every problem a start would hit in one pass —
// a port no listener can take, a misspelt provider with what was meant
// and, beside it, the base_url it hid until the provider was fixed, a
// misspelt key — and reads "espeak" as the docs call the engine.
func TestCheckConfigSaysEverythingAtOnce(t *testing.T) {
	path := filepath.Join(t.TempDir(), "robot.yaml")
	os.WriteFile(path, []byte(`version: 1
device: {id: dev1}
room: {name: lab, members: [kyoko], vote_timout: 3s}
mqtt: {broker: "tcp://127.0.0.1:1883", username: kyoko}
companion: {id: kyoko, name: Kyoko, language: en}
brain: {provider: olama, model: gemma3, base_url: "localhost:11434"}
http: {listen: "127.0.0.1:99999"}
drivers:
  tts: {kind: espeak}
`), 0o644)
	var out, errs strings.Builder
	if code := Command(context.Background(), []string{"--check-config", path, "--offline"}, "test", &out, &errs); code != 1 {
		t.Fatalf("exit %d: %s%s", code, out.String(), errs.String())
	}
	for _, want := range []string{
		`room.vote_timout: unknown field (did you mean "vote_timeout"?)`,
		`http.listen: the port must be a number from 0 to 65535, got "99999"`,
		`brain.provider: must be one of anthropic, openai, rule, got "olama" (did you mean "ollama"?) Ollama serves the OpenAI-compatible API: write provider: openai and base_url: http://HOST:11434/v1`,
		`brain.base_url: must be an http:// or https:// URL, got "localhost:11434"`,
	} {
		if !strings.Contains(errs.String(), want) {
			t.Errorf("--check-config does not say %s:\n%s", want, errs.String())
		}
	}
	if strings.Contains(errs.String(), "drivers.tts.kind") {
		t.Errorf("espeak was refused:\n%s", errs.String())
	}
}

// --check-config --offline checks a robot's config on another machine:
// the example room's configs pass without their secrets, programs or
// files; without --offline the same machine says what it lacks.
func TestCheckConfigOffline(t *testing.T) {
	files, _ := filepath.Glob("../../firmware-configs/livingroom/*.yaml")
	if len(files) != 3 {
		t.Fatalf("%d configs", len(files))
	}
	for _, f := range files {
		var out, errs strings.Builder
		if code := Command(context.Background(), []string{"--check-config", f, "--offline"}, "test", &out, &errs); code != 0 || !strings.Contains(out.String(), "ok (offline") {
			t.Errorf("%s --offline: %d %s%s", f, code, out.String(), errs.String())
		}
		out.Reset()
		errs.Reset()
		if code := Command(context.Background(), []string{"--check-config", f}, "test", &out, &errs); code != 1 || !strings.Contains(errs.String(), "mqtt.password") {
			t.Errorf("%s on this machine: %d %s%s", f, code, out.String(), errs.String())
		}
	}
}
