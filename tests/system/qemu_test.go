package system

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chorus-robotics/chorus/runtime/bus"
	"github.com/chorus-robotics/chorus/runtime/bus/bustest"
	"github.com/chorus-robotics/chorus/runtime/logtest"
	"github.com/chorus-robotics/chorus/runtime/protocol"
)

// The flash path on an emulated arm64 (issue 19): `chorus install` lays the
// linux/arm64 chorusd that `make dist` builds into a root; Debian's
// qemu-user-static runs that installed chorusd, which comes up to READY on
// NOTIFY_SOCKET; a `chorus say` from the host gets a spoken answer (the
// audio grows, the companion's Message is seen); and --doctor passes under
// emulation against the running robot.
//
// qemu runs with -L ROOT: the binary sees the root's files where it has
// them (the broker's users file at /etc/chorus/...), and this machine's
// elsewhere (the programs a command driver runs are this machine's, run
// natively). The config is given by its path on this machine, so paths
// relative to it resolve inside the root.
//
// Skipped without qemu-aarch64-static, unless CHORUS_REQUIRE_QEMU=1 (CI).

// qemuRobotYAML is the installed robot: the embedded broker with a users
// file, the rule brain, the bridge (for a guest's password), the command
// camera on ffmpeg's test source, espeak-ng, and the command speaker
// appending its PCM to a file, and a nod (a program writing its arguments
// to a file). %[1]d is the broker's port, %[2]d the HTTP
// port, %[3]s a folder of this machine for the speaker's output.
const qemuRobotYAML = `version: 1
device:
  id: pi-kyoko
  model: emulated arm64 robot
  arch: arm64
room:
  name: lab
  members: [kyoko]
  floor: true
  vote_timeout: 3s
mqtt:
  broker: tcp://127.0.0.1:%[1]d
  username: kyoko
  password_env: CHORUS_MQTT_PASSWORD
  floor_password_env: CHORUS_FLOOR_PASSWORD
  embedded:
    enabled: true
    listen: 127.0.0.1:%[1]d
    users_file: /etc/chorus/mqtt-users.yaml
companion:
  id: kyoko
  name: Kyoko
  personality: curious
  language: en
brain:
  provider: rule
drivers:
  camera: {kind: command, command: [ffmpeg, -loglevel, error, -re, -f, lavfi, -i, "testsrc=size=320x240:rate=5", -f, mjpeg, -q:v, "5", "-"], fps: 5}
  audio: {kind: command, command: [sh, -c, "cat >> %[3]s/audio.raw"], sample_rate: 16000}
  tts: {kind: espeak-ng, voice: en-us}
body:
  actions:
    - {name: nod, description: Nod., driver: command, command: [sh, -c, "cat > %[3]s/nodded"]}
http:
  listen: 127.0.0.1:%[2]d
  websocket:
    enabled: true
    tokens_file: /etc/chorus/bridge-tokens.yaml
log:
  level: info
`

// qemuAudio is the audio the robot played: the raw PCM its command
// speaker (sh -c "cat >> FILE") wrote.
func qemuAudio(root, out string) func() (int64, error) {
	return func() (int64, error) {
		info, err := os.Stat(filepath.Join(out, "audio.raw"))
		if err != nil {
			return 0, err
		}
		return info.Size(), nil
	}
}

var arm64Build build

// maxRobotBytes is the robot's budget for chorusd: linux/arm64, stripped.
const maxRobotBytes = 16_000_000

// The robot's chorusd, built as make dist builds it for linux/arm64, fits
// the 16 MB its boards are flashed with (BENCHMARKS.md, "Binary size").
func TestTheRobotsChorusdFitsItsBudget(t *testing.T) {
	info, err := os.Stat(buildArm64(t))
	if err != nil {
		t.Fatal(err)
	}
	if info.Size() > maxRobotBytes {
		t.Fatalf("chorusd for linux/arm64 is %d bytes stripped, over the robot's %d", info.Size(), maxRobotBytes)
	}
	t.Logf("chorusd for linux/arm64: %d bytes stripped, %d left", info.Size(), maxRobotBytes-info.Size())
}

// buildArm64 cross-builds the pure-Go linux/arm64 chorusd as make dist
// does, once per test run.
func buildArm64(t *testing.T) string {
	return arm64Build.chorusd(t, "chorusd-linux-arm64", []string{"GOOS=linux", "GOARCH=arm64"}, "-trimpath", "-ldflags", "-s -w")
}

// build is one more chorusd the tests build, once per test run, beside
// the plain one (buildBinaries).
type build struct {
	once sync.Once
	bin  string
	err  error
}

// chorusd builds it as name with env and flags added to go build's.
func (b *build) chorusd(t *testing.T, name string, env []string, flags ...string) string {
	t.Helper()
	b.once.Do(func() {
		plain, _ := buildBinaries(t)
		b.bin = filepath.Join(filepath.Dir(plain), name)
		args := append(append([]string{"build"}, flags...), "-o", b.bin, "github.com/chorus-robotics/chorus/cmd/chorusd")
		cmd := exec.Command("go", args...)
		cmd.Env = append(append(os.Environ(), "CGO_ENABLED=0"), env...)
		if out, err := cmd.CombinedOutput(); err != nil {
			b.err = fmt.Errorf("go %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	})
	if b.err != nil {
		t.Fatal(b.err)
	}
	return b.bin
}

func qemu(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("qemu-aarch64-static")
	if err != nil {
		if os.Getenv("CHORUS_REQUIRE_QEMU") == "1" {
			t.Fatal("qemu-aarch64-static missing (apt-get install qemu-user-static)")
		}
		t.Skip("qemu-aarch64-static not installed (set CHORUS_REQUIRE_QEMU=1 to fail instead)")
	}
	return p
}

// readEnv reads an environment file as systemd's EnvironmentFile= does
// (KEY=VALUE lines, comments and blanks skipped).
func readEnv(t *testing.T, path string) []string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var env []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line != "" && !strings.HasPrefix(line, "#") && strings.Contains(line, "=") {
			env = append(env, line)
		}
	}
	return env
}

func TestEmulatedArm64RobotFromAnInstalledTree(t *testing.T) {
	q := qemu(t)
	_, chorus := buildBinaries(t)
	bin := buildArm64(t)
	dir := t.TempDir()
	root, out := filepath.Join(dir, "root"), filepath.Join(dir, "out")
	os.MkdirAll(out, 0o755)
	mqttPort, httpPort := bustest.FreePort(t), bustest.FreePort(t)
	cfg := filepath.Join(dir, "robot.yaml")
	os.WriteFile(cfg, []byte(fmt.Sprintf(qemuRobotYAML, mqttPort, httpPort, out)), 0o644)

	// The flash path: chorus install into the root, with the arm64 binary.
	inst, err := exec.Command(chorus, "install", "-root", root, "-config", cfg, "-binary", bin).CombinedOutput()
	if err != nil {
		t.Fatalf("chorus install: %v\n%s", err, inst)
	}
	t.Logf("chorus install:\n%s", inst)
	env := append(os.Environ(), readEnv(t, filepath.Join(root, "etc/default/chorusd"))...)
	installed := []string{q, "-L", root, filepath.Join(root, "usr/local/bin/chorusd"), "--config", filepath.Join(root, "etc/chorus/chorus.yaml")}

	// systemd's notify socket.
	sock := filepath.Join(dir, "notify")
	conn, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: sock, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	notes := make(chan string, 64)
	go func() {
		buf := make([]byte, 4096)
		for {
			n, err := conn.Read(buf)
			if err != nil {
				return
			}
			notes <- string(buf[:n])
		}
	}()

	d := exec.Command(installed[0], installed[1:]...)
	d.Env = append(env, "NOTIFY_SOCKET="+sock)
	start := time.Now()
	exited, stop := startChorusd(t, d)
	defer stop()
	ready := time.After(90 * time.Second)
wait:
	for {
		select {
		case n := <-notes:
			if strings.Contains(n, "READY=1") {
				break wait
			}
		case err := <-exited:
			t.Fatalf("chorusd under qemu exited before READY: %v", err)
		case <-ready:
			t.Fatal("no READY=1 on NOTIFY_SOCKET within 90 s")
		}
	}
	t.Logf("linux/arm64 chorusd under qemu: READY after %v", time.Since(start).Round(time.Millisecond))

	// A guest of the room (the bridge's generated user) watches and says
	// hello from this machine.
	guestPW := ""
	for _, kv := range readEnv(t, filepath.Join(root, "etc/default/chorusd")) {
		if v, ok := strings.CutPrefix(kv, "CHORUS_GUEST_PASSWORD="); ok {
			guestPW = v
		}
	}
	if guestPW == "" {
		t.Fatal("the installer put no CHORUS_GUEST_PASSWORD in /etc/default/chorusd")
	}
	broker := fmt.Sprintf("tcp://127.0.0.1:%d", mqttPort)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	watch, err := bus.Dial(ctx, bus.Options{Broker: broker, ClientID: "guest-watch", Username: "guest", Password: guestPW})
	if err != nil {
		t.Fatal(err)
	}
	defer watch.Close()
	answers := make(chan protocol.Message, 16)
	if err := watch.Subscribe(ctx, "chorus/rooms/lab/messages/kyoko", func(_ string, payload []byte) {
		if m, err := protocol.DecodeMessage(payload, 0); err == nil {
			select {
			case answers <- m:
			default:
			}
		}
	}); err != nil {
		t.Fatal(err)
	}
	audioSize := qemuAudio(root, out)
	before, _ := audioSize()
	say := exec.Command(chorus, "say", "-broker", broker, "-room", "lab", "-as", "guest", "-password-env", "CHORUS_GUEST_PASSWORD", "Hello Kyoko, how are you?")
	say.Env = append(os.Environ(), "CHORUS_GUEST_PASSWORD="+guestPW)
	if b, err := say.CombinedOutput(); err != nil {
		t.Fatalf("chorus say: %v\n%s", err, b)
	}
	said := time.Now()
	select {
	case m := <-answers:
		t.Logf("kyoko answered after %v: %q", time.Since(said).Round(time.Millisecond), m.Params.Message)
	case <-ctx.Done():
		t.Fatal("no Message from kyoko within 60 s of chorus say")
	}
	var after int64
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		if after, _ = audioSize(); after > before+1000 {
			break
		}
	}
	if after <= before+1000 {
		t.Fatalf("the audio did not grow: %d bytes before the answer, %d after", before, after)
	}
	t.Logf("audio grew by %d bytes", after-before)
	// Spoken to, the robot nods with its words (issue 22): the arm64 build's
	// actions — the schema check, the body, the program — under qemu.
	var nodded []byte
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		if nodded, err = os.ReadFile(filepath.Join(out, "nodded")); err == nil && len(nodded) > 0 {
			break
		}
	}
	if string(nodded) != "{}" {
		t.Fatalf("the arm64 robot did not nod: %q, %v", nodded, err)
	}

	// --doctor under emulation, against the running robot.
	// Its secrets come from the unit's environment file, which the doctor
	// reads itself (this process's environment does not have them).
	envFile := filepath.Join(root, "etc/default/chorusd")
	doc := exec.Command(installed[0], append(installed[1:3], filepath.Join(root, "usr/local/bin/chorusd"), "--doctor",
		"--config", filepath.Join(root, "etc/chorus/chorus.yaml"), "--env-file", envFile)...)
	doc.Env = os.Environ()
	report, err := doc.CombinedOutput()
	t.Logf("chorusd --doctor under qemu:\n%s", report)
	if err != nil {
		t.Fatalf("--doctor failed under emulation: %v", err)
	}
	for _, want := range []string{"✓ environment " + envFile + ": read, as chorusd.service does: set CHORUS_", "✓ camera (", "✓ audio output (", "✓ TTS (", "as kyoko (this device): accepted", "as floor (the floor): accepted", "all "} {
		if !strings.Contains(string(report), want) {
			t.Errorf("--doctor report lacks %q", want)
		}
	}
}

// startChorusd starts d, chorusd under qemu, with its stdout and stderr
// in one log; exited has Wait's error when it exits. stop interrupts it
// (and kills it if it has not exited within 15 s), and logs its output
// when the test has failed.
func startChorusd(t *testing.T, d *exec.Cmd) (exited chan error, stop func()) {
	t.Helper()
	logs := &logtest.Buffer{}
	d.Stdout, d.Stderr = logs, logs
	if err := d.Start(); err != nil {
		t.Fatal(err)
	}
	exited = make(chan error, 1)
	go func() { exited <- d.Wait() }()
	return exited, func() {
		d.Process.Signal(os.Interrupt)
		select {
		case <-exited:
		case <-time.After(15 * time.Second):
			d.Process.Kill()
			<-exited
		}
		if t.Failed() {
			t.Logf("chorusd under qemu:\n%s", logs.String())
		}
	}
}

// qemuHearingYAML is a robot that hears, for the emulated arm64 build: it
// speaks into and hears from a shared air (TCP), and recognises speech
// with pocketsphinx, which it runs as a program (natively here).
const qemuHearingYAML = `version: 1
device: {id: pi-hana, arch: arm64}
room: {name: lab, members: [hana], floor: true, vote_timeout: 3s}
mqtt:
  broker: tcp://127.0.0.1:%[1]d
  embedded: {enabled: true, listen: 127.0.0.1:%[1]d, allow_anonymous: true}
companion: {id: hana, name: Hana, personality: calm, language: en}
brain: {provider: rule}
drivers:
  audio: {kind: air, air: "%[2]s"}
  tts: {kind: espeak-ng}
  mic: {kind: air, air: "%[2]s"}
hearing: {enabled: true, stt: {kind: pocketsphinx, grammar: %[3]s}}
http: {listen: "off"}
`

// The pure-Go linux/arm64 chorusd hears (issue 21) under emulation: a
// person speaks into the air and the robot's room gets the sentence as a
// Message, then the robot answers aloud.
func TestEmulatedArm64RobotHears(t *testing.T) {
	q := qemu(t)
	needHearing(t)
	o := &outside{t: t, dir: t.TempDir()}
	o.chorusd, o.chorus = buildBinaries(t)
	bin := buildArm64(t)
	airAddr := o.air()
	gram := filepath.Join(o.dir, "room.gram")
	os.WriteFile(gram, []byte(hearingGrammar), 0o644)
	port := bustest.FreePort(t)
	cfg := filepath.Join(o.dir, "robot.yaml")
	os.WriteFile(cfg, []byte(fmt.Sprintf(qemuHearingYAML, port, airAddr, gram)), 0o644)
	d := exec.Command(q, bin, "--config", cfg)
	exited, stop := startChorusd(t, d)
	defer stop()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	var watch bus.Bus
	var err error
	for watch == nil {
		if watch, err = bus.Dial(ctx, bus.Options{Broker: fmt.Sprintf("tcp://127.0.0.1:%d", port), ClientID: "watch", Username: "watch"}); err != nil {
			watch = nil
			select {
			case <-time.After(500 * time.Millisecond):
			case err := <-exited:
				t.Fatalf("chorusd under qemu exited: %v", err)
			case <-ctx.Done():
				t.Fatal("the emulated robot's broker never came up")
			}
		}
	}
	defer watch.Close()
	msgs := make(chan protocol.Message, 16)
	online := make(chan struct{}, 1)
	watch.Subscribe(ctx, "chorus/rooms/lab/messages/+", func(_ string, b []byte) {
		if m, err := protocol.DecodeMessage(b, 0); err == nil {
			msgs <- m
		}
	})
	watch.Subscribe(ctx, "chorus/rooms/lab/presence/hana", func(_ string, b []byte) {
		if strings.Contains(string(b), `"hears":true`) {
			select {
			case online <- struct{}{}:
			default:
			}
		}
	})
	select {
	case <-online:
	case <-ctx.Done():
		t.Fatal("hana's presence never said it hears")
	}
	time.Sleep(time.Second) // its floor claims the room
	o.sayAloud(airAddr, "Hello robots, what is the weather like today?")
	for heard := false; ; {
		select {
		case m := <-msgs:
			switch {
			case m.Params.From == "user" && m.Params.Message == "hello robots what is the weather like today":
				heard = true
			case m.Params.From == "hana" && heard:
				t.Logf("the arm64 robot heard the person and answered: %q", m.Params.Message)
				return
			}
		case <-ctx.Done():
			t.Fatal("the emulated robot did not hear the person and answer within 90 s")
		}
	}
}
