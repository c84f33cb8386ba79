package install

import (
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/chorus-robotics/chorus/device/robot"
	"github.com/chorus-robotics/chorus/runtime/broker"
)

var (
	buildOnce sync.Once
	built     string
	buildErr  error
)

// chorusd builds the pure-Go chorusd for this machine once per test run.
func chorusd(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "chorus-install-test")
		if err != nil {
			buildErr = err
			return
		}
		built = filepath.Join(dir, "chorusd")
		cmd := exec.Command("go", "build", "-o", built, "github.com/chorus-robotics/chorus/cmd/chorusd")
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if b, err := cmd.CombinedOutput(); err != nil {
			buildErr = fmt.Errorf("build: %v\n%s", err, b)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return built
}

func TestMain(m *testing.M) {
	code := m.Run()
	if built != "" {
		os.RemoveAll(filepath.Dir(built))
	}
	os.Exit(code)
}

// robotYAML is an installable robot config: an embedded broker with a users
// file, the bridge with a tokens file, pure-Go drivers. extra lines are
// added to the device section; replace swaps text.
func robotYAML(t *testing.T, replace ...string) string {
	t.Helper()
	y := `version: 1
device:
  id: pi-kyoko
  model: test robot
room:
  name: lab
  members: [kyoko, hana]
  floor: true
mqtt:
  broker: tcp://127.0.0.1:1883
  username: kyoko
  password_env: CHORUS_MQTT_PASSWORD
  floor_password_env: CHORUS_FLOOR_PASSWORD
  embedded:
    enabled: true
    listen: 0.0.0.0:1883
    users_file: /etc/chorus/mqtt-users.yaml
companion:
  id: kyoko
  name: Kyoko
  personality: curious
  language: en
brain:
  provider: rule
drivers:
  camera: {kind: testpattern, width: 320, height: 240, fps: 5}
  audio: {kind: wav, dir: /var/lib/chorus/out}
  tts: {kind: tone}
http:
  listen: 0.0.0.0:9100
  websocket:
    enabled: true
    tokens_file: /etc/chorus/bridge-tokens.yaml
`
	for i := 0; i+1 < len(replace); i += 2 {
		if !strings.Contains(y, replace[i]) {
			t.Fatalf("robot config has no %q", replace[i])
		}
		y = strings.Replace(y, replace[i], replace[i+1], 1)
	}
	p := filepath.Join(t.TempDir(), "robot.yaml")
	if err := os.WriteFile(p, []byte(y), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestInstallIsIdempotent(t *testing.T) {
	root, bin, cfg := t.TempDir(), chorusd(t), robotYAML(t)
	rep, err := Run(Options{Root: root, Config: cfg, Binary: bin})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range rep.Steps {
		if !s.Changed {
			t.Errorf("%s not written on a fresh root", s.Path)
		}
	}
	if st, _ := os.Stat(filepath.Join(root, EnvPath)); st.Mode().Perm() != 0o600 {
		t.Errorf("environment file mode %v, want 0600 (it holds secrets)", st.Mode().Perm())
	}
	os.WriteFile(filepath.Join(root, EnvPath), []byte("CHORUS_MQTT_PASSWORD=s3cret\n"), 0o600)
	rep, err = Run(Options{Root: root, Config: cfg, Binary: bin})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range rep.Steps {
		if s.Changed {
			t.Errorf("%s rewritten on the second run", s.Path)
		}
	}
	if len(rep.Secrets) != 0 {
		t.Errorf("second run printed secrets again: %v", rep.Secrets)
	}
	if b, _ := os.ReadFile(filepath.Join(root, EnvPath)); string(b) != "CHORUS_MQTT_PASSWORD=s3cret\n" {
		t.Error("the environment file with secrets was overwritten")
	}
	want := []Variable{{"CHORUS_MQTT_PASSWORD", "mqtt.password_env", true}, {"CHORUS_FLOOR_PASSWORD", "mqtt.floor_password_env", false}}
	if fmt.Sprint(rep.Variables) != fmt.Sprint(want) {
		t.Errorf("variables %v, want %v", rep.Variables, want)
	}
}

// TestGeneratesTheFilesTheConfigNames: the broker's users and the bridge's
// tokens are laid down with strong secrets, mode 0600, printed once; the
// fresh environment file holds this robot's own passwords, so the
// installed tree starts; an existing file is never overwritten.
func TestGeneratesTheFilesTheConfigNames(t *testing.T) {
	root, cfg := t.TempDir(), robotYAML(t)
	rep, err := Run(Options{Root: root, Config: cfg, Binary: chorusd(t)})
	if err != nil {
		t.Fatal(err)
	}
	usersPath := filepath.Join(root, "etc/chorus/mqtt-users.yaml")
	users, err := broker.Settings{UsersFile: usersPath}.Users()
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"kyoko", "pi-kyoko", "floor", "hana", "guest"} {
		if len(users[name]) < 40 {
			t.Errorf("user %s: password %q, want 32 random bytes", name, users[name])
		}
	}
	if users["kyoko"] != users["pi-kyoko"] || users["kyoko"] == users["floor"] || users["kyoko"] == users["hana"] {
		t.Errorf("passwords: the robot's user and device share one, the floor and others have their own: %v", users)
	}
	tokens, err := robot.WebSocket{TokensFile: filepath.Join(root, "etc/chorus/bridge-tokens.yaml")}.Tokens()
	if err != nil || len(tokens) != 2 || tokens[0].Token == tokens[1].Token {
		t.Fatalf("tokens %v, %v", tokens, err)
	}
	for _, f := range []string{"etc/chorus/mqtt-users.yaml", "etc/chorus/bridge-tokens.yaml", EnvPath} {
		if st, err := os.Stat(filepath.Join(root, f)); err != nil || st.Mode().Perm() != 0o600 {
			t.Errorf("%s: %v, mode %v, want 0600", f, err, st.Mode().Perm())
		}
	}
	env, _ := os.ReadFile(filepath.Join(root, EnvPath))
	for k, v := range map[string]string{"CHORUS_MQTT_PASSWORD": users["kyoko"], "CHORUS_FLOOR_PASSWORD": users["floor"], GuestPasswordEnv: users["guest"]} {
		if !strings.Contains(string(env), "\n"+k+"="+v+"\n") {
			t.Errorf("environment file lacks %s=<its generated password>:\n%s", k, env)
		}
	}
	printed := map[string]bool{}
	for _, s := range rep.Secrets {
		printed[s.Value] = true
	}
	if !printed[users["hana"]] || !printed[tokens[1].Token] {
		t.Errorf("generated secrets not reported: %v", rep.Secrets)
	}
	tmpf, _ := os.ReadFile(filepath.Join(root, TmpfilesPath))
	for _, line := range []string{"z /etc/chorus/mqtt-users.yaml 0600 chorus chorus -", "d /var/lib/chorus/out 0750 chorus chorus -"} {
		if !strings.Contains(string(tmpf), line) {
			t.Errorf("tmpfiles.d entry lacks %q:\n%s", line, tmpf)
		}
	}
	if st, err := os.Stat(filepath.Join(root, "var/lib/chorus/out")); err != nil || !st.IsDir() {
		t.Errorf("the wav output's folder was not made: %v", err)
	}

	// Present files are kept, whatever passwords they hold.
	mine := "kyoko: mine\npi-kyoko: mine\nfloor: f\nhana: h\n"
	os.WriteFile(usersPath, []byte(mine), 0o600)
	rep, err = Run(Options{Root: root, Config: cfg, Binary: chorusd(t)})
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(usersPath); string(b) != mine {
		t.Errorf("users file overwritten: %s", b)
	}
	if len(rep.Secrets) != 0 {
		t.Errorf("secrets reported for kept files: %v", rep.Secrets)
	}
}

func TestRefusesAnInvalidConfigBeforeWriting(t *testing.T) {
	root := t.TempDir()
	bad := filepath.Join(t.TempDir(), "bad.yaml")
	os.WriteFile(bad, []byte("version: 1\ndevice: {id: x}\nroom: {name: lab, members: [x]}\nmqtt: {broker: nowhere}\n"), 0o644)
	_, err := Run(Options{Root: root, Config: bad, Binary: "/bin/true"})
	if err == nil || !strings.Contains(err.Error(), "mqtt.broker") {
		t.Fatalf("err = %v", err)
	}
	if ents, _ := os.ReadDir(root); len(ents) != 0 {
		t.Fatalf("wrote %d entries for an invalid config", len(ents))
	}
}

// TestRefusesWhatCannotStart: each refusal names what is wrong, and
// nothing is written.
func TestRefusesWhatCannotStart(t *testing.T) {
	script := filepath.Join(t.TempDir(), "chorusd")
	os.WriteFile(script, []byte("#!/bin/sh\necho chorusd\n"), 0o755)
	self, _ := os.Executable() // a Go binary, not chorusd
	for _, tc := range []struct {
		name    string
		cfg     string
		binary  string
		wantErr []string
	}{
		{"not a Go binary (C)", robotYAML(t), "/bin/true", []string{"/bin/true is not a Go binary"}},
		{"not a Go binary (script)", robotYAML(t), script, []string{"is not a Go binary"}},
		{"a Go binary, not chorusd", robotYAML(t), self, []string{"not chorusd"}},
		{"another board", robotYAML(t, "model: test robot", "model: test robot\n  arch: "+otherArch()), chorusd(t),
			[]string{"built for linux/" + runtime.GOARCH, "the board is " + otherArch() + " (device.arch)"}},
		{"driver not built in", robotYAML(t, "{kind: testpattern,", "{kind: gocv, device: \"0\","), chorusd(t),
			[]string{`drivers.camera.kind: camera source "gocv" is not in this chorusd`, "build it with -tags gocv"}},
		{"two drivers not built in", robotYAML(t, "{kind: testpattern,", "{kind: gocv, device: \"0\",", "{kind: wav, dir: /var/lib/chorus/out}", "{kind: portaudio}"), chorusd(t),
			[]string{"-tags gocv", `drivers.audio.kind: audio output "portaudio" is not in this chorusd`, "-tags portaudio"}},
		{"a TLS file not in the root", robotYAML(t, "    users_file:", "    tls_cert: /etc/chorus/broker.pem\n    tls_key: /etc/chorus/broker.key\n    users_file:"), chorusd(t),
			[]string{"mqtt.embedded.tls_cert: /etc/chorus/broker.pem is not in the root", "mqtt.embedded.tls_key"}},
		{"a relative users file", robotYAML(t, "users_file: /etc/chorus/mqtt-users.yaml", "users_file: mqtt-users.yaml"), chorusd(t),
			[]string{`mqtt.embedded.users_file: "mqtt-users.yaml" must be an absolute path`}},
		{"a wav folder chorusd may not write", robotYAML(t, "dir: /var/lib/chorus/out", "dir: /opt/out"), chorusd(t),
			[]string{"drivers.audio.dir: chorusd.service may write only under /var/lib/chorus"}},
		{"a password file nobody lays down", robotYAML(t, "users_file: /etc/chorus/mqtt-users.yaml", "allow_anonymous: false\n    users_file: /etc/chorus/mqtt-users.yaml\n  password_file: /etc/chorus/pw", "password_env: CHORUS_MQTT_PASSWORD", ""),
			chorusd(t), nil}, // generated with the users file: no refusal
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			_, err := Run(Options{Root: root, Config: tc.cfg, Binary: tc.binary})
			if tc.wantErr == nil {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil {
				t.Fatal("installed")
			}
			for _, w := range tc.wantErr {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error lacks %q:\n%v", w, err)
				}
			}
			// The command prints "chorus install: " before it.
			if strings.HasPrefix(err.Error(), "install:") {
				t.Errorf("error stutters: chorus install: %v", err)
			}
			if ents, _ := os.ReadDir(root); len(ents) != 0 {
				t.Errorf("wrote %d entries before refusing", len(ents))
			}
		})
	}
}

func otherArch() string {
	if runtime.GOARCH == "arm64" {
		return "amd64"
	}
	return "arm64"
}

func TestTargetFits(t *testing.T) {
	for _, tc := range []struct {
		goarch, goarm, arch string
		fits                bool
	}{
		{"arm64", "", "arm64", true},
		{"arm64", "", "", true},
		{"amd64", "", "arm64", false},
		{"arm", "7", "arm64", false},
		{"arm", "7", "armv7", true},
		{"arm", "6", "armv7", true},
		{"arm", "7", "armv6", false},
		{"arm", "6", "armv6", true},
		{"arm64", "", "armv7", false},
	} {
		tg := Target{GOARCH: tc.goarch, GOARM: tc.goarm}
		if got := tg.Fits(tc.arch); got != tc.fits {
			t.Errorf("linux/%s (GOARM %s) on %q: fits %v, want %v", tc.goarch, tc.goarm, tc.arch, got, tc.fits)
		}
	}
}

func TestTargetReadsBuildSettings(t *testing.T) {
	bi := &debug.BuildInfo{Path: ChorusdPath, Settings: []debug.BuildSetting{
		{Key: "-tags", Value: "gocv,portaudio"}, {Key: "GOOS", Value: "linux"}, {Key: "GOARCH", Value: "arm"},
		{Key: "GOARM", Value: "7,softfloat"}, {Key: "vcs.revision", Value: "abc"}}}
	got := targetOf(bi)
	want := Target{Path: ChorusdPath, GOOS: "linux", GOARCH: "arm", GOARM: "7", Tags: []string{"gocv", "portaudio"}, Revision: "abc"}
	if fmt.Sprint(got) != fmt.Sprint(want) || got.Arch() != "armv7" {
		t.Errorf("got %+v (%s), want %+v", got, got.Arch(), want)
	}
}

func analyze(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("systemd-analyze")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("systemd-analyze missing (apt-get install systemd)")
		}
		t.Skip("systemd-analyze not installed")
	}
	return p
}

// TestUnitVerifies runs systemd-analyze verify on the installed unit, with
// ExecStart pointed at a real chorusd (verify checks that it is executable
// on this machine; --root would need a whole systemd tree).
func TestUnitVerifies(t *testing.T) {
	sa := analyze(t)
	root := t.TempDir()
	bin := chorusd(t)
	if _, err := Run(Options{Root: root, Config: robotYAML(t), Binary: bin}); err != nil {
		t.Fatal(err)
	}
	unit, _ := os.ReadFile(filepath.Join(root, UnitPath))
	local := filepath.Join(t.TempDir(), "chorusd.service")
	os.WriteFile(local, []byte(strings.ReplaceAll(string(unit), "/usr/local/bin/chorusd", filepath.Join(root, BinaryPath))), 0o644)
	out, err := exec.Command(sa, "verify", "--man=no", local).CombinedOutput()
	if err != nil || len(strings.TrimSpace(string(out))) > 0 {
		t.Fatalf("systemd-analyze verify: %v\n%s", err, out)
	}
}

// TestUnitIsHardened fails above an exposure of 2.5 (an unhardened unit
// scores about 9.6).
func TestUnitIsHardened(t *testing.T) {
	sa := analyze(t)
	out, _ := exec.Command(sa, "security", "--offline=true", "--no-pager", "../../../../systemd/chorusd.service").CombinedOutput()
	m := regexp.MustCompile(`Overall exposure level for chorusd.service: ([0-9.]+)`).FindSubmatch(out)
	if m == nil {
		t.Fatalf("no exposure level in:\n%s", out)
	}
	level, _ := strconv.ParseFloat(string(m[1]), 64)
	t.Logf("exposure %.1f", level)
	if level > 2.5 {
		t.Fatalf("exposure %.1f > 2.5:\n%s", level, out)
	}
}

// The secret files go to the service user when the installer runs as root
// and the root's own /etc/passwd has it (an installed system); otherwise
// they stay root's and the tmpfiles.d entry hands them over on boot.
func TestSecretFilesOwnedByTheServiceUser(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("chown needs root")
	}
	for _, tc := range []struct {
		name   string
		passwd string
		uid    int
	}{
		{"user in the root", "root:x:0:0::/root:/bin/sh\nchorus:x:994:993:Chorus:/var/lib/chorus:/usr/sbin/nologin\n", 994},
		{"user created on first boot", "root:x:0:0::/root:/bin/sh\n", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			os.MkdirAll(filepath.Join(root, "etc"), 0o755)
			os.WriteFile(filepath.Join(root, "etc/passwd"), []byte(tc.passwd), 0o644)
			rep, err := Run(Options{Root: root, Config: robotYAML(t), Binary: chorusd(t)})
			if err != nil {
				t.Fatal(err)
			}
			for _, f := range []string{"etc/chorus/mqtt-users.yaml", "etc/chorus/bridge-tokens.yaml", "var/lib/chorus/out"} {
				st, err := os.Stat(filepath.Join(root, f))
				if err != nil {
					t.Fatal(err)
				}
				if uid := int(st.Sys().(*syscall.Stat_t).Uid); uid != tc.uid {
					t.Errorf("%s owned by %d, want %d", f, uid, tc.uid)
				}
			}
			if st, _ := os.Stat(filepath.Join(root, EnvPath)); st.Sys().(*syscall.Stat_t).Uid != 0 {
				t.Error("/etc/default/chorusd is not root's (systemd reads it)")
			}
			noted := strings.Contains(fmt.Sprint(rep.Notes), "from the next boot on")
			if noted != (tc.uid == 0) {
				t.Errorf("notes %v", rep.Notes)
			}
		})
	}
}

// A users file generated anew (the old one gone, or users_file changed)
// brings new passwords: the existing environment file gets them in place
// of the old ones, keeping its other lines, so the robot still logs in to
// its own broker.
func TestNewUsersFileUpdatesTheEnvironmentFile(t *testing.T) {
	root, cfg := t.TempDir(), robotYAML(t)
	if _, err := Run(Options{Root: root, Config: cfg, Binary: chorusd(t)}); err != nil {
		t.Fatal(err)
	}
	envPath := filepath.Join(root, EnvPath)
	old, _ := os.ReadFile(envPath)
	os.WriteFile(envPath, append(old, "CHORUS_LLM_API_KEY=sk-keep\n"...), 0o600)
	usersPath := filepath.Join(root, "etc/chorus/mqtt-users.yaml")
	os.Remove(usersPath)
	rep, err := Run(Options{Root: root, Config: cfg, Binary: chorusd(t)})
	if err != nil {
		t.Fatal(err)
	}
	users, err := broker.Settings{UsersFile: usersPath}.Users()
	if err != nil {
		t.Fatal(err)
	}
	env, _ := os.ReadFile(envPath)
	for k, v := range map[string]string{"CHORUS_MQTT_PASSWORD": users["kyoko"], "CHORUS_FLOOR_PASSWORD": users["floor"]} {
		if n := strings.Count(string(env), "\n"+k+"="); n != 1 || !strings.Contains(string(env), "\n"+k+"="+v+"\n") {
			t.Errorf("environment file has %d lines of %s, want one with the new users file's password:\n%s", n, k, env)
		}
	}
	if !strings.Contains(string(env), "\nCHORUS_LLM_API_KEY=sk-keep\n") || !strings.HasPrefix(string(env), "# /etc/default/chorusd") {
		t.Errorf("the environment file's other lines were not kept:\n%s", env)
	}
	if st, _ := os.Stat(envPath); st.Mode().Perm() != 0o600 {
		t.Errorf("environment file mode %v, want 0600", st.Mode().Perm())
	}
	if !strings.Contains(strings.Join(rep.Notes, "\n"), "set CHORUS_MQTT_PASSWORD, CHORUS_FLOOR_PASSWORD") {
		t.Errorf("the update is not reported: %v", rep.Notes)
	}
}

// An existing users file that lacks an identity the config needs is
// refused, naming the missing users, before anything is written.
func TestRefusesAUsersFileLackingTheRobotsUsers(t *testing.T) {
	for _, tc := range []struct{ users, missing string }{
		{"someone: x\n", "kyoko, pi-kyoko, floor, hana"},
		{"kyoko: a\npi-kyoko: a\nhana: h\n", "floor"},
		{"kyoko: a\nfloor: f\nhana: h\n", "pi-kyoko"},
	} {
		root, cfg := t.TempDir(), robotYAML(t)
		os.MkdirAll(filepath.Join(root, "etc/chorus"), 0o755)
		os.WriteFile(filepath.Join(root, "etc/chorus/mqtt-users.yaml"), []byte(tc.users), 0o600)
		_, err := Run(Options{Root: root, Config: cfg, Binary: chorusd(t)})
		if err == nil || !strings.Contains(err.Error(), "/etc/chorus/mqtt-users.yaml in the root lacks "+tc.missing+",") {
			t.Errorf("users %q: err %v, want it to name %s", tc.users, err, tc.missing)
		}
		if exists(filepath.Join(root, BinaryPath)) {
			t.Errorf("users %q: refused but wrote the binary", tc.users)
		}
	}
}

// The closing line says the service starts on first boot only when the
// environment file sets every variable the config needs; otherwise it
// names what must be set first.
func TestNextNamesTheMissingSecret(t *testing.T) {
	root := t.TempDir()
	cfg := robotYAML(t, "  provider: rule\n", "  provider: openai\n  base_url: http://192.0.2.20:8080/v1\n  model: qwen\n  api_key_env: CHORUS_LLM_API_KEY\n")
	rep, err := Run(Options{Root: root, Config: cfg, Binary: chorusd(t)})
	if err != nil {
		t.Fatal(err)
	}
	next := rep.Next(root)
	if strings.Contains(next, "the service starts") || !strings.Contains(next, "cannot start until /etc/default/chorusd sets CHORUS_LLM_API_KEY (brain.api_key_env)") {
		t.Errorf("with the key unset: %q", next)
	}
	env, _ := os.ReadFile(filepath.Join(root, EnvPath))
	os.WriteFile(filepath.Join(root, EnvPath), append(env, "CHORUS_LLM_API_KEY=sk-lan\n"...), 0o600)
	if rep, err = Run(Options{Root: root, Config: cfg, Binary: chorusd(t)}); err != nil {
		t.Fatal(err)
	}
	if next := rep.Next(root); !strings.Contains(next, "on first boot: systemd-sysusers, then the service starts") {
		t.Errorf("with every variable set: %q", next)
	}
}

// A shipped config whose model server is on the LAN (llama.cpp, Ollama)
// names no API key variable: such a server needs none, and an unset one
// would fail the installed robot's --check-config at every start.
func TestShippedLANConfigsNeedNoKey(t *testing.T) {
	files, _ := filepath.Glob("../../../../firmware-configs/*.yaml")
	livingroom, _ := filepath.Glob("../../../../firmware-configs/livingroom/*.yaml")
	files = append(files, livingroom...)
	if len(files) == 0 {
		t.Fatal("no shipped configs found")
	}
	for _, f := range files {
		c, err := robot.Load(f)
		if err != nil {
			t.Errorf("%s: %v", f, err)
			continue
		}
		if c.Companion == nil || c.Brain.BaseURL == "" {
			continue
		}
		u, err := url.Parse(c.Brain.BaseURL)
		if err != nil {
			t.Errorf("%s: brain.base_url: %v", f, err)
			continue
		}
		if ip := net.ParseIP(u.Hostname()); ip != nil && (ip.IsPrivate() || ip.IsLoopback()) && c.Brain.APIKeyEnv != "" {
			t.Errorf("%s: a LAN model server (%s) with brain.api_key_env %s: the installed robot would not start without it", f, u.Host, c.Brain.APIKeyEnv)
		}
	}
}

// A link in the root that leads out of it (absolute: on this machine it
// is this machine's path; relative, climbing above the root) is refused,
// naming it, before anything is written; a relative link inside the root
// (merged /usr: lib -> usr/lib) is followed.
func TestRefusesLinksOutOfTheRoot(t *testing.T) {
	for _, tc := range []struct {
		name, link, target, want string
	}{
		{"absolute", "etc/default", "OUTSIDE", "/etc/default in the root ROOT is a link to the absolute path OUTSIDE"},
		{"absolute, deeper", "etc", "OUTSIDE", "/etc in the root ROOT is a link to the absolute path OUTSIDE"},
		{"relative, above the root", "etc/chorus", "../../outside", "/etc/chorus/chorus.yaml leads above the root ROOT"},
		{"final component", "etc/default/chorusd", "OUTSIDE/chorusd", "/etc/default/chorusd in the root ROOT is a link to the absolute path OUTSIDE/chorusd"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			root, outside := filepath.Join(dir, "root"), filepath.Join(dir, "outside")
			os.MkdirAll(outside, 0o755)
			link := filepath.Join(root, tc.link)
			os.MkdirAll(filepath.Dir(link), 0o755)
			if err := os.Symlink(strings.ReplaceAll(tc.target, "OUTSIDE", outside), link); err != nil {
				t.Fatal(err)
			}
			_, err := Run(Options{Root: root, Config: robotYAML(t), Binary: chorusd(t)})
			want := strings.NewReplacer("ROOT", root, "OUTSIDE", outside).Replace(tc.want)
			if err == nil || !strings.Contains(err.Error(), want) {
				t.Fatalf("err %v, want it to say %q", err, want)
			}
			if left, _ := os.ReadDir(outside); len(left) != 0 {
				t.Errorf("wrote outside the root: %v", left)
			}
			if exists(filepath.Join(root, BinaryPath)) {
				t.Error("refused but wrote the binary")
			}
		})
	}
	// Inside the root, a relative link is followed.
	root := t.TempDir()
	os.MkdirAll(filepath.Join(root, "real/default"), 0o755)
	os.MkdirAll(filepath.Join(root, "etc"), 0o755)
	os.Symlink("../real/default", filepath.Join(root, "etc/default"))
	if _, err := Run(Options{Root: root, Config: robotYAML(t), Binary: chorusd(t)}); err != nil {
		t.Fatal(err)
	}
	if !exists(filepath.Join(root, "real/default/chorusd")) {
		t.Error("the environment file was not written through the relative link")
	}
}
