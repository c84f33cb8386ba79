// Package doctor is `chorusd --doctor`: it checks what a device's config
// needs against the machine it runs on, one line per need with ✓ or ✗ and,
// for a ✗, the fix. It first reads the unit's environment file
// (/etc/default/chorusd) for the variables not already set, as systemd
// does for chorusd. It opens the drivers the config names through the
// parts registry (device/parts), so it covers every kind of this build: the
// camera gives a frame within 5 s, the audio output plays a moment of
// silence, the TTS engine speaks a word, the GPIO pins exist, the body's
// I²C devices answer (the face with a write: an SSD1306 may refuse reads),
// the broker accepts the credentials, the model server answers, the
// secrets are set. On a robot that hears, the speech-to-text server is
// warmed first (a server that loads its model on its first utterance,
// wyoming-faster-whisper, can take longer than hearing.stt.timeout for it;
// the report says how long it took), its configured model must be one it
// lists, and the wake-word server must have every wake word
// hearing.wake.names names.
//
// # Usage
//
//	results := doctor.Run(ctx, cfg, doctor.Options{})
//	failed := doctor.Write(os.Stdout, results)
//
// # Concurrency
//
// Run checks one thing after another, each under its own timeout; it
// returns when all are done or ctx ends. Nothing it opens outlives it.
package doctor

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/chorus-robotics/chorus/device/parts"
	"github.com/chorus-robotics/chorus/device/robot"
	"github.com/chorus-robotics/chorus/drivers/audio"
	"github.com/chorus-robotics/chorus/drivers/gpio"
	"github.com/chorus-robotics/chorus/drivers/mcp"
	"github.com/chorus-robotics/chorus/drivers/mic"
	"github.com/chorus-robotics/chorus/drivers/stt"
	"github.com/chorus-robotics/chorus/drivers/wake"
	"github.com/chorus-robotics/chorus/runtime/bus"
	"github.com/chorus-robotics/chorus/runtime/protocol"
	"github.com/chorus-robotics/chorus/runtime/schema"
)

// Result is one line of the report.
type Result struct {
	Name   string // "camera (testpattern)"
	OK     bool
	Detail string // what was seen, or what went wrong
	Fix    string // for a failure: what to do
}

// Options tune the checks; zero values are the defaults.
type Options struct {
	FrameTimeout time.Duration // the camera's first frame; default 5 s
	Timeout      time.Duration // every other wait; default 5 s (the model server: brain.timeout)
	// WarmTimeout bounds the speech-to-text server's first utterance,
	// which may load its model (stt.Warmer); default 2 min.
	WarmTimeout time.Duration
	Log         *slog.Logger // the drivers' logs; default discarded
	// EnvFile is the unit's EnvironmentFile, read for the variables the
	// process environment lacks; default /etc/default/chorusd.
	EnvFile string
}

// The doctor's defaults: a camera's first frame, one check, and the
// warm-up of a speech-to-text model.
const (
	DefaultFrameTimeout = 5 * time.Second
	DefaultTimeout      = 5 * time.Second
	DefaultWarmTimeout  = 2 * time.Minute
)

// Run checks c against this machine. c has been decoded and validated
// (robot.ParseFile and Validate); the rest is checked here.
func Run(ctx context.Context, c *robot.Config, o Options) []Result {
	if o.FrameTimeout <= 0 {
		o.FrameTimeout = DefaultFrameTimeout
	}
	if o.Timeout <= 0 {
		o.Timeout = DefaultTimeout
	}
	if o.WarmTimeout <= 0 {
		o.WarmTimeout = DefaultWarmTimeout
	}
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	d := &doctor{c: c, o: o, env: parts.Env{Log: o.Log}}
	d.envFile()
	d.parts()
	d.secrets()
	d.camera(ctx)
	d.audio(ctx)
	d.tts(ctx)
	d.gpio()
	d.body(ctx)
	d.broker(ctx)
	d.model(ctx)
	d.hearing(ctx)
	d.memory()
	d.tools(ctx)
	return d.out
}

// memory: the folder the companion keeps its facts in can be written, and
// what it holds now.
func (d *doctor) memory() {
	m := d.c.Memory
	if m == nil {
		return
	}
	if err := m.CheckDir(); err != nil {
		d.fail("memory", "make the folder writable by chorusd's user (chorusd.service's StateDirectory is /var/lib/chorus), or set memory.dir", err)
		return
	}
	if fi, err := os.Stat(filepath.Join(m.Dir, d.c.Identity()+".facts")); err == nil {
		d.ok("memory", "%s is writable; the companion's facts file holds %d bytes (bound %d)", m.Dir, fi.Size(), m.MaxBytes)
		return
	}
	d.ok("memory", "%s is writable; nothing remembered yet", m.Dir)
}

// tools: each MCP server of tools.mcp answers, takes the token, and has
// the tools the config allows.
func (d *doctor) tools(ctx context.Context) {
	for i, s := range d.c.Tools.MCP {
		name := fmt.Sprintf("MCP server %s (%s)", s.Name, redact(s.URL))
		if placeholder(s.URL) {
			d.fail(name, fmt.Sprintf("set tools.mcp[%d].url to the server (this address is an example's stand-in; nothing was sent to it)", i), errPlaceholder)
			continue
		}
		token, err := d.c.MCPToken(i)
		if err != nil {
			d.fail(name, "set the token (secrets, above)", err)
			continue
		}
		client := mcp.New(s, token, d.o.Log)
		client.CheckSchema = schema.Check
		allowed, missing, has, err := client.Check(ctx)
		has = printableNames(has)
		switch {
		case errors.Is(err, mcp.ErrRefused):
			d.fail(name, fmt.Sprintf("the server refused the token: make a new one (Home Assistant: your profile → Security → Long-lived access tokens) and set %s", or(s.TokenEnv+s.TokenFile, fmt.Sprintf("tools.mcp[%d].token_env", i))), err)
		case err != nil:
			d.fail(name, fmt.Sprintf("start the server or fix tools.mcp[%d].url (Home Assistant: add the Model Context Protocol Server integration; its endpoint is http://<home assistant>:8123/api/mcp)", i), err)
		case len(missing) > 0:
			d.fail(name, fmt.Sprintf("fix tools.mcp[%d].allow: the server has %s (Home Assistant: expose the entities to Assist)", i, strings.Join(has, ", ")),
				fmt.Errorf("allows tools the server does not have: %s", strings.Join(missing, ", ")))
		default:
			var names []string
			for _, a := range s.Allow { // in the config's order
				if slices.ContainsFunc(allowed, func(t mcp.Tool) bool { return t.Remote == a }) {
					names = append(names, a)
				}
			}
			d.ok(name, "answered; the model may use %s", strings.Join(names, ", "))
		}
	}
}

// printableNames are a server's tool names as the report prints them:
// those a model could call, at most 20.
func printableNames(names []string) []string {
	var out []string
	for _, n := range names {
		if toolName.MatchString(n) {
			out = append(out, n)
		}
	}
	if len(out) > 20 {
		out = append(out[:20], fmt.Sprintf("and %d more", len(out)-20))
	}
	if skipped := len(names) - len(out); skipped > 0 && len(out) <= 20 {
		out = append(out, fmt.Sprintf("(%d named otherwise)", skipped))
	}
	return out
}

var toolName = regexp.MustCompile(`^[A-Za-z0-9_.-]{1,64}$`)

// Write prints results, a line each (and the fix under a failure), and
// returns how many failed.
func Write(w io.Writer, results []Result) int {
	failed := 0
	for _, r := range results {
		mark := "✓"
		if !r.OK {
			mark = "✗"
			failed++
		}
		fmt.Fprintf(w, "%s %s: %s\n", mark, r.Name, r.Detail)
		if !r.OK && r.Fix != "" {
			fmt.Fprintf(w, "    fix: %s\n", r.Fix)
		}
	}
	if failed == 0 {
		fmt.Fprintf(w, "all %d checks passed\n", len(results))
	} else {
		fmt.Fprintf(w, "%d of %d checks failed\n", failed, len(results))
	}
	return failed
}

type doctor struct {
	c   *robot.Config
	o   Options
	env parts.Env
	out []Result
}

func (d *doctor) ok(name, format string, args ...any) {
	d.out = append(d.out, Result{Name: name, OK: true, Detail: fmt.Sprintf(format, args...)})
}

func (d *doctor) fail(name, fix string, err error) {
	d.out = append(d.out, Result{Name: name, Detail: err.Error(), Fix: fix})
}

// parts: the kinds are built into this chorusd, with what they need here.
func (d *doctor) parts() {
	var problems []string
	for _, p := range parts.Check(d.c, parts.Here) {
		if !strings.HasPrefix(p, "brain.api_key_env:") { // under secrets
			problems = append(problems, p)
		}
	}
	if len(problems) == 0 {
		d.ok("drivers", "camera %s, audio %s, TTS %s built in", d.c.Drivers.Camera.Kind, d.c.Drivers.Audio.Kind, d.c.Drivers.TTS.Kind)
		return
	}
	for _, p := range problems {
		d.fail("drivers", "install what it names, or build chorusd with the tag it names (chorusd --list says what this build has)", errors.New(p))
	}
}

// secrets: every variable and file the config reads a secret from.
func (d *doctor) secrets() {
	c := d.c
	var errs []string
	var set []string
	check := func(name string, err error) {
		if err != nil {
			errs = append(errs, err.Error())
		} else if name != "" {
			set = append(set, name)
		}
	}
	_, err := c.MQTT.Password()
	check(c.MQTT.PasswordEnv+c.MQTT.PasswordFile, err)
	if c.Room.Floor {
		_, err := c.MQTT.FloorPassword()
		check(c.MQTT.FloorPasswordEnv, err)
	}
	if c.Companion != nil && c.Brain.APIKeyEnv != "" {
		_, err := c.Brain.APIKey()
		check(c.Brain.APIKeyEnv, err)
	}
	if c.MQTT.Embedded.Enabled && c.MQTT.Embedded.UsersFile != "" {
		_, err := c.MQTT.Embedded.Users()
		check(c.MQTT.Embedded.UsersFile, err)
	}
	if ws := c.HTTP.WebSocket; ws.Enabled && (ws.TokensFile != "" || ws.TokensEnv != "") {
		ts, err := ws.Tokens()
		if err == nil {
			err = c.CheckBridgeTokens(ts)
		}
		check(ws.TokensEnv+ws.TokensFile, err)
	}
	for i, s := range c.Tools.MCP {
		_, err := c.MCPToken(i)
		check(s.TokenEnv+s.TokenFile, err)
	}
	if len(errs) > 0 {
		d.fail("secrets", "set the variables in /etc/default/chorusd (mode 0600) and put the files where the config says (chorus install lays down the broker's users and the bridge's tokens)",
			errors.New(strings.Join(errs, "; ")))
		return
	}
	if len(set) == 0 {
		d.ok("secrets", "the config needs none")
		return
	}
	d.ok("secrets", "%s: set and readable", strings.Join(set, ", "))
}

// makePart builds the part of g the configuration names (kind) for the
// check called name. It is false when the kind is not compiled in
// (reported under drivers) or the part failed to build (reported here,
// with fix).
func makePart[T any](d *doctor, g *parts.Group[T], kind, name, fix string) (T, bool) {
	var zero T
	if !g.Built(kind) {
		return zero, false
	}
	p, err := g.Make(d.c, d.env)
	if err != nil {
		d.fail(name, fix, err)
		return zero, false
	}
	return p, true
}

// camera: the configured source opens and gives a frame in time.
func (d *doctor) camera(ctx context.Context) {
	kind := d.c.Drivers.Camera.Kind
	name := "camera (" + kind + ")"
	if kind == "none" || kind == "" {
		d.ok(name, "no camera configured: no vision queries")
		return
	}
	fix := "check drivers.camera (the program or device it names, its cable; run it by hand) and that the chorus user is in the video group; a Raspberry Pi camera serves one process at a time, so stop chorusd first (systemctl stop chorusd) when it is running"
	src, ok := makePart(d, parts.Cameras, kind, name, fix)
	if !ok {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, d.o.FrameTimeout)
	defer cancel()
	defer src.Close()
	start := time.Now()
	if err := src.Open(ctx); err != nil {
		d.fail(name, fix, fmt.Errorf("open %s: %w", src.Name(), err))
		return
	}
	f, err := src.Read(ctx)
	if err != nil {
		if ctx.Err() != nil {
			err = fmt.Errorf("no frame from %s within %v: %w", src.Name(), d.o.FrameTimeout, err)
		}
		d.fail(name, fix, err)
		return
	}
	if len(f.JPEG) == 0 {
		d.fail(name, fix, fmt.Errorf("%s gave an empty frame", src.Name()))
		return
	}
	d.ok(name, "a %d×%d frame (%d bytes) in %v", f.Width, f.Height, len(f.JPEG), time.Since(start).Round(time.Millisecond))
}

// audio: the output opens and plays a tenth of a second of silence to its
// drained end.
func (d *doctor) audio(ctx context.Context) {
	kind := d.c.Drivers.Audio.Kind
	name := "audio output (" + kind + ")"
	fix := "check drivers.audio (the device or program it names; aplay -l lists the sound cards) and that the chorus user is in the audio group"
	out, ok := makePart(d, parts.Audio, kind, name, fix)
	if !ok {
		return
	}
	defer out.Close()
	ctx, cancel := context.WithTimeout(ctx, d.o.Timeout)
	defer cancel()
	st, err := out.Begin(ctx, "doctor")
	if err != nil {
		d.fail(name, fix, fmt.Errorf("open: %w", err))
		return
	}
	rate := d.c.Drivers.Audio.SampleRate
	if rate <= 0 {
		rate = mic.DefaultRate // the rate speech is made at here
	}
	if err := st.Write(ctx, audio.PCM{Rate: rate, Samples: make([]int16, rate/10)}); err != nil {
		st.Abort()
		d.fail(name, fix, fmt.Errorf("play: %w", err))
		return
	}
	played, err := st.Drain(ctx)
	if err != nil {
		d.fail(name, fix, fmt.Errorf("drain: %w", err))
		return
	}
	d.ok(name, "opened, played %v of silence", played.Round(time.Millisecond))
}

// tts: the engine speaks a word.
func (d *doctor) tts(ctx context.Context) {
	kind := d.c.Drivers.TTS.Kind
	name := "TTS (" + kind + ")"
	fix := "install the engine drivers.tts names (espeak-ng, open-jtalk with a voice, a VOICEVOX engine at drivers.tts.url, piper and its model)"
	engine, ok := makePart(d, parts.TTS, kind, name, fix)
	if !ok {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, 2*d.o.Timeout)
	defer cancel()
	word := "hello"
	if d.c.Companion != nil && d.c.Companion.Language == "ja" {
		word = "こんにちは"
	}
	start := time.Now()
	pcm, err := engine.Synthesize(ctx, word, "")
	if err == nil && len(pcm.Samples) == 0 {
		err = fmt.Errorf("%s gave no audio", engine.Name())
	}
	if err != nil {
		d.fail(name, fix, fmt.Errorf("say %q: %w", word, err))
		return
	}
	d.ok(name, "%s said %q: %v of audio in %v", engine.Name(), word, pcm.Duration().Round(time.Millisecond), time.Since(start).Round(time.Millisecond))
}

// hearing (a robot that hears): the microphone gives audio in time, the
// speech-to-text engine answers a moment of silence (warmed first when
// its server may load its model on the first utterance; its configured
// model is one the server has), the wake-word detector takes a stream and
// its server has the wake words named.
func (d *doctor) hearing(ctx context.Context) {
	c := d.c
	if !c.Hearing.Enabled {
		return
	}
	d.microphone(ctx)
	if kind := c.Hearing.Ear.STT.Kind; parts.STT.Built(kind) {
		d.stt(ctx, kind)
	}
	if kind := c.Hearing.Ear.Wake.Kind; kind != "none" && parts.Wakes.Built(kind) {
		d.wake(ctx, kind)
	}
}

// stt: the engine's model is one its server has; the server is warmed
// (its first utterance may load its model, longer than an utterance's
// timeout); then it answers half a second of silence in time.
func (d *doctor) stt(ctx context.Context, kind string) {
	c := d.c
	name := "speech to text (" + kind + ")"
	fix := "check hearing.stt (the server at its url is up and reachable from here; pocketsphinx and pocketsphinx-en-us installed; the grammar file)"
	if c.Hearing.Ear.STT.URL != "" && placeholder(c.Hearing.Ear.STT.URL) {
		d.fail(name, "set hearing.stt.url to your speech-to-text server (this address is an example's stand-in; nothing was sent to it)", errPlaceholder)
		return
	}
	engine, err := parts.STT.Make(c, d.env)
	if err != nil {
		d.fail(name, fix, err)
		return
	}
	rate := c.Drivers.Mic.SampleRate
	if mc, ok := engine.(stt.ModelChecker); ok {
		mctx, cancel := context.WithTimeout(ctx, d.o.Timeout)
		detail, err := mc.CheckModel(mctx)
		cancel()
		switch {
		case errors.Is(err, stt.ErrUnknownModel):
			d.fail(name+": hearing.stt.model", "set hearing.stt.model to a model the server lists, or remove it (the server then uses its own)", err)
		case err != nil: // the server could not be asked: the line below says so
		case detail != "":
			d.ok(name+": hearing.stt.model", "%s", detail)
		}
	}
	warmed := ""
	if w, ok := engine.(stt.Warmer); ok {
		wctx, cancel := context.WithTimeout(ctx, d.o.WarmTimeout)
		start := time.Now()
		err := w.Warm(wctx, rate)
		cancel()
		took := time.Since(start).Round(time.Millisecond)
		if err != nil {
			d.fail(name, fix, fmt.Errorf("warming the model (half a second of silence, waited up to %v): %w", d.o.WarmTimeout, err))
			return
		}
		warmed = fmt.Sprintf("warmed the model: its first utterance took %v", took)
		if t := c.Hearing.Ear.STT.Timeout; t > 0 && took > t {
			warmed += fmt.Sprintf(", longer than hearing.stt.timeout (%v): unwarmed, the robot's first utterance would have failed", t)
		}
		warmed += "; then "
	}
	sctx, cancel := context.WithTimeout(ctx, 2*d.o.Timeout)
	start := time.Now()
	err = silence(sctx, engine, rate)
	cancel()
	if err != nil && !errors.Is(err, stt.ErrEmpty) {
		d.fail(name, fix, err)
		return
	}
	d.ok(name, "%s%s answered half a second of silence in %v", warmed, engine.Name(), time.Since(start).Round(time.Millisecond))
}

// wake: the detector takes a stream, and its server has the wake words
// hearing.wake.names names (a name it lacks is a robot that never wakes,
// or wakes on another word, with no error).
func (d *doctor) wake(ctx context.Context, kind string) {
	c := d.c
	name := "wake word (" + kind + ")"
	fix := "check hearing.wake.url: a Wyoming wake-word server (wyoming-openwakeword) listening there"
	if placeholder(c.Hearing.Ear.Wake.URL) {
		d.fail(name, "set hearing.wake.url to your wake-word server (this address is an example's stand-in; nothing was sent to it)", errPlaceholder)
		return
	}
	det, err := parts.Wakes.Make(c, d.env)
	var have []string
	if err == nil {
		ctx, cancel := context.WithTimeout(ctx, d.o.Timeout)
		var l wake.Listener
		if l, err = det.Listen(ctx, c.Drivers.Mic.SampleRate); err == nil {
			err = l.Write(make([]int16, c.Drivers.Mic.SampleRate/10))
			l.Close()
		}
		if nc, ok := det.(wake.NameChecker); ok && err == nil {
			have, err = nc.CheckNames(ctx)
		}
		cancel()
	}
	switch {
	case errors.Is(err, wake.ErrUnknownName):
		d.fail(name, "set hearing.wake.names to wake words the server has (openWakeWord 2 names okay_nabu, not ok_nabu)", err)
	case err != nil:
		d.fail(name, fix, err)
	case len(have) > 0:
		d.ok(name, "%s takes the microphone's stream; the server has %s", det.Name(), strings.Join(have, ", "))
	default:
		d.ok(name, "%s takes the microphone's stream", det.Name())
	}
}

// microphone: the configured source opens and gives a second of audio in
// time; its level says whether it hears anything.
func (d *doctor) microphone(ctx context.Context) {
	kind := d.c.Drivers.Mic.Kind
	name := "microphone (" + kind + ")"
	fix := "check drivers.mic (the program or device it names; arecord -l lists the capture devices) and that the chorus user is in the audio group"
	src, ok := makePart(d, parts.Mics, kind, name, fix)
	if !ok {
		return
	}
	if src == nil {
		d.fail(name, fix, errors.New("no microphone configured, and hearing is enabled"))
		return
	}
	ctx, cancel := context.WithTimeout(ctx, d.o.FrameTimeout)
	defer cancel()
	defer src.Close()
	if err := src.Open(ctx); err != nil {
		d.fail(name, fix, fmt.Errorf("open %s: %w", src.Name(), err))
		return
	}
	buf := make([]int16, src.Rate())
	got, peak := 0, 0
	start := time.Now()
	for got < len(buf) {
		n, err := src.Read(ctx, buf[got:])
		if err != nil {
			d.fail(name, fix, fmt.Errorf("%s gave %d of %d samples: %w", src.Name(), got, len(buf), err))
			return
		}
		for _, v := range buf[got : got+n] {
			peak = max(peak, abs(int(v)))
		}
		got += n
	}
	// A live microphone gives a second of audio in about a second (a
	// driver may have some buffered); one that gives it at once is a
	// program or file writing as fast as it can, which the robot cannot
	// keep up with.
	if took := time.Since(start); took < 500*time.Millisecond {
		d.fail(name, fix, fmt.Errorf("%s gave a second of audio in %v: faster than real time, so not a live microphone (a program reading a file?)",
			src.Name(), took.Round(time.Millisecond)))
		return
	}
	d.ok(name, "a second of audio from %s at %d Hz, peak %d of 32767", src.Name(), src.Rate(), peak)
}

func abs(v int) int {
	if v < 0 {
		return -v
	}
	return v
}

// silence asks engine to recognise half a second of silence.
func silence(ctx context.Context, engine stt.Engine, rate int) error {
	s, err := engine.Start(ctx, rate)
	if err != nil {
		return err
	}
	if err := s.Write(make([]int16, rate/2)); err != nil {
		s.Abort()
		return err
	}
	_, err = s.Finish(ctx)
	return err
}

// gpio: the pins the config names exist on this board.
func (d *doctor) gpio() {
	for _, p := range []struct{ field, pin string }{{"drivers.gpio.led", d.c.Drivers.GPIO.LED}, {"drivers.gpio.button", d.c.Drivers.GPIO.Button}} {
		if p.pin == "" {
			continue
		}
		name := "GPIO " + p.pin + " (" + p.field + ")"
		if _, err := gpio.Pin(p.pin); err != nil {
			d.fail(name, "name a pin this board has (periph names such as GPIO17), check that the chorus user is in the gpio group, or remove "+p.field+" on a board without GPIO", err)
			continue
		}
		d.ok(name, "there")
	}
}

// body: what each action driver probes (device/parts.ActionKinds): the
// I²C devices the body names answer at their addresses (the servo board,
// the face), the pins of gpio actions are there.
func (d *doctor) body(ctx context.Context) {
	for _, p := range parts.ProbeBody(ctx, d.c, d.o.Timeout) {
		if p.Err != nil {
			d.fail(p.Name, p.Fix, p.Err)
			continue
		}
		d.ok(p.Name, "%s", p.Detail)
	}
}

// broker: it accepts this device's credentials — the companion's, the
// device's own connection's when its id differs — and the floor's.
func (d *doctor) broker(ctx context.Context) {
	c := d.c
	tlsc, err := c.ClientTLS()
	if err != nil {
		d.fail("broker", "fix mqtt.tls", err)
		return
	}
	type login struct{ what, user, password string }
	var logins []login
	pw, err := c.MQTT.Password()
	if err != nil {
		return // reported under secrets
	}
	logins = append(logins, login{"this device", c.MQTT.Username, pw})
	if c.Device.ID != c.MQTT.Username { // the device's own connection (queries, probes), with the same password
		logins = append(logins, login{"this device's queries", c.Device.ID, pw})
	}
	if c.Room.Floor {
		fpw, err := c.MQTT.FloorPassword()
		if err != nil {
			return
		}
		logins = append(logins, login{"the floor", c.MQTT.FloorIDs[0], fpw})
	}
	if placeholder(c.MQTT.Broker) {
		d.fail("broker "+c.MQTT.Broker, "set mqtt.broker to your room's broker (this address is an example's stand-in; nothing was sent to it)", errPlaceholder)
		return
	}
	for _, l := range logins {
		name := fmt.Sprintf("broker %s as %s (%s)", c.MQTT.Broker, l.user, l.what)
		b, err := bus.Dial(ctx, bus.Options{Broker: c.MQTT.Broker, ClientID: l.user + "-doctor-" + protocol.NewID()[:8],
			Username: l.user, Password: l.password, TLS: tlsc, ConnectTimeout: d.o.Timeout, Logger: d.o.Log})
		if err == nil {
			b.Close()
			d.ok(name, "accepted")
			continue
		}
		// The embedded broker runs inside chorusd: stopped, its users file
		// is what it would accept.
		if c.MQTT.Embedded.Enabled && refused(err) {
			if why := d.embeddedAccepts(l.user, l.password); why == "" {
				d.ok(name, "the embedded broker is not running (chorusd is stopped); it would accept these credentials (mqtt.embedded)")
			} else {
				d.fail(name, "set the password of "+l.user+" in /etc/default/chorusd to its line in "+c.MQTT.Embedded.UsersFile, errors.New(why))
			}
			continue
		}
		d.fail(name, "check mqtt.broker and that the broker runs; set the password (mqtt.password_env, mqtt.floor_password_env) to the one the broker has for "+l.user, err)
	}
}

// embeddedAccepts says why the embedded broker would refuse user ("" when
// it would accept).
func (d *doctor) embeddedAccepts(user, password string) string {
	e := d.c.MQTT.Embedded
	if e.AllowAnonymous && e.UsersFile == "" {
		return ""
	}
	users, err := e.Users()
	if err != nil {
		return err.Error()
	}
	want, ok := users[user]
	switch {
	case !ok:
		return fmt.Sprintf("user %s is not in %s", user, e.UsersFile)
	case want != password:
		return fmt.Sprintf("the password of %s differs from its line in %s", user, e.UsersFile)
	}
	return ""
}

// refused reports whether err is a connection nobody answered (not a
// refusal of the credentials).
func refused(err error) bool {
	var op *net.OpError
	return errors.As(err, &op) || strings.Contains(err.Error(), "connection refused")
}

// model: the model server answers a short request (its model list) within
// brain.timeout, and accepts the key.
func (d *doctor) model(ctx context.Context) {
	c := d.c
	if c.Companion == nil {
		return
	}
	b := c.Brain
	var u string
	h := http.Header{}
	key, _ := b.APIKey()
	switch b.Provider {
	case "openai":
		u = strings.TrimRight(or(b.BaseURL, "https://api.openai.com/v1"), "/") + "/models"
		if key != "" {
			h.Set("Authorization", "Bearer "+key)
		}
	case "anthropic":
		u = strings.TrimRight(or(b.BaseURL, "https://api.anthropic.com"), "/") + "/v1/models"
		h.Set("x-api-key", key)
		h.Set("anthropic-version", "2023-06-01")
	default:
		d.ok("brain ("+b.Provider+")", "needs no model server")
		return
	}
	name := "model server " + redact(u)
	if placeholder(u) {
		d.fail(name, "set brain.base_url to your model server (this address is an example's stand-in; nothing was sent to it)", errPlaceholder)
		return
	}
	timeout := b.Timeout
	if timeout <= 0 {
		timeout = d.o.Timeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		d.fail(name, "fix brain.base_url", err)
		return
	}
	req.Header = h
	start := time.Now()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		d.fail(name, fmt.Sprintf("start the model server at brain.base_url or fix the URL (waited up to %v, brain.timeout)", timeout), err)
		return
	}
	io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20))
	resp.Body.Close()
	took := time.Since(start).Round(time.Millisecond)
	switch {
	case resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden:
		d.fail(name, "set a valid key in "+or(b.APIKeyEnv, "brain.api_key_env")+" (/etc/default/chorusd)", fmt.Errorf("refused the key: HTTP %d", resp.StatusCode))
	case resp.StatusCode == http.StatusNotFound:
		d.fail(name, "check brain.base_url: an OpenAI-compatible server (llama.cpp, Ollama, vLLM) lists its models at {base_url}/models, base_url ending in /v1",
			fmt.Errorf("answered HTTP 404: not the model server's API"))
	case resp.StatusCode >= 500:
		d.fail(name, "look at the model server's log", fmt.Errorf("answered HTTP %d", resp.StatusCode))
	default:
		d.ok(name, "answered HTTP %d in %v", resp.StatusCode, took)
	}
}

func redact(u string) string {
	p, err := url.Parse(u)
	if err != nil {
		return u
	}
	p.User = nil
	return p.String()
}

func or(s, def string) string {
	if s == "" {
		return def
	}
	return s
}
