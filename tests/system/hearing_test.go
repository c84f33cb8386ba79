package system

import (
	"bufio"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/chorus-robotics/chorus/drivers/mic/mictest"
	wy "github.com/chorus-robotics/chorus/drivers/wyoming"
	"github.com/chorus-robotics/chorus/runtime/bus/bustest"
	"github.com/chorus-robotics/chorus/runtime/protocol"
	"github.com/chorus-robotics/chorus/runtime/topic"
)

// Hearing from the outside (issue 21): three chorusd on Mosquitto share an
// air (`chorus air serve`, another process): every robot plays its voice
// (espeak-ng) into it and hears it through its microphone, with the other
// robots' voices and a person's (`chorus air say`). Each robot recognises
// speech with the real pocketsphinx and a grammar that holds the person's
// sentences, so any speech it failed to gate would come back as one of
// them.

const hearingGrammar = `#JSGF V1.0;
grammar room;
public <utterance> = hello robots what is the weather like today
                   | hello robots what time is it
                   | hey jarvis
                   | goodbye robots;
`

// air runs `chorus air serve` and returns its address.
func (o *outside) air() string {
	o.t.Helper()
	cmd := exec.Command(o.chorus, "air", "serve", "-listen", "127.0.0.1:0")
	out, err := cmd.StdoutPipe()
	if err != nil {
		o.t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		o.t.Fatal(err)
	}
	o.t.Cleanup(func() { cmd.Process.Signal(syscall.SIGTERM); cmd.Wait() })
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		o.t.Fatalf("chorus air serve: %v", err)
	}
	go io.Copy(io.Discard, out)
	return strings.TrimSpace(line)
}

// sayAloud has the person say text into the air, and returns when it has
// been said.
func (o *outside) sayAloud(airAddr, text string) {
	o.t.Helper()
	if out, err := exec.Command(o.chorus, "air", "say", "-air", airAddr, "-text", text).CombinedOutput(); err != nil {
		o.t.Fatalf("chorus air say: %v\n%s", err, out)
	}
}

// hearingRoom starts the floor and three companions that speak and hear
// through the air, hearing.wake as given.
func (o *outside) hearingRoom(w *watcher, airAddr, wake string) {
	o.t.Helper()
	gram := filepath.Join(o.dir, "room.gram")
	os.WriteFile(gram, []byte(hearingGrammar), 0o644)
	o.floor("floor-box")
	for _, id := range o.members {
		o.companionWith(id, false, part{
			brain: "{provider: rule, closing_after: 18}",
			drivers: "{audio: {kind: air, air: \"" + airAddr + "\"}, tts: {kind: espeak-ng}, mic: {kind: air, air: \"" + airAddr + "\"}}" +
				"\nhearing: {enabled: true, stt: {kind: pocketsphinx, grammar: " + gram + "}, wake: " + wake + "}",
		})
	}
	w.waitOnline(o.t, o.members...)
	w.waitFor(o.t, 5*time.Second, "the floor's claim", func(l line) bool {
		return l.topic == "chorus/rooms/lab/floor/leader" && strings.Contains(l.payload, `"online":true`)
	})
}

// quiet waits until no robot's last speaking status says it speaks.
func (w *watcher) quiet(t *testing.T, within time.Duration) {
	t.Helper()
	deadline := time.Now().Add(within)
	for time.Now().Before(deadline) {
		last := map[string]bool{}
		for _, l := range w.snapshotLines() {
			if strings.HasPrefix(l.topic, "chorus/rooms/lab/speaking/") {
				last[l.topic] = strings.Contains(l.payload, `"speaking":true`)
			}
		}
		speaking := false
		for _, on := range last {
			speaking = speaking || on
		}
		if !speaking {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("a robot still speaks after %v", within)
}

// heard are the Messages the room published as the person.
func (w *watcher) heard() []protocol.Message {
	var out []protocol.Message
	for _, m := range w.messages() {
		if m.Params.From == "user" && m.Params.Metadata[protocol.MetaSource] == protocol.SourceVoice {
			out = append(out, m)
		}
	}
	return out
}

func needHearing(t *testing.T) {
	mictest.Need(t, "espeak-ng", "pocketsphinx_continuous")
}

// hearingOutside is a hearing test's outside: a broker whose room lab
// hears the user's voice, and a watcher of what the room says and hears
// (shown when the test fails).
func hearingOutside(t *testing.T) (*outside, *watcher) {
	t.Helper()
	needHearing(t)
	o := newOutside(t, bustest.Options{Scheme: topic.New("").WithVoice("lab", "user")})
	w := o.watch("chorus/rooms/lab/messages/+", "chorus/rooms/lab/turns", "chorus/rooms/lab/presence/+",
		"chorus/rooms/lab/floor/leader", "chorus/rooms/lab/heard/+", "chorus/rooms/lab/speaking/+")
	t.Cleanup(func() { w.dumpOnFailure(t) })
	return o, w
}

// A person speaks once to three robots that all hear it: the room gets
// exactly one Message; then the robots talk among themselves, in the same
// air, for many turns, and none of their utterances ever becomes a
// Message; the person speaks while a robot speaks: gated, nothing heard.
func TestHearingOneSentenceOneMessage(t *testing.T) {
	o, w := hearingOutside(t)
	airAddr := o.air()
	o.hearingRoom(w, airAddr, "{kind: none}")

	o.sayAloud(airAddr, "Hello robots, what is the weather like today?")
	first := w.waitFor(t, 15*time.Second, "the person's sentence as a Message", func(l line) bool {
		return l.topic == "chorus/rooms/lab/messages/user"
	})
	if !strings.Contains(first.payload, `"message":"hello robots what is the weather like today"`) {
		t.Fatalf("heard %s", first.payload)
	}
	// The robots answer and talk on, in the air, until the conversation ends.
	w.waitFor(t, 3*time.Minute, "the conversation's end", func(l line) bool {
		return l.topic == "chorus/rooms/lab/turns" && strings.Contains(l.payload, `"speaker":null`) &&
			strings.Contains(l.payload, `"closing":"terminal"`)
	})
	turns := 0
	for _, m := range w.messages() {
		if m.Params.From != "user" {
			turns++
		}
	}
	if h := w.heard(); len(h) != 1 {
		t.Fatalf("the room heard %d Messages, want the one the person said: %+v", len(h), h)
	}
	reports := 0 // transcripts; each robot's ear also told the room when the person began and when it ended
	open := map[string]bool{}
	for _, l := range w.snapshotLines() {
		if !strings.HasPrefix(l.topic, "chorus/rooms/lab/heard/") {
			continue
		}
		h, err := protocol.DecodeHeard([]byte(l.payload), 0)
		switch {
		case err != nil:
			t.Errorf("a heard report that does not decode: %v", err)
		case h.State == protocol.HeardOpen:
			open[h.Utterance] = true
		case h.State == protocol.HeardTentative || h.State == protocol.HeardResumed: // the utterance goes on
		default:
			delete(open, h.Utterance)
			if h.State == "" {
				reports++
			}
		}
	}
	if len(open) > 0 {
		t.Errorf("%d utterances the room was told of were never ended", len(open))
	}
	gated := 0.0
	for _, id := range o.members {
		gated += o.metric(id, `chorus_hearing_total{event="gated"}`)
	}
	t.Logf("one sentence: %d reports, 1 Message; then %d robot turns in the air: no robot utterance heard (%v utterances gated)", reports, turns, gated)
	if turns < 20 {
		t.Fatalf("only %d robot turns", turns)
	}
	if reports < 1 || reports > 3 {
		t.Fatalf("%d heard reports for one sentence, want 1 to 3", reports)
	}

	// The person speaks again (the room starts anew), then while a robot
	// answers: what is said over a robot's voice is not heard.
	w.quiet(t, 20*time.Second)
	time.Sleep(500 * time.Millisecond) // the room's tail
	t0 := time.Now()
	o.sayAloud(airAddr, "Hello robots, what time is it?")
	defer func() {
		if t.Failed() {
			for _, id := range o.members {
				for _, l := range strings.Split(o.metricsText(id), "\n") {
					if strings.HasPrefix(l, "chorus_hearing") {
						t.Logf("%s %s", id, l)
					}
				}
			}
		}
	}()
	w.waitFor(t, 15*time.Second, "the second sentence as a Message", func(l line) bool {
		return l.topic == "chorus/rooms/lab/messages/user" && strings.Contains(l.payload, "what time is it") && l.at.After(t0)
	})
	w.waitFor(t, 15*time.Second, "a robot speaking", func(l line) bool {
		return strings.HasPrefix(l.topic, "chorus/rooms/lab/speaking/") && strings.Contains(l.payload, `"speaking":true`) && l.at.After(t0)
	})
	utterances := func() float64 {
		n := 0.0
		for _, id := range o.members {
			n += o.metric(id, `chorus_hearing_total{event="utterance"}`)
		}
		return n
	}
	before, started := len(w.heard()), utterances()
	o.sayAloud(airAddr, "Goodbye robots.")
	time.Sleep(3 * time.Second)
	if h := w.heard()[before:]; len(h) != 0 {
		t.Fatalf("a sentence said while a robot spoke was heard: %+v", h)
	}
	if n := utterances() - started; n != 0 {
		t.Fatalf("%v utterances went to speech to text while a robot spoke", n)
	}
}

// wakeServer is a Wyoming wake-word server in the test: every robot
// streams its microphone to it; when the test says the wake word was
// spoken, it answers each stream a detection (as openWakeWord would on
// hearing it), and counts the audio it received.
type wakeServer struct {
	ln    net.Listener
	mu    sync.Mutex
	conns []net.Conn
	bytes int
	wg    sync.WaitGroup
}

func startWakeServer(t *testing.T) *wakeServer {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &wakeServer{ln: ln}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			s.mu.Lock()
			s.conns = append(s.conns, c)
			s.mu.Unlock()
			s.wg.Add(1)
			go func() {
				defer s.wg.Done()
				r := bufio.NewReader(c)
				for {
					ev, err := wy.ReadEvent(r)
					if err != nil {
						return
					}
					s.mu.Lock()
					s.bytes += len(ev.Payload)
					s.mu.Unlock()
				}
			}()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		s.mu.Lock()
		for _, c := range s.conns {
			c.Close()
		}
		s.mu.Unlock()
		s.wg.Wait()
	})
	return s
}

func (s *wakeServer) detect() {
	s.mu.Lock()
	defer s.mu.Unlock()
	ev, _ := wy.NewEvent("detection", map[string]any{"name": "hey_jarvis", "timestamp": 0}, nil)
	for _, c := range s.conns {
		wy.WriteEvent(c, ev)
	}
}

// With a wake-word server: the room hears nobody until the wake word;
// the wake word said while a robot speaks barges in (the robot stops), and
// the person's next sentence is heard.
func TestHearingWakeWordBargesIn(t *testing.T) {
	o, w := hearingOutside(t)
	airAddr := o.air()
	ws := startWakeServer(t)
	o.hearingRoom(w, airAddr, `{kind: wyoming, url: "tcp://`+ws.ln.Addr().String()+`", listen_for: 6s}`)

	o.sayAloud(airAddr, "Hello robots, what time is it?")
	time.Sleep(2 * time.Second)
	if h := w.heard(); len(h) != 0 {
		t.Fatalf("heard before any wake word: %+v", h)
	}
	// A robot talks (a typed question starts the conversation); the
	// person says the wake word while it does.
	o.say("Ann, tell us a long story, please.")
	speaking := w.waitFor(t, 15*time.Second, "a robot speaking", func(l line) bool {
		return strings.HasPrefix(l.topic, "chorus/rooms/lab/speaking/") && strings.Contains(l.payload, `"speaking":true`)
	})
	who := strings.TrimPrefix(speaking.topic, "chorus/rooms/lab/speaking/")
	said := make(chan struct{})
	go func() {
		defer close(said)
		exec.Command(o.chorus, "air", "say", "-air", airAddr, "-text", "Hey Jarvis.").Run()
	}()
	time.Sleep(300 * time.Millisecond)
	ws.detect()
	w.waitFor(t, 10*time.Second, "the wake word as a Message", func(l line) bool {
		return l.topic == "chorus/rooms/lab/messages/user" && strings.Contains(l.payload, `"wake":true`)
	})
	stopped := w.waitFor(t, 10*time.Second, who+" stopping (barge-in)", func(l line) bool {
		return l.topic == speaking.topic && strings.Contains(l.payload, `"speaking":false`)
	})
	<-said
	t.Logf("%s stopped (%s) after the wake word", who, stopped.at.Format(time.TimeOnly))
	o.sayAloud(airAddr, "Hello robots, what is the weather like today?")
	w.waitFor(t, 15*time.Second, "the sentence after the wake word", func(l line) bool {
		return l.topic == "chorus/rooms/lab/messages/user" && strings.Contains(l.payload, "weather")
	})
	ws.mu.Lock()
	got := ws.bytes
	ws.mu.Unlock()
	if got < 3*16000*2 {
		t.Fatalf("the wake-word server got %d bytes of audio", got)
	}
}
