package system

import (
	"fmt"
	"image"
	"image/color"
	"image/png"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/chorus-robotics/chorus/runtime/brain/llm/llmtest"
	"github.com/chorus-robotics/chorus/runtime/bus/bustest"
	"github.com/chorus-robotics/chorus/runtime/protocol"
)

// The reliability suite of issue 10: faults, each on a real Mosquitto with
// separate chorusd processes, under the Mosquitto settings Chorus ships
// (systemd/mosquitto-chorus.conf). RELIABILITY.md records the figures the
// tests log.

var fiveRoster = map[string][]string{"lab": {"ann", "ben", "cat", "dan", "eve"}}

// grantFor waits for the grant of message id.
func (w *watcher) grantFor(t *testing.T, id string, within time.Duration) (protocol.TurnGrant, time.Time) {
	t.Helper()
	l := w.waitFor(t, within, "the grant for "+id, func(l line) bool {
		return l.topic == "chorus/rooms/lab/turns" && strings.Contains(l.payload, `"messageId":"`+id+`"`)
	})
	g, err := protocol.DecodeTurnGrant([]byte(l.payload), 0)
	if err != nil {
		t.Fatal(err)
	}
	return g, l.at
}

// One of five companions is killed (kill -9) while it thinks: the vote is
// decided as soon as its Will marks it offline, and the room goes on
// without it to terminal.
func TestSuiteOneOfFiveKilledMidVote(t *testing.T) {
	o := newOutside(t, bustest.Options{Rosters: fiveRoster})
	w := o.watch("chorus/rooms/lab/#")
	procs := map[string]*proc{"floor": o.floor("floor-box")}
	for _, id := range o.members {
		p := part{}
		if id == "eve" {
			p.brain = "{provider: rule, closing_after: 4, delay: 1500ms}" // still thinking when it dies
		}
		procs[id] = o.companionWith(id, false, p)
	}
	w.waitOnline(t, o.members...)
	time.Sleep(700 * time.Millisecond)
	id := o.say("Hello, all five of you!")
	time.Sleep(300 * time.Millisecond)
	procs["eve"].cmd.Process.Signal(syscall.SIGKILL)
	killed := time.Now()
	g, at := w.grantFor(t, id, 10*time.Second)
	t.Logf("killed mid-vote: decided %v after the kill (%s), votes %d, missing %v", at.Sub(killed).Round(time.Millisecond), g.DecidedBy, len(g.Votes), g.Missing)
	if at.Sub(killed) > 3*time.Second || g.SpeakerID() == "eve" || len(g.Votes) != 4 {
		t.Fatalf("grant %+v %v after the kill", g, at.Sub(killed))
	}
	w.terminal(t, 40*time.Second)
	for _, m := range w.messages() {
		if m.Params.From == "eve" {
			t.Fatalf("eve spoke after dying: %+v", m.Params)
		}
	}
	o.spokeOncePerGrant(w)
}

// A companion stopped with SIGSTOP (a hung robot that keeps its socket
// open): the vote deadline decides without it; its Will fires once the
// broker gives up on its keepalive; when it continues it comes back.
func TestSuiteStoppedCompanion(t *testing.T) {
	o := newOutside(t, bustest.Options{})
	w := o.watch("chorus/rooms/lab/#")
	defer w.dumpOnFailure(t)
	procs := o.room(w)
	time.Sleep(300 * time.Millisecond)
	procs["cat"].cmd.Process.Signal(syscall.SIGSTOP)
	stopped := time.Now()
	defer procs["cat"].cmd.Process.Signal(syscall.SIGCONT)
	id := o.say("Hello, robots!")
	g, at := w.grantFor(t, id, 10*time.Second)
	t.Logf("stopped companion: decided %v after the message (%s), missing %v", at.Sub(stopped).Round(time.Millisecond), g.DecidedBy, g.Missing)
	if g.DecidedBy != protocol.DecidedDeadline || len(g.Missing) != 1 || g.Missing[0] != "cat" || at.Sub(stopped) > 3*time.Second+time.Second {
		t.Fatalf("grant %+v after %v", g, at.Sub(stopped))
	}
	l := w.waitFor(t, 30*time.Second, "cat's Will", func(l line) bool {
		return l.topic == "chorus/rooms/lab/presence/cat" && strings.Contains(l.payload, `"online":false`)
	})
	t.Logf("stopped companion: its Will fired %v after the stop", l.at.Sub(stopped).Round(time.Millisecond))
	procs["cat"].cmd.Process.Signal(syscall.SIGCONT)
	cont := time.Now()
	back := w.waitFor(t, 30*time.Second, "cat back online", func(l line) bool {
		return l.at.After(cont) && l.topic == "chorus/rooms/lab/presence/cat" && strings.Contains(l.payload, `"online":true`)
	})
	t.Logf("stopped companion: back online %v after SIGCONT", back.at.Sub(cont).Round(time.Millisecond))
	w.terminal(t, 40*time.Second)
}

// The active floor is killed mid-conversation with a standby waiting: the
// standby grants within 3 s, the conversation runs to terminal, and no
// message is granted twice (the two floors never disagree).
func TestSuiteActiveFloorKilledMidConversation(t *testing.T) {
	o := newOutside(t, bustest.Options{})
	o.brainDelay = "300ms"
	w := o.watch("chorus/rooms/lab/#")
	defer w.dumpOnFailure(t)
	procs := o.room(w) // floor-box claims the room
	standby := o.floor("floor-box-2")
	time.Sleep(500 * time.Millisecond)
	o.say("Hello robots, who is deciding?")
	w.waitFor(t, 20*time.Second, "two companion messages", func(line) bool { return len(w.companionMessages()) >= 2 })
	procs["floor"].cmd.Process.Signal(syscall.SIGKILL)
	killed := time.Now()
	before := len(w.grants())
	g := w.waitFor(t, 10*time.Second, "a grant from the standby", func(l line) bool {
		return l.topic == "chorus/rooms/lab/turns" && len(w.grants()) > before
	})
	t.Logf("active floor killed: the standby granted %v after the kill", g.at.Sub(killed).Round(time.Millisecond))
	if d := g.at.Sub(killed); d > 3*time.Second+500*time.Millisecond {
		t.Errorf("the standby granted %v after the kill, want within 3 s", d)
	}
	w.terminal(t, 40*time.Second)
	time.Sleep(300 * time.Millisecond)
	o.spokeOncePerGrant(w)
	select {
	case <-standby.done:
		t.Fatalf("the standby exited:\n%s", standby.log.String())
	default:
	}
}

// The model server is down, too slow for the brain's timeout, or answers
// what is not the JSON asked for: every companion's turn degrades to
// listen, the room rests at once instead of stalling, and nothing crashes.
func TestSuiteModelDownSlowOrGarbage(t *testing.T) {
	dead, _ := net.Listen("tcp", "127.0.0.1:0")
	deadURL := "http://" + dead.Addr().String() + "/v1"
	dead.Close() // nothing listens there any more
	slow, garbage := llmtest.New(), llmtest.New()
	defer slow.Close()
	defer garbage.Close()
	slow.Latency = 5 * time.Second
	garbage.Garbage = true
	for name, url := range map[string]string{"down": deadURL, "slow": slow.BaseURL(), "garbage": garbage.BaseURL()} {
		t.Run(name, func(t *testing.T) {
			o := newOutside(t, bustest.Options{})
			w := o.watch("chorus/rooms/lab/#")
			procs := map[string]*proc{"floor": o.floor("floor-box")}
			for _, id := range []string{"ann", "ben", "cat"} {
				procs[id] = o.companionWith(id, false, part{brain: `{provider: openai, base_url: "` + url + `", model: m, timeout: 1s}`})
			}
			w.waitOnline(t, "ann", "ben", "cat")
			time.Sleep(700 * time.Millisecond)
			start := time.Now()
			id := o.say("Hello, robots!")
			g, at := w.grantFor(t, id, 15*time.Second)
			t.Logf("model %s: the room rested %v after the message, %s", name, at.Sub(start).Round(time.Millisecond), g.Reason)
			if g.Speaker != nil || len(g.Votes) != 3 {
				t.Fatalf("grant %+v", g)
			}
			for _, v := range g.Votes {
				if v.State != protocol.Listen || v.Importance != 0 {
					t.Fatalf("vote %+v, want listen at importance 0", v)
				}
			}
			for id, p := range procs {
				select {
				case <-p.done:
					t.Fatalf("%s exited:\n%s", id, p.log.String())
				default:
				}
			}
			if n := o.metric("ann", `chorus_brain_failures_total{reason="error"}`) + o.metric("ann", `chorus_brain_failures_total{reason="timeout"}`); n < 1 {
				t.Fatalf("brain failures counted %v", n)
			}
		})
	}
}

// The body's parts fail and come back: the TTS binary is removed, the
// audio output's folder goes away, the camera's frames go away. Each
// query gets an error result naming what failed, and the device serves
// again once the part is back — without a restart.
func TestSuiteBodyPartsGoneAndBack(t *testing.T) {
	espeak, err := exec.LookPath("espeak-ng")
	if err != nil {
		t.Skip("espeak-ng not installed")
	}
	o := newOutside(t, bustest.Options{})
	parts := filepath.Join(o.dir, "parts")
	ttsBin, audioDir, frames := filepath.Join(parts, "bin", "espeak-ng"), filepath.Join(parts, "audio"), filepath.Join(parts, "frames")
	os.MkdirAll(filepath.Dir(ttsBin), 0o755)
	os.Symlink(espeak, ttsBin)
	os.MkdirAll(frames, 0o755)
	writePNG(t, filepath.Join(frames, "f0.png"))
	w := o.watchAs("ben", "chorus/devices/dev-ann/results", "chorus/rooms/lab/presence/+")
	o.companionWith("ann", false, part{drivers: fmt.Sprintf(`{camera: {kind: image, path: %s, fps: 10}, audio: {kind: wav, dir: %s}, tts: {kind: espeak-ng, binary: %s}}`,
		frames, audioDir, ttsBin)})
	w.waitOnline(t, "ann")
	ask := o.pubLines("ben", "chorus/devices/dev-ann/queries")
	n := 0
	query := func(typ, body string) line {
		t.Helper()
		n++
		qid := fmt.Sprintf("q%d-%s", n, typ)
		ask.send(fmt.Sprintf(`{"jsonrpc":"2.0","method":"query.send","id":%q,"params":{"from":"ben","type":%q%s}}`, qid, typ, body))
		return w.waitFor(t, 15*time.Second, "the result of "+qid, func(l line) bool { return strings.Contains(l.payload, `"id":"`+qid+`"`) })
	}
	speak := func() line { return query("speak", `,"body":{"message":"Hello there."}`) }
	ok := func(l line) bool { return strings.Contains(l.payload, `"success":true`) }
	if r := speak(); !ok(r) {
		t.Fatalf("speak before: %s", r.payload)
	}
	if r := query("vision", ""); !ok(r) {
		t.Fatalf("vision before: %.200s", r.payload)
	}

	// goneAndBack takes away a part speaking needs (remove): speak fails
	// naming it (want), and serves again once restore has put it back.
	goneAndBack := func(part, want string, remove, restore func()) {
		t.Helper()
		remove()
		if r := speak(); ok(r) || !strings.Contains(r.payload, want) {
			t.Fatalf("speak without the %s: %s", part, r.payload)
		} else {
			t.Logf("%s gone: %s", part, r.payload)
		}
		restore()
		if r := speak(); !ok(r) {
			t.Fatalf("speak after the %s came back: %s", part, r.payload)
		}
	}
	goneAndBack("TTS binary", "espeak-ng", func() { os.Remove(ttsBin) }, func() { os.Symlink(espeak, ttsBin) })
	goneAndBack("audio output", "audio output", func() { os.RemoveAll(audioDir) }, func() { os.MkdirAll(audioDir, 0o755) })

	os.RemoveAll(frames)
	gone := time.Now()
	var r line
	for r = query("vision", ""); ok(r) && time.Since(gone) < 10*time.Second; r = query("vision", "") {
		time.Sleep(500 * time.Millisecond) // the last frame grows old
	}
	if ok(r) {
		t.Fatalf("vision still answered 10 s after the camera went: %.200s", r.payload)
	}
	t.Logf("camera gone: vision failed %v after: %.200s", time.Since(gone).Round(time.Millisecond), r.payload)
	os.MkdirAll(frames, 0o755)
	writePNG(t, filepath.Join(frames, "f0.png"))
	back := time.Now()
	for r = query("vision", ""); !ok(r) && time.Since(back) < 20*time.Second; r = query("vision", "") {
		time.Sleep(500 * time.Millisecond)
	}
	if !ok(r) {
		t.Fatalf("vision did not recover within 20 s of the camera's return: %.200s", r.payload)
	}
	t.Logf("camera back: vision answered again %v after", time.Since(back).Round(time.Millisecond))
}

// writePNG writes a small test frame.
func writePNG(t *testing.T, path string) {
	t.Helper()
	img := image.NewRGBA(image.Rect(0, 0, 64, 48))
	for i := range img.Pix {
		img.Pix[i] = uint8(i)
	}
	img.Set(1, 1, color.White)
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := png.Encode(f, img); err != nil {
		t.Fatal(err)
	}
}

// No secret ever leaves the process it was given to: the MQTT passwords
// and the model server's API key appear in no log (at debug level too,
// and on the failure paths: a refused key that the server quotes back, a
// refused MQTT login), not in Mosquitto's log, and not on /metrics or
// /healthz.
func TestSuiteNoSecretInLogsOrMetrics(t *testing.T) {
	const key, wrongKey = "sk-chorus-test-7f3a9c1e2b", "sk-chorus-wrong-5d8e0a4c"
	fake := llmtest.New()
	defer fake.Close()
	fake.APIKey = key
	o := newOutside(t, bustest.Options{})
	w := o.watch("chorus/rooms/lab/#")
	brain := `{provider: openai, base_url: "` + fake.BaseURL() + `", model: m, timeout: 3s, api_key_env: CHORUS_LLM_KEY}`
	procs := map[string]*proc{"floor-box": o.floor("floor-box")}
	procs["ann"] = o.companionWith("ann", false, part{brain: brain, log: "debug"}, "CHORUS_LLM_KEY="+key)
	procs["ben"] = o.companionWith("ben", false, part{brain: brain}, "CHORUS_LLM_KEY="+key)
	procs["cat"] = o.companionWith("cat", false, part{brain: brain, log: "debug"}, "CHORUS_LLM_KEY="+wrongKey)
	w.waitOnline(t, "ann", "ben", "cat")
	time.Sleep(700 * time.Millisecond)
	o.say("Hello, robots!")
	// cat, whose key is refused, listens without closing: the room rests
	// when ann and ben are done.
	w.waitFor(t, 40*time.Second, "a rest", func(l line) bool {
		g, err := protocol.DecodeTurnGrant([]byte(l.payload), 0)
		return l.topic == "chorus/rooms/lab/turns" && err == nil && g.Speaker == nil
	})
	if n := o.metric("cat", `chorus_brain_failures_total{reason="error"}`); n < 1 {
		t.Fatalf("cat's brain failed %v times with a refused key", n)
	}

	// A refused MQTT login: a CLI with a wrong password, and the right
	// password of another user.
	var outputs []string
	for _, pw := range []string{"pw-not-this-one", password("ben")} {
		cmd := exec.Command(o.chorus, "say", "-broker", o.url, "-as", "user", "hello")
		cmd.Env = append(os.Environ(), "CHORUS_MQTT_PASSWORD="+pw)
		out, err := cmd.CombinedOutput()
		if err == nil {
			t.Fatalf("chorus say with a wrong password succeeded:\n%s", out)
		}
		outputs = append(outputs, string(out))
	}
	cmd := exec.Command(o.chorusd, "--check-config", filepath.Join(o.dir, "ann.yaml"))
	cmd.Env = append(os.Environ(), "CHORUS_LLM_KEY="+key, "CHORUS_MQTT_PASSWORD="+password("ann"))
	out, _ := cmd.CombinedOutput()
	outputs = append(outputs, string(out))

	places := map[string]string{"mosquitto.log": o.mq.Log()}
	for i, out := range outputs {
		places[fmt.Sprintf("command %d", i)] = out
	}
	for id, p := range procs {
		places[id+" log"] = p.log.String()
		for _, path := range []string{"/metrics", "/healthz"} {
			resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d%s", o.ports[id], path))
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			places[id+" "+path] = string(b)
		}
	}
	secrets := []string{key, wrongKey, "pw-not-this-one"}
	for _, u := range outsideUsers {
		secrets = append(secrets, password(u))
	}
	searched := 0
	for where, text := range places {
		searched += len(text)
		for _, s := range secrets {
			if strings.Contains(text, s) {
				i := strings.Index(text, s)
				t.Errorf("%s shows the secret %q: …%s…", where, s, text[max(0, i-120):min(len(text), i+len(s)+40)])
			}
		}
	}
	if !strings.Contains(places["cat log"], "[redacted]") {
		t.Errorf("cat's log does not show the refused key's error:\n%s", places["cat log"])
	}
	t.Logf("searched %d places, %d KiB, for %d secrets", len(places), searched/1024, len(secrets))
}

// A whole overlapped conversation (issue 13) between chorusd processes
// on Mosquitto, with audio that plays in real time: the robots think while
// one talks, never talk at once, each starts no sooner than the pause
// after the voice before it, and the room reaches terminal.
func TestSuiteOverlappedConversationOnMosquitto(t *testing.T) {
	o := newOutside(t, bustest.Options{})
	w := o.watch("chorus/rooms/lab/#")
	defer w.dumpOnFailure(t)
	procs := map[string]*proc{"floor": o.floor("floor-box")}
	for _, id := range o.members {
		procs[id] = o.companionWith(id, false, part{
			brain:   "{provider: rule, closing_after: 3, delay: 400ms}", // thinks 400 ms, talks ~2 s
			drivers: "{audio: {kind: null, paced: true}, tts: {kind: tone}}"})
	}
	w.waitOnline(t, o.members...)
	time.Sleep(700 * time.Millisecond)
	o.say("Hello robots, tell me about your day!")
	w.terminal(t, 90*time.Second)
	time.Sleep(500 * time.Millisecond)
	o.spokeOncePerGrant(w)

	// Who spoke when, from the ends of the speaking statuses.
	type voice struct {
		id         string
		start, end time.Time
	}
	var vs []voice
	lines, _ := w.snapshot()
	for _, l := range lines {
		if !strings.HasPrefix(l.topic, "chorus/rooms/lab/speaking/") {
			continue
		}
		s, err := protocol.DecodeSpeaking([]byte(l.payload), 0)
		if err != nil {
			t.Fatalf("%s: %v", l.payload, err)
		}
		if !s.Speaking && s.DurationMs > 0 {
			vs = append(vs, voice{strings.TrimPrefix(l.topic, "chorus/rooms/lab/speaking/"), s.StartedAt, s.StartedAt.Add(time.Duration(s.DurationMs) * time.Millisecond)})
		}
	}
	if len(vs) < 3 {
		t.Fatalf("%d utterances heard", len(vs))
	}
	sort.Slice(vs, func(i, j int) bool { return vs[i].start.Before(vs[j].start) })
	var gaps []time.Duration
	for i := 1; i < len(vs); i++ {
		g := vs[i].start.Sub(vs[i-1].end)
		gaps = append(gaps, g.Round(time.Millisecond))
		if g < 20*time.Millisecond-10*time.Millisecond { // the room's pause is 20 ms
			t.Errorf("%s started %v after %s ended: robots talked at once", vs[i].id, g, vs[i-1].id)
		}
	}
	t.Logf("overlapped on Mosquitto: %d utterances, silences between robots %v (each robot thinks 400 ms)", len(vs), gaps)
	// Thinking happened while the voice before played: the silences are
	// far below the 400 ms a robot thinks.
	if med := median(durations(gaps)); med > 300 {
		t.Errorf("median silence %v ms: the robots did not think while another talked", med)
	}
}

func durations(ds []time.Duration) []float64 {
	out := make([]float64, len(ds))
	for i, d := range ds {
		out[i] = float64(d.Milliseconds())
	}
	return out
}
