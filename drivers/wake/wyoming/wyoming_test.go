package wyoming

import (
	"bufio"
	"context"
	"errors"
	"log/slog"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chorus-robotics/chorus/runtime/logtest"

	"go.uber.org/goleak"

	"github.com/chorus-robotics/chorus/drivers/stt/wyoming/wyomingtest"
	"github.com/chorus-robotics/chorus/drivers/wake"
	wy "github.com/chorus-robotics/chorus/drivers/wyoming"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// server is a Wyoming wake-word server written in the test: it checks
// that a client says detect, then audio-start at 16 kHz s16 mono, then
// streams audio-chunks of that format, and answers as its act says once
// it has heard after bytes of audio.
type server struct {
	t     *testing.T
	ln    net.Listener
	after int
	act   string // "detect", "garbage", "close", "error", "unknown-then-detect"
	wg    sync.WaitGroup

	mu        sync.Mutex
	models    []string // its wake words, as openWakeWord 2's info lists them
	describes int
	problems  []string
	names     []string
	got       int
}

func newServer(t *testing.T, after int, act string) *server {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &server{t: t, ln: ln, after: after, act: act, models: []string{"alexa_v0.1", "hey_jarvis_v0.1", "okay_nabu"}}
	s.wg.Add(1)
	go s.serve()
	t.Cleanup(func() { ln.Close(); s.wg.Wait() })
	return s
}

func (s *server) problem(p string) {
	s.mu.Lock()
	s.problems = append(s.problems, p)
	s.mu.Unlock()
}

func (s *server) serve() {
	defer s.wg.Done()
	wyomingtest.Serve(s.ln, &s.wg, s.handle)
}

func (s *server) handle(c net.Conn) {
	r := bufio.NewReader(c)
	want := []string{"detect", "audio-start"}
	answered := false
	for i := 0; ; i++ {
		ev, err := wy.ReadEvent(r)
		if err != nil {
			return
		}
		if i == 0 && ev.Type == "describe" { // on a connection of its own, as wyoming-openwakeword answers it
			s.mu.Lock()
			s.describes++
			var models []any
			for _, m := range s.models {
				models = append(models, map[string]any{"name": m, "description": strings.ReplaceAll(m, "_", " "), "installed": true, "languages": []string{}})
			}
			s.mu.Unlock()
			info, _ := wy.NewEvent("info", map[string]any{"wake": []any{map[string]any{"name": "openwakeword", "installed": true, "models": models}}}, nil)
			wy.WriteEvent(c, info)
			return
		}
		if i < len(want) {
			if ev.Type != want[i] {
				s.problem("event " + ev.Type + ", want " + want[i])
			}
			if ev.Type == "detect" {
				var d struct{ Names []string }
				ev.Decode(&d)
				s.mu.Lock()
				s.names = d.Names
				s.mu.Unlock()
			}
			if ev.Type == "audio-start" {
				var f wy.Audio
				ev.Decode(&f)
				if f != wy.Mono16(16000) {
					s.problem("audio format " + strings.TrimSpace(string(ev.Data["rate"])))
				}
			}
			continue
		}
		if ev.Type != "audio-chunk" {
			s.problem("event " + ev.Type + ", want audio-chunk")
			continue
		}
		s.mu.Lock()
		s.got += len(ev.Payload)
		got := s.got
		s.mu.Unlock()
		if got < s.after || answered {
			continue
		}
		answered = true
		switch s.act {
		case "detect":
			e, _ := wy.NewEvent("detection", map[string]any{"name": "hey_jarvis", "timestamp": 1200}, nil)
			wy.WriteEvent(c, e)
		case "unknown-then-detect":
			for _, typ := range []string{"x-vendor-score", "voice-started", "info"} {
				e, _ := wy.NewEvent(typ, map[string]any{"score": 0.4}, []byte{1, 2})
				wy.WriteEvent(c, e)
			}
			e, _ := wy.NewEvent("detection", map[string]any{"name": "hey_jarvis", "timestamp": 1200}, nil)
			wy.WriteEvent(c, e)
		case "garbage":
			c.Write([]byte("HTTP/1.1 400 Bad Request\r\n\r\n"))
		case "error":
			e, _ := wy.NewEvent("error", map[string]any{"text": "model not loaded"}, nil)
			wy.WriteEvent(c, e)
		case "close":
			return
		}
	}
}

// feed writes 20 ms frames until ctx ends or the listener fails.
func feed(ctx context.Context, l *Listener) {
	frame := make([]int16, 320)
	for ctx.Err() == nil {
		if l.Write(frame) != nil {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// listenFed has d listen at 16 kHz and feeds it until stopFeed or the
// end of the test, which closes the listener.
func listenFed(t *testing.T, d *Detector) (l *Listener, stopFeed func()) {
	t.Helper()
	wl, err := d.Listen(context.Background(), 16000)
	if err != nil {
		t.Fatal(err)
	}
	l = wl.(*Listener)
	t.Cleanup(func() { l.Close() })
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	go feed(ctx, l)
	return l, cancel
}

func TestDetection(t *testing.T) {
	s := newServer(t, 16000, "detect") // after half a second of audio
	d := &Detector{Addr: s.ln.Addr().String(), Names: []string{"hey_jarvis"}}
	l, stopFeed := listenFed(t, d)
	select {
	case det := <-l.Detections():
		if det.Name != "hey_jarvis" || time.Since(det.At) > time.Second {
			t.Fatalf("detection %+v", det)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("no detection")
	}
	stopFeed()
	l.Close()
	l.Close() // idempotent
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.problems) > 0 || len(s.names) != 1 || s.names[0] != "hey_jarvis" {
		t.Fatalf("server saw problems %v, names %v", s.problems, s.names)
	}
}

// A server that fails ends the listener with an error naming it; the
// Detections channel closes; Write reports it.
func TestServerFailures(t *testing.T) {
	for _, act := range []string{"garbage", "error", "close"} {
		t.Run(act, func(t *testing.T) {
			s := newServer(t, 640, act)
			l, err := (&Detector{Addr: s.ln.Addr().String()}).Listen(context.Background(), 16000)
			if err != nil {
				t.Fatal(err)
			}
			defer l.Close()
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			go feed(ctx, l.(*Listener))
			select {
			case _, ok := <-l.Detections():
				if ok {
					t.Fatal("a detection from a failing server")
				}
			case <-time.After(5 * time.Second):
				t.Fatal("the listener did not end")
			}
			if err := l.Err(); err == nil || !strings.Contains(err.Error(), s.ln.Addr().String()) {
				t.Fatalf("Err() = %v, want one naming the server", err)
			}
			if act != "close" && act != "error" && !errors.Is(l.Err(), wy.ErrProtocol) {
				t.Errorf("Err() = %v, want a protocol error", l.Err())
			}
			deadline := time.Now().Add(2 * time.Second)
			for l.Write(make([]int16, 320)) == nil && time.Now().Before(deadline) {
				time.Sleep(10 * time.Millisecond)
			}
			if l.Write(make([]int16, 320)) == nil {
				t.Error("Write after the failure succeeded")
			}
		})
	}
}

func TestNoServer(t *testing.T) {
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	addr := ln.Addr().String()
	ln.Close()
	if _, err := (&Detector{Addr: addr}).Listen(context.Background(), 16000); err == nil || !strings.Contains(err.Error(), addr) {
		t.Fatalf("err = %v, want one naming %s", err, addr)
	}
	if _, err := (&Detector{Addr: addr}).Listen(context.Background(), 100); err == nil {
		t.Fatal("a rate of 100 Hz was accepted")
	}
}

// Event types the listener does not know are skipped, as the reference
// clients skip them: the stream goes on and the detection after them
// comes through. (They ended the stream before.)
func TestUnknownEventsAreSkipped(t *testing.T) {
	s := newServer(t, 640, "unknown-then-detect")
	d := &Detector{Addr: s.ln.Addr().String()}
	l, _ := listenFed(t, d)
	select {
	case det, ok := <-l.Detections():
		if !ok || det.Name != "hey_jarvis" {
			t.Fatalf("detection %+v, %v; the stream ended: %v", det, ok, l.Err())
		}
	case <-time.After(5 * time.Second):
		t.Fatal("no detection")
	}
	if n := l.Skipped(); n != 3 {
		t.Errorf("%d events skipped, want 3", n)
	}
}

// openWakeWord 2 has okay_nabu, not ok_nabu, and says nothing when asked
// for ok_nabu: the first Listen reads the server's wake words and warns
// of the name it lacks (with the one meant), once; a later Listen does
// not ask again. hey_jarvis is hey_jarvis_v0.1 (versions aside, as the
// server matches them).
func TestListenWarnsOfNamesTheServerLacks(t *testing.T) {
	s := newServer(t, 1<<30, "detect")
	var logs logtest.Buffer
	d := &Detector{Addr: s.ln.Addr().String(), Names: []string{"ok_nabu", "Hey_Jarvis"}, Log: slog.New(slog.NewTextHandler(&logs, nil))}
	for range 2 {
		l, err := d.Listen(context.Background(), 16000)
		if err != nil {
			t.Fatal(err)
		}
		deadline := time.Now().Add(5 * time.Second)
		for !strings.Contains(logs.String(), "level=WARN") && time.Now().Before(deadline) {
			time.Sleep(5 * time.Millisecond)
		}
		l.Close()
	}
	out := logs.String()
	if strings.Count(out, "level=WARN") != 1 || !strings.Contains(out, `no wake word \"ok_nabu\" (did you mean \"okay_nabu\"?)`) || strings.Contains(out, `\"Hey_Jarvis\"`) {
		t.Fatalf("want one warning naming ok_nabu and okay_nabu, not hey_jarvis:\n%s", out)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.describes != 1 {
		t.Fatalf("the server was asked %d times", s.describes)
	}
}

func TestCheckNames(t *testing.T) {
	s := newServer(t, 1<<30, "detect")
	for _, c := range []struct {
		names   []string
		missing string // "" for none
	}{
		{[]string{"okay_nabu", "hey_jarvis", "alexa"}, ""},
		{[]string{"HEY JARVIS", "hey_jarvis_v0.1"}, ""},
		{[]string{"ok_nabu"}, `"ok_nabu" (did you mean "okay_nabu"?)`},
		{[]string{"computer", "alexa"}, `no wake word "computer"; it has alexa_v0.1, hey_jarvis_v0.1, okay_nabu`},
		{nil, ""},
	} {
		d := &Detector{Addr: s.ln.Addr().String(), Names: c.names}
		have, err := d.CheckNames(context.Background())
		if len(have) != 3 {
			t.Fatalf("%v: the server has %v", c.names, have)
		}
		if c.missing == "" {
			if err != nil {
				t.Errorf("%v: %v", c.names, err)
			}
			continue
		}
		if !errors.Is(err, wake.ErrUnknownName) || !strings.Contains(err.Error(), c.missing) {
			t.Errorf("%v: %v, want one naming %s", c.names, err, c.missing)
		}
	}
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	addr := ln.Addr().String()
	ln.Close()
	if _, err := (&Detector{Addr: addr, Names: []string{"alexa"}}).CheckNames(context.Background()); err == nil || errors.Is(err, wake.ErrUnknownName) {
		t.Fatalf("a server that is down: %v", err)
	}
}
