package cli

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"image"
	"image/jpeg"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chorus-robotics/chorus/device/daemon"
	"github.com/chorus-robotics/chorus/device/robot"
	"github.com/chorus-robotics/chorus/runtime/bus"
	"github.com/chorus-robotics/chorus/runtime/bus/bustest"
	"github.com/chorus-robotics/chorus/runtime/protocol"
	"github.com/chorus-robotics/chorus/runtime/query"
	"github.com/chorus-robotics/chorus/runtime/realtime"
	"github.com/chorus-robotics/chorus/runtime/room"
	"github.com/chorus-robotics/chorus/runtime/topic"
)

func run(args ...string) (code int, out, errOut string) {
	var o, e bytes.Buffer
	code = Main(context.Background(), args, &o, &e)
	return code, o.String(), e.String()
}

func TestVersion(t *testing.T) {
	for _, arg := range []string{"version", "--version"} {
		if code, out, _ := run(arg); code != 0 || !strings.HasPrefix(out, "chorus "+Version+" (go") {
			t.Errorf("chorus %s: %d %q", arg, code, out)
		}
	}
	if _, out, _ := run(); !strings.Contains(out, "version") {
		t.Errorf("the usage does not list version: %q", out)
	}
}

func TestUsageAndUnknownCommand(t *testing.T) {
	if code, out, _ := run(); code != 0 || !strings.Contains(out, "demo") || !strings.Contains(out, "query") {
		t.Fatalf("help: %d %q", code, out)
	}
	if code, _, errOut := run("dance"); code != 2 || !strings.Contains(errOut, `unknown command "dance"`) {
		t.Fatalf("unknown: %d %q", code, errOut)
	}
}

// A command that takes an operation first shows its operations when asked
// for help, and exits 0, as every other command does with -h.
func TestHelpOfCommandsWithOperations(t *testing.T) {
	for _, c := range []struct{ cmd, want string }{{"memory", "list|export|forget|wipe"}, {"voice", "list|forget|enroll"}} {
		for _, h := range []string{"-h", "--help", "help"} {
			code, out, errOut := run(c.cmd, h)
			if code != 0 || !strings.Contains(out, c.want) || !strings.Contains(out, "chorus "+c.cmd+" <operation> -h") {
				t.Errorf("chorus %s %s: exit %d, out %q, err %q", c.cmd, h, code, out, errOut)
			}
		}
		if code, _, errOut := run(c.cmd, "list", "-h"); code != 0 || !strings.Contains(errOut, "-device") {
			t.Errorf("chorus %s list -h: exit %d, err %q", c.cmd, code, errOut)
		}
	}
}

// TestSayQueryAgainstADevice runs a device in-process and drives it with
// the CLI: vision to a file, speak, an unknown type, say.
func TestSayQueryAgainstADevice(t *testing.T) {
	br := bustest.StartEmbedded(t, bustest.Options{ACL: true, Rosters: map[string][]string{"lab": {"bot"}}})
	c, err := robot.Decode(strings.NewReader(fmt.Sprintf(`version: 1
device: {id: bot}
room: {name: lab, members: [bot], floor: true}
mqtt: {broker: "%s"}
companion: {id: bot, name: Bot, language: en}
drivers: {camera: {kind: testpattern, width: 320, height: 240}, audio: {kind: null}, tts: {kind: tone}}
http: {listen: "off"}
`, br.URL())))
	if err != nil {
		t.Fatal(err)
	}
	runDaemon(t, c)
	time.Sleep(300 * time.Millisecond) // the camera's first frame

	frame := filepath.Join(t.TempDir(), "f.jpg")
	if code, out, errOut := run("query", "-broker", br.URL(), "-room", "lab", "-as", "bot", "-device", "bot", "-type", "vision", "-out", frame); code != 0 {
		t.Fatalf("vision: %d %s %s", code, out, errOut)
	}
	if b, _ := os.ReadFile(frame); len(b) < 100 || b[0] != 0xFF || b[1] != 0xD8 {
		t.Fatal("no JPEG written")
	}
	if code, out, _ := run("query", "-broker", br.URL(), "-as", "bot", "-device", "bot", "-type", "speak", "-body", `{"message":"Hi there."}`); code != 0 || !strings.Contains(out, `"engine":"tone"`) {
		t.Fatalf("speak: %d %s", code, out)
	}
	if code, _, errOut := run("query", "-broker", br.URL(), "-as", "bot", "-device", "bot", "-type", "smell"); code != 1 || !strings.Contains(errOut, `unknown query type "smell"`) {
		t.Fatalf("unknown type: %d %s", code, errOut)
	}
	if code, out, _ := run("say", "-broker", br.URL(), "-room", "lab", "hello", "bot"); code != 0 || !strings.HasPrefix(out, "sent to room lab as user, message id ") || len(lastWord(out)) != 32 {
		t.Fatalf("say: %d %q", code, out)
	}
}

// A vision answer of aikyo's client is {image} alone: chorus query says
// the size the JPEG has, and no capture time it was not given.
func TestQueryVisionImageOnly(t *testing.T) {
	br := bustest.StartEmbedded(t, bustest.Options{})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	dev := dialAs(t, ctx, br.URL(), "cam", "cam")
	var jpg bytes.Buffer
	if err := jpeg.Encode(&jpg, image.NewGray(image.Rect(0, 0, 64, 48)), nil); err != nil {
		t.Fatal(err)
	}
	srv := &query.Server{Bus: dev, Scheme: topic.New(""), Device: "cam"}
	srv.Handle(protocol.TypeVision, func(context.Context, string, json.RawMessage) (any, error) {
		return map[string]string{"image": base64.StdEncoding.EncodeToString(jpg.Bytes())}, nil
	})
	served := make(chan struct{})
	go func() { defer close(served); srv.Serve(ctx) }()
	defer func() { cancel(); <-served }()
	time.Sleep(200 * time.Millisecond) // the server's subscription
	frame := filepath.Join(t.TempDir(), "f.jpg")
	code, out, errOut := run("query", "-broker", br.URL(), "-as", "bot", "-device", "cam", "-type", "vision", "-out", frame)
	if code != 0 || out != "64x48 frame written to "+frame+"\n" {
		t.Fatalf("vision: %d %q %s", code, out, errOut)
	}
}

// chorus acl renders the ACL for a room's configs and a password-file
// skeleton naming every identity (issue 10).
func TestACLForTheLivingRoom(t *testing.T) {
	dir := t.TempDir()
	aclFile, pw := filepath.Join(dir, "chorus.acl"), filepath.Join(dir, "chorus.passwd")
	cfgs, _ := filepath.Glob("../../../../firmware-configs/livingroom/*.yaml")
	var out, errOut bytes.Buffer
	code := Main(context.Background(), append([]string{"acl", "-acl", aclFile, "-passwd", pw}, cfgs...), &out, &errOut)
	if code != 0 {
		t.Fatalf("acl: %d %s", code, errOut.String())
	}
	acl, _ := os.ReadFile(aclFile)
	for _, want := range []string{"user kyoko\ntopic write chorus/rooms/livingroom/presence/kyoko", "topic write chorus/rooms/livingroom/states/aya",
		"user floor\ntopic write chorus/rooms/+/turns", "pattern write chorus/rooms/+/messages/%u", "topic read chorus/devices/+/results",
		// The floor publishes what the room heard under its person
		// (hearing.user, "user" by default): the Message, and the words so
		// far (captions).
		"topic write chorus/rooms/livingroom/messages/user\ntopic write chorus/rooms/livingroom/heard/user\n"} {
		if !strings.Contains(string(acl), want) {
			t.Errorf("ACL lacks %q:\n%s", want, acl)
		}
	}
	skel, _ := os.ReadFile(pw)
	for _, want := range []string{"kyoko:CHANGE-ME", "pi5-kyoko:CHANGE-ME", "floor:CHANGE-ME", "hana:CHANGE-ME", "aya:CHANGE-ME"} {
		if !strings.Contains(string(skel), want) {
			t.Errorf("password skeleton lacks %q:\n%s", want, skel)
		}
	}
	if code := Main(context.Background(), append([]string{"acl", "-passwd", pw}, cfgs...), &out, &errOut); code == 0 {
		t.Error("an existing password file was overwritten")
	}
	// Mosquitto's own tool hashes it as written (Debian's 2.0.11 refuses
	// a comment line: "Corrupt password file").
	if _, err := exec.LookPath("mosquitto_passwd"); err == nil {
		if b, err := exec.Command("mosquitto_passwd", "-U", pw).CombinedOutput(); err != nil {
			t.Fatalf("mosquitto_passwd -U on the skeleton: %v\n%s", err, b)
		}
	}
}

// chorus acl -format nats renders users and permissions that a real
// nats-server accepts, with the passwords of the filled-in skeleton; bad
// password files and Mosquitto-only uses are refused (issue 31).
func TestACLForNATS(t *testing.T) {
	dir := t.TempDir()
	users, pw := filepath.Join(dir, "chorus-users.conf"), filepath.Join(dir, "chorus.passwd")
	cfgs, _ := filepath.Glob("../../../../firmware-configs/livingroom/*.yaml")
	acl := func(args ...string) (int, string) {
		var out, errOut bytes.Buffer
		code := Main(context.Background(), append(append([]string{"acl"}, args...), cfgs...), &out, &errOut)
		return code, errOut.String()
	}
	if code, errOut := acl("-passwd", pw); code != 0 {
		t.Fatalf("acl -passwd: %d %s", code, errOut)
	}
	skel, _ := os.ReadFile(pw)
	filled := regexp.MustCompile(`(?m)^([^:]+):CHANGE-ME$`).ReplaceAllString(string(skel), "$1:pw-$1")
	os.WriteFile(pw, []byte(filled+"alice:pw-alice\n"), 0o600)
	if code, errOut := acl("-format", "nats", "-people", "alice", "-passwords", pw, "-acl", users); code != 0 {
		t.Fatalf("acl -format nats: %d %s", code, errOut)
	}
	text, _ := os.ReadFile(users)
	for _, want := range []string{`user: "kyoko"`, `password: "pw-kyoko"`, `user: "alice"`, `"chorus.rooms.livingroom.states.kyoko"`, `"chorus.rooms.*.messages.alice"`,
		`"chorus.rooms.livingroom.messages.user"`, `"chorus.rooms.livingroom.heard.user"`} {
		if !strings.Contains(string(text), want) {
			t.Errorf("the NATS users lack %s:\n%s", want, text)
		}
	}
	if st, _ := os.Stat(users); st.Mode().Perm() != 0o600 {
		t.Errorf("the users file (it holds passwords) is %v, want 0600", st.Mode().Perm())
	}
	// nats-server takes it as the shipped node config includes it.
	conf := filepath.Join(dir, "node.conf")
	os.WriteFile(conf, []byte(bustest.NATSNodeConf(t, "n1", 14222, 18222, 16222, 11883, filepath.Join(dir, "js"), nil, false)), 0o600)
	if b, err := exec.Command(bustest.NATSBinary(t), "-t", "-c", conf).CombinedOutput(); err != nil {
		t.Fatalf("nats-server -t: %v\n%s", err, b)
	}
	for _, tc := range []struct {
		name, file string
		args       []string
		want       string
	}{
		{"passwords for Mosquitto", "", []string{"-passwords", "x"}, "for -format nats"},
		{"a person who is no identity", "", []string{"-people", "alice,a/b"}, `-people: "a/b"`},
		{"a person with a colon", "", []string{"-people", "a:b"}, `-people: "a:b" holds a ':'`},
		{"a person with a pattern's %", "", []string{"-people", "%u"}, `-people: "%u" holds`},
		{"a person who is a robot", "", []string{"-people", "alice,kyoko"}, `-people: "kyoko" is not a person: it is the device pi5-kyoko`},
		{"a person who is a body", "", []string{"-people", "pi4-hana"}, `"pi4-hana" is not a person`},
		{"a person who is the floor", "", []string{"-people", "floor"}, `"floor" is not a person: it is the floor of room livingroom`},
		{"a missing password", "kyoko:pw\n", []string{"-format", "nats"}, "gives no password for"},
		{"a Mosquitto hash", strings.ReplaceAll(filled, "kyoko:pw-kyoko", "kyoko:$7$101$abc"), []string{"-format", "nats"}, "mosquitto_passwd hash"},
		{"an unknown format", "", []string{"-format", "rabbitmq"}, "neither mosquitto nor nats"},
	} {
		args := tc.args
		if tc.file != "" {
			f := filepath.Join(dir, "bad.passwd")
			os.WriteFile(f, []byte(tc.file), 0o600)
			args = append(args, "-passwords", f)
		}
		if code, errOut := acl(args...); code == 0 || !strings.Contains(errOut, tc.want) {
			t.Errorf("%s: exit %d, %q; want a failure naming %q", tc.name, code, errOut, tc.want)
		}
	}
}

// Running the recipe again does not clobber anything: a password file
// that exists stops chorus acl before it writes the ACL, and the error
// says how to render the ACL alone and give a new person a password.
func TestACLStopsBeforeWritingWhenThePasswordFileExists(t *testing.T) {
	dir := t.TempDir()
	aclFile, pw := filepath.Join(dir, "chorus.acl"), filepath.Join(dir, "chorus.passwd")
	os.WriteFile(aclFile, []byte("# the ACL in use\n"), 0o640)
	os.WriteFile(pw, []byte("kyoko:$7$101$hashed\n"), 0o600)
	cfgs, _ := filepath.Glob("../../../../firmware-configs/livingroom/*.yaml")
	var out, errOut bytes.Buffer
	code := Main(context.Background(), append([]string{"acl", "-people", "alice,carol", "-acl", aclFile, "-passwd", pw}, cfgs...), &out, &errOut)
	if code == 0 || !strings.Contains(errOut.String(), "mosquitto_passwd -b "+pw+" NAME PASSWORD") || !strings.Contains(errOut.String(), "without -passwd") {
		t.Errorf("exit %d, %q: want a failure that says how to add a person", code, errOut.String())
	}
	for f, want := range map[string]string{aclFile: "# the ACL in use\n", pw: "kyoko:$7$101$hashed\n"} {
		if b, _ := os.ReadFile(f); string(b) != want {
			t.Errorf("%s was rewritten: %q", f, b)
		}
	}
}

// TestPhaseStartEnd drives a realtime floor with `chorus phase`: start and
// end the room's phase and a whisper channel's, found through the leader
// claim; an unknown channel and a missing action are errors.
func TestPhaseStartEnd(t *testing.T) {
	scheme := topic.New("").WithWhisper("lab", "pair", []string{"bot"})
	br := bustest.StartEmbedded(t, bustest.Options{ACL: true, Scheme: scheme, Rosters: map[string][]string{"lab": {"bot"}}})
	c, err := robot.Decode(strings.NewReader(fmt.Sprintf(`version: 1
device: {id: box}
room: {name: lab, members: [bot], floor: true, mode: realtime, realtime: {whisper: {pair: [bot]}}}
mqtt: {broker: "%s"}
drivers: {camera: {kind: none}, audio: {kind: null}, tts: {kind: tone}}
http: {listen: "off"}
`, br.URL())))
	if err != nil {
		t.Fatal(err)
	}
	ctx := runDaemon(t, c)

	watch := dialAs(t, ctx, br.URL(), "watch", "bot")
	r := room.New(watch, scheme, "lab", nil, nil)
	phases := make(chan protocol.Phase, 16)
	for _, ch := range []string{"", "pair"} {
		if err := r.OnPhase(ctx, ch, func(p protocol.Phase) { phases <- p }); err != nil {
			t.Fatal(err)
		}
	}
	next := func(want string) protocol.Phase {
		t.Helper()
		select {
		case p := <-phases:
			if p.Event+" "+p.Channel != want {
				t.Fatalf("phase event %q on channel %q, want %q", p.Event, p.Channel, want)
			}
			return p
		case <-time.After(5 * time.Second):
			t.Fatalf("no phase event %q", want)
		}
		return protocol.Phase{}
	}
	base := []string{"-broker", br.URL(), "-room", "lab", "-as", "bot"}
	if code, out, errOut := run(append([]string{"phase", "start"}, base...)...); code != 0 || !strings.Contains(out, "phase start: room lab (floor box)") {
		t.Fatalf("phase start: %d %q %q", code, out, errOut)
	}
	next("start ")
	if code, out, errOut := run(append([]string{"phase", "end"}, base...)...); code != 0 {
		t.Fatalf("phase end: %d %q %q", code, out, errOut)
	}
	if p := next("end "); p.Reason != protocol.EndOperator {
		t.Fatalf("end reason %q, want %q", p.Reason, protocol.EndOperator)
	}
	if code, out, errOut := run(append([]string{"phase", "start", "-whisper", "pair", "-floor", "box"}, base...)...); code != 0 || !strings.Contains(out, "whisper channel pair") {
		t.Fatalf("phase start -whisper pair: %d %q %q", code, out, errOut)
	}
	if p := next("start pair"); len(p.Members) != 1 || p.Members[0] != "bot" {
		t.Fatalf("whisper phase members %v", p.Members)
	}
	// As a client that may not read the floor's results: told whom to connect as.
	if code, _, errOut := run("phase", "start", "-broker", br.URL(), "-room", "lab", "-as", "user", "-floor", "box"); code != 1 || !strings.Contains(errOut, "connect with -as one of them") {
		t.Fatalf("phase as a non-member: %d %q", code, errOut)
	}
	if code, _, errOut := run(append([]string{"phase", "start", "-whisper", "nope"}, base...)...); code != 1 || !strings.Contains(errOut, `no whisper channel "nope"`) {
		t.Fatalf("unknown channel: %d %q", code, errOut)
	}
	if code, _, errOut := run("phase", "-room", "lab"); code != 1 || !strings.Contains(errOut, "start or end") {
		t.Fatalf("no action: %d %q", code, errOut)
	}
}

// runDaemon runs a device until the test ends and returns once it is
// ready; the context ends with the test.
func runDaemon(t *testing.T, c *robot.Config) context.Context {
	t.Helper()
	d, err := daemon.New(c, daemon.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	ready, done := make(chan struct{}), make(chan error, 1)
	go func() { done <- d.Run(ctx, func() { close(ready) }) }()
	t.Cleanup(func() { cancel(); <-done })
	select {
	case <-ready:
	case err := <-done:
		t.Fatalf("the device stopped: %v", err)
	}
	return ctx
}

// A claim seen before its floor is active (the floor's own copy of the
// claim is still on its way back) makes the floor answer "stands by":
// `chorus phase` asks again until it is active instead of failing. Failed
// before: the first answer was the command's error (a CI flake of
// TestPhaseStartEnd).
func TestPhaseAsksAgainWhileTheClaimedFloorStandsBy(t *testing.T) {
	br := bustest.StartEmbedded(t, bustest.Options{})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	b := dialAs(t, ctx, br.URL(), "box-a", "box-a")
	scheme := topic.New("")
	retain(t, ctx, b, scheme.FloorLeader("lab"), protocol.LeaderClaim{Instance: "box-a", Online: true, Since: time.Now()})
	var asked atomic.Int32
	srv := &query.Server{Bus: b, Scheme: scheme, Device: "box-a"}
	srv.Handle(protocol.TypePhase, func(_ context.Context, _ string, body json.RawMessage) (any, error) {
		cmd, err := protocol.DecodePhaseCommand(body, 0) // as strict as the floor's device
		if err != nil {
			return nil, err
		}
		if asked.Add(1) <= 2 {
			return nil, errors.New(realtime.StandbyError)
		}
		return cmd, nil
	})
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ctx) }()
	defer func() { cancel(); <-served }()
	time.Sleep(200 * time.Millisecond) // subscribed

	code, out, errOut := run("phase", "start", "-broker", br.URL(), "-room", "lab", "-as", "bot")
	if code != 0 || !strings.Contains(out, "(floor box-a) {\"action\":\"start\"}") {
		t.Fatalf("phase start: %d %q %q", code, out, errOut)
	}
	if n := asked.Load(); n != 3 {
		t.Fatalf("the floor was asked %d times, want 3 (twice standing by, then active)", n)
	}
}

// dialAs connects to the broker at url as user with client id id, closed
// when the test ends.
func dialAs(t *testing.T, ctx context.Context, url, id, user string) *bus.MQTT {
	t.Helper()
	b, err := bus.Dial(ctx, bus.Options{Broker: url, ClientID: id, Username: user})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	return b
}

// retain publishes v as JSON, retained, on topic.
func retain(t *testing.T, ctx context.Context, b *bus.MQTT, topic string, v any) {
	t.Helper()
	p, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Publish(ctx, topic, p, true); err != nil {
		t.Fatal(err)
	}
}

func lastWord(s string) string {
	f := strings.Fields(s)
	if len(f) == 0 {
		return ""
	}
	return f[len(f)-1]
}

// The people the room's robots may know by voice (hearing.people, in
// any of the room's configs) are identities the floor may publish the
// room's Messages under; Mosquitto and NATS alike.
func TestACLForPeopleKnownByVoice(t *testing.T) {
	dir := t.TempDir()
	cfgs, _ := filepath.Glob("../../../../firmware-configs/livingroom/*.yaml")
	for i, c := range cfgs {
		b, err := os.ReadFile(c)
		if err != nil {
			t.Fatal(err)
		}
		people := []string{"\nhearing: {people: {sam: [Samuel, サム]}}\n", "\nhearing: {people: {mia: []}}\n", ""}[i%3]
		cfgs[i] = filepath.Join(dir, filepath.Base(c))
		if err := os.WriteFile(cfgs[i], append(b, people...), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	aclFile, pw := filepath.Join(dir, "chorus.acl"), filepath.Join(dir, "chorus.passwd")
	var out, errOut bytes.Buffer
	if code := Main(context.Background(), append([]string{"acl", "-acl", aclFile, "-passwd", pw}, cfgs...), &out, &errOut); code != 0 {
		t.Fatalf("acl: %d %s", code, errOut.String())
	}
	acl, _ := os.ReadFile(aclFile)
	floor := string(acl)[strings.Index(string(acl), "user floor\n"):]
	for _, p := range []string{"sam", "mia", "user"} {
		if !strings.Contains(floor, "topic write chorus/rooms/livingroom/messages/"+p+"\n") {
			t.Errorf("the floor may not publish what the room heard from %s:\n%s", p, floor)
		}
	}
}

// chorus voice refuses what it cannot do, naming what is wrong, before it
// connects anywhere.
func TestVoiceCommandRefuses(t *testing.T) {
	dir := t.TempDir()
	off := filepath.Join(dir, "off.yaml")
	b, _ := os.ReadFile("../../../../firmware-configs/livingroom/pi5-robot.yaml")
	os.WriteFile(off, b, 0o644)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"voice"}, "want an operation"},
		{[]string{"voice", "learn"}, `unknown operation "learn"`},
		{[]string{"voice", "forget"}, "forget needs -person"},
		{[]string{"voice", "enroll", "-person", "sam"}, "enroll needs -config"},
		{[]string{"voice", "enroll", "-person", "sam", "-config", off}, "enroll takes 1 to 16 WAV files"},
		{[]string{"voice", "enroll", "-person", "sam", "-config", off, "a.wav"}, "hearing.voice is off"},
		{[]string{"voice", "list", "extra.wav"}, "list takes no files"},
	} {
		var out, errOut bytes.Buffer
		if code := Main(context.Background(), tc.args, &out, &errOut); code == 0 || !strings.Contains(errOut.String(), tc.want) {
			t.Errorf("%v: exit %d, %q; want %q", tc.args, code, errOut.String(), tc.want)
		}
	}
}
