package robot

import (
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chorus-robotics/chorus/runtime/config"
	"github.com/chorus-robotics/chorus/runtime/protocol"
	"github.com/chorus-robotics/chorus/runtime/repetition"
)

const minimal = `version: 1
device: {id: dev1}
room: {name: lab, members: [k]}
mqtt: {broker: "tcp://127.0.0.1:1883"}
`

func TestMinimalDefaults(t *testing.T) {
	c, err := Decode(strings.NewReader(minimal))
	if err != nil {
		t.Fatal(err)
	}
	if c.Room.VoteTimeout.Seconds() != 3 || c.Room.MaxPending != 64 || c.Room.History != 10 ||
		c.Room.Repetition.Threshold != 0.7 || c.Room.Repetition.Window != 5 || c.Brain.Provider != "rule" ||
		c.MQTT.Username != "dev1" || c.MQTT.FloorIDs[0] != "floor" || c.HTTP.Listen != "127.0.0.1:9100" {
		t.Fatalf("defaults: %+v", c)
	}
	if !c.Brain.UseDraft() {
		t.Fatal("draft must default to true")
	}
}

func TestUnknownKeyIsAnError(t *testing.T) {
	_, err := Decode(strings.NewReader(minimal + "room_name: oops\n"))
	if err == nil || !strings.Contains(err.Error(), "room_name") {
		t.Fatalf("err = %v", err)
	}
	_, err = Decode(strings.NewReader(strings.Replace(minimal, "room: {name: lab, members: [k]}", "room: {name: lab, members: [k], vote_timout: 2s}", 1)))
	if err == nil || !strings.Contains(err.Error(), "vote_timout") {
		t.Fatalf("err = %v", err)
	}
}

func TestSecretsFromEnvironmentAndFiles(t *testing.T) {
	c, err := Decode(strings.NewReader(minimal))
	if err != nil {
		t.Fatal(err)
	}
	c.MQTT.PasswordEnv = "CHORUS_TEST_PW"
	if _, err := c.MQTT.Password(); err == nil || !strings.Contains(err.Error(), "CHORUS_TEST_PW is not set") {
		t.Fatalf("unset variable: %v", err)
	}
	t.Setenv("CHORUS_TEST_PW", "s3cret")
	if pw, err := c.MQTT.Password(); err != nil || pw != "s3cret" {
		t.Fatalf("%q %v", pw, err)
	}
	f := filepath.Join(t.TempDir(), "pw")
	os.WriteFile(f, []byte("from-file\n"), 0o600)
	c.MQTT.PasswordEnv, c.MQTT.PasswordFile = "", f
	if pw, err := c.MQTT.Password(); err != nil || pw != "from-file" {
		t.Fatalf("%q %v", pw, err)
	}
	// A secret written into the YAML itself has no field to go to.
	_, err = Decode(strings.NewReader(strings.Replace(minimal, `mqtt: {broker: "tcp://127.0.0.1:1883"}`, `mqtt: {broker: "tcp://127.0.0.1:1883", password: hunter2}`, 1)))
	if err == nil || !strings.Contains(err.Error(), "password") {
		t.Fatalf("a password in the YAML was accepted: %v", err)
	}
}

func TestEmptyAndHugeFiles(t *testing.T) {
	if _, err := Decode(strings.NewReader("")); err == nil {
		t.Fatal("empty accepted")
	}
	if _, err := Decode(strings.NewReader(strings.Repeat("#", 1<<20+10))); err == nil {
		t.Fatal("huge accepted")
	}
}

// wantDecode checks what Decode and Validate say of yaml: nothing when want
// is "", else an error that contains want (a field's path, or its whole
// complaint); what names the case in a failure.
func wantDecode(t *testing.T, what, yaml, want string) {
	t.Helper()
	c, err := Decode(strings.NewReader(yaml))
	if err == nil {
		err = c.Validate()
	}
	switch {
	case want == "" && err != nil:
		t.Errorf("%s: %v", what, err)
	case want != "" && (err == nil || !strings.Contains(err.Error(), want)):
		t.Errorf("%s: err = %v, want %q", what, err, want)
	}
}

// shippedConfigs lists every shipped config: those of firmware-configs
// and of its livingroom, demo and demo-llm folders.
func shippedConfigs() []string {
	var files []string
	for _, dir := range []string{"", "livingroom", "demo", "demo-llm"} {
		f, _ := filepath.Glob(filepath.Join("../../firmware-configs", dir, "*.yaml"))
		files = append(files, f...)
	}
	return files
}

// TestFirmwareConfigs loads and validates every shipped config.
func TestFirmwareConfigs(t *testing.T) {
	files := shippedConfigs()
	if len(files) < 10 {
		t.Fatalf("only %d firmware configs", len(files))
	}
	for _, f := range files {
		c, err := Load(f)
		if err != nil {
			t.Errorf("%v", err)
			continue
		}
		// With a model brain the closing is up to the model and the
		// repetition judge: every shipped turn-mode room also ends after
		// max_turn, whatever they say (issue 18, defect 5).
		if c.Room.Mode == config.ModeTurn && c.Room.MaxTurn <= 0 {
			t.Errorf("%s: room.max_turn is not set", f)
		}
	}
}

// The repetition judge's switch and its bounds (issue 18, defect 5).
func TestRepetitionJudgeConfig(t *testing.T) {
	base := "version: 1\ndevice: {id: dev1}\nmqtt: {broker: \"tcp://127.0.0.1:1883\"}\nroom:\n  name: lab\n  members: [k]\n"
	c, err := Decode(strings.NewReader(base))
	if err != nil {
		t.Fatal(err)
	}
	if r := c.Room.Repetition; r.Judge != repetition.JudgeModel || r.JudgeEvery != 4 || r.JudgeTimeout != 10*time.Second {
		t.Fatalf("defaults: %+v", r)
	}
	for _, tt := range []struct{ yaml, field string }{
		{"  repetition: {judge: off}\n", ""},
		{"  repetition: {judge: local, judge_every: 2, judge_timeout: 3s}\n", ""},
		{"  repetition: {judge: maybe}\n", "room.repetition.judge:"},
		{"  repetition: {judge_every: -1}\n", "room.repetition.judge_every:"},
		{"  repetition: {judge_timeout: -1s}\n", "room.repetition.judge_timeout:"},
	} {
		wantDecode(t, tt.yaml, base+tt.yaml, tt.field)
	}
}

func FuzzDecode(f *testing.F) {
	f.Add([]byte(minimal))
	f.Add([]byte("version: 1\ndevice: {id: [1,2]}\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		c, err := Decode(strings.NewReader(string(b)))
		if err == nil && c.Validate() != nil {
			t.Fatal("Decode accepted what Validate rejects")
		}
	})
}

// A value of the wrong type names its field's path, as every other error
// does, and does not hide the file's other problems (issue 9, defect 9).
func TestTypeErrorsNameTheFieldAndKeepTheOthers(t *testing.T) {
	bad := `version: 1
device: {id: dev1}
room:
  name: lab
  members: [k]
  vote_timeout: soon
  max_pending: many
mqtt: {broker: "tcp://127.0.0.1:1883"}
drivers:
  camera: {kind: webcam, fps: fast}
log: {level: loud}
`
	_, err := Decode(strings.NewReader(bad))
	if err == nil {
		t.Fatal("accepted")
	}
	for _, want := range []string{
		`room.vote_timeout: must be a duration such as 3s or 500ms, got "soon"`,
		`room.max_pending: must be a whole number, got "many"`,
		`drivers.camera.fps: must be a whole number, got "fast"`,
		"log.level:", // the other errors are still reported
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q:\n%v", want, err)
		}
	}
	if strings.Contains(err.Error(), "cannot unmarshal") {
		t.Errorf("the decoder's wording leaks through:\n%v", err)
	}
	// The field with a bad type is reported once, not also as "must be from 10ms".
	if strings.Count(err.Error(), "room.vote_timeout") != 1 {
		t.Errorf("room.vote_timeout reported more than once:\n%v", err)
	}
}

// The room's deadline and its companions' thinking time must agree: a
// brain timeout longer than the room's vote ceiling is flagged, as is an
// utterance cap above what the body speaks (issue 15).
func TestBrainAndRoomNumbersAgree(t *testing.T) {
	base := `version: 1
device: {id: dev1}
room: {name: lab, members: [k], vote_timeout: 3s, vote_ceiling: 15s}
mqtt: {broker: "tcp://127.0.0.1:1883"}
companion: {id: k, name: K, language: en}
`
	for _, c := range []struct {
		brain, want string
	}{
		{"brain: {provider: openai, model: m, timeout: 20s}", "brain.timeout: 20s is longer than room.vote_ceiling 15s"},
		{"brain: {provider: rule, max_utterance: 5000}\ndrivers: {tts: {max_chars: 2000}}", "brain.max_utterance: must be from 10 to drivers.tts.max_chars (2000)"},
		{"brain: {provider: openai, model: m, timeout: 10s, max_utterance: 400}", ""},
	} {
		wantDecode(t, c.brain, base+c.brain+"\n", c.want)
	}
	_, err := Decode(strings.NewReader(strings.Replace(base, "vote_ceiling: 15s", "vote_ceiling: 1s", 1)))
	if err == nil || !strings.Contains(err.Error(), "room.vote_ceiling: must be from room.vote_timeout (3s)") {
		t.Errorf("a ceiling below the timeout: %v", err)
	}
}

// The shipped configs of one room agree on what the room is.
func TestShippedRoomsAgree(t *testing.T) {
	rooms := map[string]*Config{}
	for _, f := range shippedConfigs() {
		c, err := Load(f)
		if err != nil {
			t.Fatal(err)
		}
		first, ok := rooms[c.Room.Name]
		if !ok {
			rooms[c.Room.Name] = c
			continue
		}
		a, b := first.Room, c.Room
		if strings.Join(a.Members, ",") != strings.Join(b.Members, ",") || a.VoteTimeout != b.VoteTimeout || a.VoteCeiling != b.VoteCeiling ||
			first.MQTT.Prefix != c.MQTT.Prefix || strings.Join(first.MQTT.FloorIDs, ",") != strings.Join(c.MQTT.FloorIDs, ",") {
			t.Errorf("%s and %s disagree about room %s: %+v vs %+v", first.Path(), c.Path(), a.Name, a, b)
		}
	}
}

// Secure defaults (issue 10): the embedded broker takes anonymous clients
// only on a loopback listener; TLS files come in pairs.
func TestSecureDefaults(t *testing.T) {
	base := `version: 1
device: {id: dev1}
room: {name: lab, members: [k]}
`
	for _, c := range []struct {
		mqtt, want string
	}{
		{`mqtt: {embedded: {enabled: true, listen: "0.0.0.0:1883", allow_anonymous: true}}`,
			`mqtt.embedded.allow_anonymous: anonymous clients are allowed only on a loopback listener`},
		{`mqtt: {embedded: {enabled: true, listen: "127.0.0.1:1883", allow_anonymous: true}}`, ""},
		{`mqtt: {embedded: {enabled: true, listen: "localhost:1883", allow_anonymous: true}}`, ""},
		{`mqtt: {embedded: {enabled: true, listen: "0.0.0.0:1883"}}`, "mqtt.embedded.users_file: required unless allow_anonymous is true"},
		{`mqtt: {embedded: {enabled: true, listen: "127.0.0.1:1883", allow_anonymous: true, tls_client_ca: ca.pem}}`,
			"mqtt.embedded.tls_client_ca: needs tls_cert and tls_key"},
		{`mqtt: {broker: "ssl://broker:8883", tls: {cert_file: c.pem}}`, "mqtt.tls.key_file: cert_file and key_file go together"},
	} {
		wantDecode(t, c.mqtt, base+c.mqtt+"\n", c.want)
	}
	c, err := Decode(strings.NewReader(base + `mqtt: {broker: "tcp://127.0.0.1:1883"}` + "\n"))
	if err != nil {
		t.Fatal(err)
	}
	if c.HTTP.Listen != "127.0.0.1:9100" {
		t.Errorf("HTTP listens on %q by default, want loopback", c.HTTP.Listen)
	}
	if ws := c.HTTP.WebSocket; ws.MaxFrame != 64<<10 || ws.MaxDeviceFrame != protocol.DefaultMaxResultBytes {
		t.Errorf("bridge frames: %d for viewers and users, %d for devices by default; want 64 KiB and a query result's", ws.MaxFrame, ws.MaxDeviceFrame)
	}
}

// The WebSocket bridge: loopback unless configured, a token required off
// loopback, clients without a token only on loopback; the tokens file is
// read strictly.
func TestWebSocketBridgeConfig(t *testing.T) {
	base := "version: 1\ndevice: {id: dev1}\nroom: {name: lab, members: [k]}\nmqtt: {broker: \"tcp://127.0.0.1:1883\"}\n"
	for _, c := range []struct{ http, want string }{
		{`http: {websocket: {enabled: true}}`, ""},
		{`http: {websocket: {enabled: true, anonymous: "user:console"}}`, ""},
		{`http: {listen: "0.0.0.0:9100", websocket: {enabled: true}}`, "http.websocket.tokens_file: a token is required off loopback"},
		{`http: {listen: "0.0.0.0:9100", websocket: {enabled: true, tokens_file: t.yaml, anonymous: viewer}}`,
			"http.websocket.anonymous: clients without a token are allowed only on a loopback listener"},
		{`http: {listen: "0.0.0.0:9100", websocket: {enabled: true, tokens_file: t.yaml}}`, ""},
		{`http: {listen: "off", websocket: {enabled: true}}`, "http.websocket.enabled: needs http.listen"},
		{`http: {websocket: {enabled: true, anonymous: "admin:root"}}`, `http.websocket.anonymous: must be "viewer" or "user:NAME"`},
		{`http: {websocket: {enabled: true, tokens_file: a.yaml, tokens_env: B}}`, "give tokens_file or tokens_env, not both"},
		{`http: {websocket: {enabled: true, max_clients: -1}}`, "http.websocket.max_clients"},
		{`http: {websocket: {enabled: true, max_frame: 131072, max_device_frame: 4194304}}`, ""},
		{`http: {websocket: {enabled: true, max_frame: 100}}`, "http.websocket.max_frame: must be 0 (default 65536) or from 1024 to 1048576"},
		{`http: {websocket: {enabled: true, max_frame: 16777216}}`, "http.websocket.max_frame"},
		{"query: {max_result: 2097152}\nhttp: {websocket: {enabled: true, max_device_frame: 4194304}}", "http.websocket.max_device_frame: must be 0 (default query.max_result) or from 1024 bytes to query.max_result (2097152"},
		{`http: {websocket: {enabled: true, max_device_frame: -5}}`, "http.websocket.max_device_frame"},
		{`http: {websocket: {enabled: true, anonymous: "user:k"}}`, `http.websocket.anonymous: "k" is a companion or the floor`},
		{`http: {websocket: {enabled: true, anonymous: "user:floor"}}`, `http.websocket.anonymous: "floor" is a companion or the floor`},
	} {
		wantDecode(t, c.http, base+c.http+"\n", c.want)
	}
	for _, c := range []struct{ tokens, want string }{
		{"- {token: 0123456789abcdef, role: user, name: alice}\n- {token: fedcba9876543210, role: viewer}\n", ""},
		{"- {token: short, role: user, name: alice}\n", "token must be at least 16 characters"},
		{"- {token: 0123456789abcdef, role: admin, name: alice}\n", "role must be viewer, user or device"},
		{"- {token: 0123456789abcdef, role: device, name: \"a/b\"}\n", "entry 1: name"},
		{"- {token: 0123456789abcdef, role: user, name: alice, colour: red}\n", "colour"},
		{"- {token: 0123456789abcdef, role: user, name: alice}\n- {token: 0123456789abcdef, role: viewer}\n", "entries 1 and 2 have the same token"},
	} {
		t.Setenv("CHORUS_TEST_TOKENS", c.tokens)
		ts, err := WebSocket{TokensEnv: "CHORUS_TEST_TOKENS"}.Tokens()
		switch {
		case c.want == "" && (err != nil || len(ts) != 2):
			t.Errorf("%q: %v %v", c.tokens, ts, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%q: err = %v, want %q", c.tokens, err, c.want)
		}
		if err != nil && strings.Contains(err.Error(), "0123456789abcdef") {
			t.Errorf("the error quotes the token: %v", err)
		}
	}
	c, err := Decode(strings.NewReader(base))
	if err != nil {
		t.Fatal(err)
	}
	if err := c.CheckBridgeTokens([]BridgeToken{{Token: "0123456789abcdef", Role: "user", Name: "k"}}); err == nil || !strings.Contains(err.Error(), `user "k" is a companion`) {
		t.Errorf("a user token named like a companion: %v", err)
	}
	if err := c.CheckBridgeTokens([]BridgeToken{{Token: "0123456789abcdef", Role: "device", Name: "k"}}); err != nil {
		t.Errorf("a device token named like a companion (a robot's own body): %v", err)
	}
}

// FuzzTokens feeds the bridge's tokens parser anything a tokens file could
// hold: it never panics, and what it accepts passes its own checks.
func FuzzTokens(f *testing.F) {
	f.Add("- {token: 0123456789abcdef, role: user, name: alice}\n")
	f.Add("- {token: 0123456789abcdef, role: device, name: kiosk, mqtt_password_env: X, camera: true}\n- {token: fedcba9876543210, role: viewer}\n")
	f.Add("[]")
	f.Add("- {token: x}")
	f.Fuzz(func(t *testing.T, text string) {
		ts, err := parseTokens("http.websocket.tokens_file", text)
		if err != nil {
			return
		}
		for _, tok := range ts {
			if len(tok.Token) < 16 || !slices.Contains([]string{"viewer", "user", "device"}, tok.Role) {
				t.Fatalf("accepted %+v", tok)
			}
		}
	})
}

// device.arch is one of Arches or empty (chorus install compares it with
// the binary's GOARCH).
func TestDeviceArch(t *testing.T) {
	for _, tc := range []struct{ arch, want string }{
		{"", ""}, {"arm64", ""}, {"armv7", ""}, {"armv6", ""}, {"amd64", ""},
		{"aarch64", `device.arch: must be one of arm64, armv7, armv6, amd64, got "aarch64"`},
		{"arm", `device.arch: must be one of`},
	} {
		y := "version: 1\ndevice: {id: dev1, arch: \"" + tc.arch + "\"}\nroom: {name: lab, members: [k]}\nmqtt: {broker: \"tcp://127.0.0.1:1883\"}\n"
		wantDecode(t, "arch "+strconv.Quote(tc.arch), y, tc.want)
	}
}
