package doctor

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chorus-robotics/chorus/device/parts"
	"github.com/chorus-robotics/chorus/device/robot"
	"github.com/chorus-robotics/chorus/drivers/audio"
	"github.com/chorus-robotics/chorus/drivers/camera"
	"github.com/chorus-robotics/chorus/drivers/i2cbus/i2cfake"
	"github.com/chorus-robotics/chorus/runtime/broker"
	"github.com/chorus-robotics/chorus/runtime/topic"
)

// Kinds as unkind as real hardware, registered for these tests only: a
// camera that opens and never gives a frame, an audio output whose device
// is gone.
type stalled struct{}

func (stalled) Open(context.Context) error { return nil }
func (stalled) Read(ctx context.Context) (camera.Frame, error) {
	<-ctx.Done()
	return camera.Frame{}, ctx.Err()
}
func (stalled) Close() error { return nil }
func (stalled) Name() string { return "stalled" }

type gone struct{}

func (gone) Begin(context.Context, string) (audio.Stream, error) {
	return nil, errors.New("audio device busy or gone")
}
func (gone) Close() error { return nil }

func init() {
	parts.Cameras.Add(parts.Part[camera.Source]{Kind: "test-stalled", Make: func(*robot.Config, parts.Env) (camera.Source, error) { return stalled{}, nil }})
	parts.Audio.Add(parts.Part[audio.Output]{Kind: "test-gone", Make: func(*robot.Config, parts.Env) (audio.Output, error) { return gone{}, nil }})
}

// room starts an embedded broker with users and a model server that
// wants key; it returns the config's mqtt and brain sections.
func room(t *testing.T, key string) (brokerURL, modelURL string) {
	t.Helper()
	b, err := broker.Start(context.Background(), broker.Config{Addr: "127.0.0.1:0",
		Users:  map[string]string{"kyoko": "right-pw", "dev1": "right-pw", "floor": "floor-pw"},
		Scheme: topic.Scheme{FloorIDs: []string{"floor"}}.WithRoster("lab", []string{"kyoko"})})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.URL.Path != "/v1/models":
			http.NotFound(w, r)
		case r.Header.Get("Authorization") != "Bearer "+key:
			http.Error(w, `{"error":"bad key"}`, http.StatusUnauthorized)
		default:
			fmt.Fprint(w, `{"object":"list","data":[{"id":"qwen"}]}`)
		}
	}))
	t.Cleanup(srv.Close)
	return b.URL(), srv.URL + "/v1"
}

func load(t *testing.T, y string) *robot.Config {
	t.Helper()
	p := filepath.Join(t.TempDir(), "c.yaml")
	os.WriteFile(p, []byte(y), 0o644)
	c, err := robot.Load(p)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

const good = `version: 1
device: {id: dev1}
room: {name: lab, members: [kyoko], floor: true}
mqtt: {broker: "%s", username: kyoko, password_env: DOCTOR_TEST_PW, floor_password_env: DOCTOR_TEST_FLOOR_PW}
companion: {id: kyoko, name: Kyoko, language: en}
brain: {provider: openai, base_url: "%s", model: qwen, api_key_env: DOCTOR_TEST_KEY, timeout: 2s}
drivers:
  camera: {kind: testpattern, width: 320, height: 240}
  audio: {kind: wav, dir: %s}
  tts: {kind: tone}
`

func TestGoodConfigPasses(t *testing.T) {
	b, m := room(t, "sk-right")
	t.Setenv("DOCTOR_TEST_PW", "right-pw")
	t.Setenv("DOCTOR_TEST_FLOOR_PW", "floor-pw")
	t.Setenv("DOCTOR_TEST_KEY", "sk-right")
	c := load(t, fmt.Sprintf(good, b, m, t.TempDir()))
	res := Run(context.Background(), c, Options{EnvFile: filepath.Join(t.TempDir(), "none")})
	var out bytes.Buffer
	if failed := Write(&out, res); failed != 0 {
		t.Fatalf("%d failed:\n%s", failed, &out)
	}
	for _, want := range []string{"✓ camera (testpattern): a 320×240 frame", "✓ audio output (wav): opened, played 100ms",
		"✓ TTS (tone)", "as kyoko (this device): accepted", "as floor (the floor): accepted", "/v1/models: answered HTTP 200",
		"✓ secrets: DOCTOR_TEST_PW, DOCTOR_TEST_FLOOR_PW, DOCTOR_TEST_KEY: set and readable", "as dev1 (this device's queries): accepted", "all 10 checks passed"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("report lacks %q:\n%s", want, &out)
		}
	}
}

// Each broken thing is a ✗ naming it, with a fix; the others still pass.
func TestBrokenConfigsFailWithTheFix(t *testing.T) {
	b, m := room(t, "sk-right")
	for _, tc := range []struct {
		name    string
		env     map[string]string
		replace []string
		want    []string
	}{
		{"wrong broker password", map[string]string{"DOCTOR_TEST_PW": "wrong"}, nil,
			[]string{"✗ broker " + b + " as kyoko (this device): bus: connect", "fix: check mqtt.broker"}},
		// The device's own connection logs in as its id: one the broker
		// refuses stops chorusd at start, so the doctor checks it too.
		{"the device's own login refused", nil, []string{"device: {id: dev1}", "device: {id: dev2}"},
			[]string{"✗ broker " + b + " as dev2 (this device's queries): bus: connect", "✓ broker " + b + " as kyoko (this device): accepted"}},
		{"secret not set", map[string]string{"DOCTOR_TEST_PW": "-"}, nil,
			[]string{"✗ secrets: mqtt.password_env: environment variable DOCTOR_TEST_PW is not set", "fix: set the variables in /etc/default/chorusd"}},
		{"model key refused", map[string]string{"DOCTOR_TEST_KEY": "sk-wrong"}, nil,
			[]string{"/v1/models: refused the key: HTTP 401", "fix: set a valid key in DOCTOR_TEST_KEY"}},
		{"model server down", nil, []string{m, "http://127.0.0.1:1/v1"},
			[]string{"✗ model server http://127.0.0.1:1/v1/models:", "fix: start the model server"}},
		// An example's stand-in is never probed: on a LAN the address may
		// well be someone else's machine.
		{"an example's model server", nil, []string{m, "http://192.0.2.20:11434/v1"},
			[]string{"✗ model server http://192.0.2.20:11434/v1/models: an example's placeholder address", "fix: set brain.base_url to your model server"}},
		{"an example's broker", nil, []string{b, "tcp://broker.example:1883"},
			[]string{"✗ broker tcp://broker.example:1883: an example's placeholder address", "fix: set mqtt.broker to your room's broker"}},
		{"model server of another kind", nil, []string{"/v1\"", "/api\""},
			[]string{"answered HTTP 404: not the model server's API"}},
		{"camera gives no frame", nil, []string{"kind: testpattern", "kind: test-stalled"},
			[]string{"✗ camera (test-stalled): no frame from stalled within 300ms", "fix: check drivers.camera"}},
		{"image camera with no image", nil, []string{"kind: testpattern", "kind: image, path: /nonexistent/frame.jpg"},
			[]string{"✗ camera (image): open"}},
		{"audio output gone", nil, []string{"kind: wav, dir:", "kind: test-gone, dir:"},
			[]string{"✗ audio output (test-gone): open: audio device busy or gone", "fix: check drivers.audio"}},
		{"speaker program that plays nothing", nil, []string{"kind: wav, dir:", `kind: command, command: ["sh", "-c", "head -c 100 >/dev/null"], dir:`},
			[]string{"✗ audio output (command): drain: audio command sh: exited mid-utterance: exit status 0", "fix: check drivers.audio"}},
		{"speaker program that exits at once", nil, []string{"kind: wav, dir:", `kind: command, command: ["true"], dir:`},
			[]string{"✗ audio output (command): ", "audio command true: exited mid-utterance: exit status 0"}},
		{"TTS binary missing", nil, []string{"tts: {kind: tone}", "tts: {kind: espeak-ng, binary: /nonexistent/espeak-ng}"},
			[]string{`✗ drivers: drivers.tts.binary: "/nonexistent/espeak-ng" is not there`, "✗ TTS (espeak-ng): say \"hello\""}},
		{"GPIO pin missing", nil, []string{"  tts: {kind: tone}", "  tts: {kind: tone}\n  gpio: {led: GPIO99}"},
			[]string{`✗ GPIO GPIO99 (drivers.gpio.led): gpio: no pin named "GPIO99"`, "fix: name a pin this board has"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env := map[string]string{"DOCTOR_TEST_PW": "right-pw", "DOCTOR_TEST_FLOOR_PW": "floor-pw", "DOCTOR_TEST_KEY": "sk-right"}
			for k, v := range tc.env {
				env[k] = v
			}
			for k, v := range env {
				t.Setenv(k, v)
				if v == "-" {
					os.Unsetenv(k)
				}
			}
			y := fmt.Sprintf(good, b, m, t.TempDir())
			for i := 0; i+1 < len(tc.replace); i += 2 {
				if !strings.Contains(y, tc.replace[i]) {
					t.Fatalf("config lacks %q", tc.replace[i])
				}
				y = strings.Replace(y, tc.replace[i], tc.replace[i+1], 1)
			}
			start := time.Now()
			res := Run(context.Background(), load(t, y), Options{FrameTimeout: 300 * time.Millisecond, Timeout: 2 * time.Second, EnvFile: filepath.Join(t.TempDir(), "none")})
			var out bytes.Buffer
			if Write(&out, res) == 0 {
				t.Fatalf("nothing failed:\n%s", &out)
			}
			for _, w := range tc.want {
				if !strings.Contains(out.String(), w) {
					t.Errorf("report lacks %q:\n%s", w, &out)
				}
			}
			if took := time.Since(start); took > 10*time.Second {
				t.Errorf("took %v: a check waited past its timeout", took)
			}
		})
	}
}

// The doctor reads the unit's environment file, as systemd does for
// chorusd: a robot whose secrets are only there passes, the file's lines
// fill only what the environment lacks, and the report says so.
func TestReadsTheUnitsEnvironmentFile(t *testing.T) {
	b, m := room(t, "sk-right")
	for _, k := range []string{"DOCTOR_TEST_PW", "DOCTOR_TEST_FLOOR_PW", "CHORUS_UNUSED"} {
		t.Setenv(k, "")
		os.Unsetenv(k)
	}
	t.Setenv("DOCTOR_TEST_KEY", "sk-right") // set: the file's wrong key must not replace it
	env := filepath.Join(t.TempDir(), "chorusd")
	os.WriteFile(env, []byte("# secrets\nCHORUS_UNUSED=1\nDOCTOR_TEST_PW=right-pw\nDOCTOR_TEST_FLOOR_PW=\"floor-pw\"\nDOCTOR_TEST_KEY=sk-wrong\n"), 0o600)
	c := load(t, fmt.Sprintf(good, b, m, t.TempDir()))
	var out bytes.Buffer
	if failed := Write(&out, Run(context.Background(), c, Options{EnvFile: env})); failed != 0 {
		t.Fatalf("%d failed:\n%s", failed, &out)
	}
	for _, want := range []string{"✓ environment " + env + ": read, as chorusd.service does: set CHORUS_UNUSED, DOCTOR_TEST_FLOOR_PW, DOCTOR_TEST_PW; kept from the environment DOCTOR_TEST_KEY",
		"as kyoko (this device): accepted", "as floor (the floor): accepted", "/v1/models: answered HTTP 200"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("report lacks %q:\n%s", want, &out)
		}
	}
	os.WriteFile(env, []byte("DOCTOR_TEST_PW right-pw\n"), 0o600)
	out.Reset()
	Write(&out, Run(context.Background(), c, Options{EnvFile: env}))
	if !strings.Contains(out.String(), "✗ environment "+env+": line 1 is not NAME=value") {
		t.Errorf("a malformed line is not named:\n%s", &out)
	}
}

// The body's I²C devices are probed as each answers: the servo board
// (a PCA9685) by reading a byte, the face (an SSD1306, which may refuse
// reads on I²C) by writing a command it ignores. A display that takes
// writes and refuses reads is there.
func TestBodyProbesTheFaceWithAWrite(t *testing.T) {
	b, m := room(t, "sk-right")
	t.Setenv("DOCTOR_TEST_PW", "right-pw")
	t.Setenv("DOCTOR_TEST_FLOOR_PW", "floor-pw")
	t.Setenv("DOCTOR_TEST_KEY", "sk-right")
	bus := i2cfake.New("doctor-test-i2c", 0x40, 0x3c)
	bus.RefuseReads(0x3c)
	if err := bus.Register(); err != nil {
		t.Fatal(err)
	}
	defer bus.Unregister()
	c := load(t, fmt.Sprintf(good, b, m, t.TempDir())+`body:
  servos: {bus: doctor-test-i2c, joints: [{name: pan, channel: 0, min: -30, max: 30}]}
  face: {bus: doctor-test-i2c, address: "0x3c", width: 128, height: 32}
`)
	res := Run(context.Background(), c, Options{EnvFile: filepath.Join(t.TempDir(), "none")})
	var out bytes.Buffer
	if failed := Write(&out, res); failed != 0 {
		t.Fatalf("%d failed:\n%s", failed, &out)
	}
	for _, want := range []string{"✓ servo board (PCA9685 at 0x40 on doctor-test-i2c): answers", "✓ face (SSD1306 at 0x3c on doctor-test-i2c): answers"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("report lacks %q:\n%s", want, &out)
		}
	}
	var probe []byte
	for _, w := range bus.Writes() {
		if w.Addr == 0x3c {
			probe = w.Data
		}
	}
	if !bytes.Equal(probe, []byte{0x00, 0xE3}) {
		t.Errorf("the face was probed with % x, want a command-mode no-op (00 e3)", probe)
	}
}
