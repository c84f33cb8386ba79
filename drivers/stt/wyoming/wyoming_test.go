package wyoming

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chorus-robotics/chorus/runtime/logtest"

	"github.com/chorus-robotics/chorus/drivers/stt"
	"github.com/chorus-robotics/chorus/drivers/stt/stttest"
	wy "github.com/chorus-robotics/chorus/drivers/wyoming"
)

// server is a Wyoming server in the test: it accepts connections and
// hands each to handle, which reports what it found wrong.
type server struct {
	ln   net.Listener
	wg   sync.WaitGroup
	errs chan error
}

func serve(t *testing.T, handle func(r *bufio.Reader, c net.Conn) error) *server {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &server{ln: ln, errs: make(chan error, 16)}
	s.wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			s.wg.Go(func() {
				defer c.Close()
				c.SetDeadline(time.Now().Add(10 * time.Second))
				if err := handle(bufio.NewReader(c), c); err != nil {
					s.errs <- err
				}
			})
		}
	})
	t.Cleanup(func() {
		ln.Close()
		s.wg.Wait()
		close(s.errs)
		for err := range s.errs {
			t.Errorf("server: %v", err)
		}
	})
	return s
}

func (s *server) addr() string { return s.ln.Addr().String() }

// expect reads one event and checks its type.
func expect(r *bufio.Reader, typ string) (wy.Event, error) {
	ev, err := wy.ReadEvent(r)
	if err != nil {
		return ev, fmt.Errorf("reading %s: %w", typ, err)
	}
	if ev.Type != typ {
		return ev, fmt.Errorf("got %s, want %s", ev.Type, typ)
	}
	return ev, nil
}

func checkFormat(ev wy.Event, rate int) error {
	var f struct {
		Rate, Width, Channels *int
	}
	if err := ev.Decode(&f); err != nil {
		return err
	}
	if f.Rate == nil || f.Width == nil || f.Channels == nil || *f.Rate != rate || *f.Width != 2 || *f.Channels != 1 {
		return fmt.Errorf("%s data %v, want rate %d width 2 channels 1", ev.Type, ev.Data, rate)
	}
	return nil
}

// transcribeServer checks the whole exchange as wyoming-faster-whisper
// reads it and answers text. got receives the PCM bytes it counted.
func transcribeServer(rate int, lang, text string, got chan<- []byte) func(r *bufio.Reader, c net.Conn) error {
	return func(r *bufio.Reader, c net.Conn) error {
		ev, err := expect(r, "transcribe")
		if err != nil {
			return err
		}
		var tr struct{ Language, Name string }
		if err := ev.Decode(&tr); err != nil || tr.Language != lang {
			return fmt.Errorf("transcribe data %v, want language %q", ev.Data, lang)
		}
		if ev, err = expect(r, "audio-start"); err != nil {
			return err
		}
		if err := checkFormat(ev, rate); err != nil {
			return err
		}
		var pcm []byte
		chunks := 0
		for {
			ev, err := wy.ReadEvent(r)
			if err != nil {
				return fmt.Errorf("after %d chunks: %w", chunks, err)
			}
			if ev.Type == "audio-stop" {
				break
			}
			if ev.Type != "audio-chunk" {
				return fmt.Errorf("got %s among the chunks", ev.Type)
			}
			if err := checkFormat(ev, rate); err != nil {
				return err
			}
			if len(ev.Payload) == 0 || len(ev.Payload)%2 != 0 {
				return fmt.Errorf("chunk of %d bytes", len(ev.Payload))
			}
			chunks++
			pcm = append(pcm, ev.Payload...)
		}
		if chunks == 0 {
			return errors.New("audio-stop before any chunk")
		}
		got <- pcm
		ans, _ := wy.NewEvent("transcript", map[string]any{"text": text}, nil)
		return wy.WriteEvent(c, ans)
	}
}

func speech(n int) []int16 {
	p := make([]int16, n)
	for i := range p {
		p[i] = int16(i*37 - 5000)
	}
	return p
}

func TestTranscribe(t *testing.T) {
	got := make(chan []byte, 1)
	srv := serve(t, transcribeServer(16000, "en", " hello robots ", got))
	e := &Engine{Addr: srv.addr(), Language: "en"}
	s, err := e.Start(context.Background(), 16000)
	if err != nil {
		t.Fatal(err)
	}
	audio := speech(3 * 16000) // a 3-second sentence, in 20 ms frames
	for i := 0; i < len(audio); i += 320 {
		if err := s.Write(audio[i : i+320]); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Write(make([]int16, 40000)); err != nil { // one big write is split into 1 s chunks
		t.Fatal(err)
	}
	audio = append(audio, make([]int16, 40000)...)
	tr, err := s.Finish(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if tr != (stt.Transcript{Text: "hello robots", Confidence: -1, Language: "en"}) {
		t.Fatalf("transcript %+v", tr)
	}
	pcm := <-got
	if want := stt.AppendLE16(nil, audio); string(pcm) != string(want) {
		t.Fatalf("server got %d bytes, want %d, or other bytes", len(pcm), len(want))
	}
	if _, err := s.Finish(context.Background()); !errors.Is(err, stt.ErrFinished) {
		t.Errorf("second Finish: %v", err)
	}
	s.Abort() // after Finish: harmless
}

func TestEmptyTranscript(t *testing.T) {
	srv := serve(t, transcribeServer(48000, "", "  ", make(chan []byte, 1)))
	s, err := (&Engine{Addr: srv.addr()}).Start(context.Background(), 48000)
	if err != nil {
		t.Fatal(err)
	}
	s.Write(speech(960))
	if _, err := s.Finish(context.Background()); !errors.Is(err, stt.ErrEmpty) {
		t.Fatalf("Finish = %v, want ErrEmpty", err)
	}
}

// drain reads events until the client goes away.
func drain(r *bufio.Reader) error {
	for {
		if _, err := wy.ReadEvent(r); err != nil {
			return nil
		}
	}
}

func TestFailures(t *testing.T) {
	for _, tc := range []struct {
		name    string
		handle  func(r *bufio.Reader, c net.Conn) error
		timeout time.Duration
		want    string
		is      error
	}{
		{"hangs", func(r *bufio.Reader, c net.Conn) error { return drain(r) }, 300 * time.Millisecond, "timed out", nil},
		{"garbage", func(r *bufio.Reader, c net.Conn) error {
			for ev, err := wy.ReadEvent(r); err == nil && ev.Type != "audio-stop"; ev, err = wy.ReadEvent(r) {
			}
			c.Write([]byte("HTTP/1.1 400 Bad Request\r\n\r\n"))
			return nil
		}, 0, "not a JSON object", wy.ErrProtocol},
		{"an event it does not wait for, then closes", func(r *bufio.Reader, c net.Conn) error {
			for ev, err := wy.ReadEvent(r); err == nil && ev.Type != "audio-stop"; ev, err = wy.ReadEvent(r) {
			}
			return wy.WriteEvent(c, wy.Event{Type: "synthesize"}) // skipped
		}, 0, "closed the connection without answering", wy.ErrClosed},
		{"error event", func(r *bufio.Reader, c net.Conn) error {
			for ev, err := wy.ReadEvent(r); err == nil && ev.Type != "audio-stop"; ev, err = wy.ReadEvent(r) {
			}
			ev, _ := wy.NewEvent("error", map[string]string{"text": "model not loaded", "code": "x"}, nil)
			return wy.WriteEvent(c, ev)
		}, 0, `"model not loaded"`, nil},
		{"transcript without text", func(r *bufio.Reader, c net.Conn) error {
			for ev, err := wy.ReadEvent(r); err == nil && ev.Type != "audio-stop"; ev, err = wy.ReadEvent(r) {
			}
			return wy.WriteEvent(c, wy.Event{Type: "transcript"})
		}, 0, "without a text", wy.ErrProtocol},
		{"closes mid-stream", func(r *bufio.Reader, c net.Conn) error {
			expect(r, "transcribe")
			expect(r, "audio-start")
			expect(r, "audio-chunk")
			return nil // closes
		}, 0, "", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := serve(t, tc.handle)
			e := &Engine{Addr: srv.addr(), Timeout: 5 * time.Second}
			if tc.timeout > 0 {
				e.Timeout = tc.timeout
			}
			s, err := e.Start(context.Background(), 16000)
			if err != nil {
				t.Fatal(err)
			}
			for range 10 {
				if err := s.Write(speech(1600)); err != nil {
					break // the closed connection may show already
				}
				time.Sleep(5 * time.Millisecond)
			}
			start := time.Now()
			_, err = s.Finish(context.Background())
			if err == nil || errors.Is(err, stt.ErrEmpty) {
				t.Fatalf("Finish = %v, want a failure", err)
			}
			if !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), srv.addr()) || (tc.is != nil && !errors.Is(err, tc.is)) {
				t.Fatalf("Finish error %q, want it to say %q and the address", err, tc.want)
			}
			if d := time.Since(start); d > 3*time.Second {
				t.Fatalf("Finish took %v", d)
			}
			t.Logf("%v", err)
		})
	}
}

func TestNotListening(t *testing.T) {
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	addr := ln.Addr().String()
	ln.Close()
	_, err := (&Engine{Addr: addr}).Start(context.Background(), 16000)
	if err == nil || !strings.Contains(err.Error(), "connect to "+addr) || !strings.Contains(err.Error(), "refused") {
		t.Fatalf("Start = %v", err)
	}
	if _, err := (&Engine{}).Start(context.Background(), 16000); err == nil {
		t.Fatal("no address accepted")
	}
}

func TestContextCancelsFinish(t *testing.T) {
	srv := serve(t, func(r *bufio.Reader, c net.Conn) error { return drain(r) })
	s, err := (&Engine{Addr: srv.addr()}).Start(context.Background(), 16000)
	if err != nil {
		t.Fatal(err)
	}
	s.Write(speech(1600))
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	if _, err := s.Finish(ctx); !errors.Is(err, context.DeadlineExceeded) || strings.Contains(err.Error(), "of audio-stop") {
		t.Fatalf("Finish = %v, want the deadline (not the server's after-stop wait)", err)
	}
}

func TestAbortDuringFinish(t *testing.T) {
	srv := serve(t, func(r *bufio.Reader, c net.Conn) error { return drain(r) })
	s, err := (&Engine{Addr: srv.addr()}).Start(context.Background(), 16000)
	if err != nil {
		t.Fatal(err)
	}
	s.Write(speech(1600))
	stttest.AbortDuringFinish(t, s, 50*time.Millisecond, 3*time.Second)
	if err := s.Write(speech(10)); !errors.Is(err, stt.ErrAborted) {
		t.Fatalf("Write after Abort = %v", err)
	}
}

// TestOverflow: a server that never reads fills the socket buffers, the
// queue fills, Write still returns at once and Finish says overflow.
func TestOverflow(t *testing.T) {
	release := make(chan struct{})
	srv := serve(t, func(r *bufio.Reader, c net.Conn) error { <-release; return nil })
	defer close(release)
	s, err := (&Engine{Addr: srv.addr(), MaxQueue: 4, Timeout: 300 * time.Millisecond}).Start(context.Background(), 48000)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	for range 300 {
		s.Write(speech(48000))
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Fatalf("300 writes took %v", d)
	}
	_, err = s.Finish(context.Background())
	if !errors.Is(err, stt.ErrOverflow) {
		t.Fatalf("Finish = %v, want ErrOverflow", err)
	}
}

func TestConcurrentSessions(t *testing.T) {
	got := make(chan []byte, 8)
	srv := serve(t, transcribeServer(16000, "", "ok", got))
	e := &Engine{Addr: srv.addr()}
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			s, err := e.Start(context.Background(), 16000)
			if err != nil {
				t.Error(err)
				return
			}
			for range 20 {
				s.Write(speech(320))
			}
			if tr, err := s.Finish(context.Background()); err != nil || tr.Text != "ok" {
				t.Error(tr, err)
			}
		})
	}
	wg.Wait()
}

func TestDescribe(t *testing.T) {
	srv := serve(t, func(r *bufio.Reader, c net.Conn) error {
		if _, err := expect(r, "describe"); err != nil {
			return err
		}
		ev, _ := wy.NewEvent("info", map[string]any{"asr": []any{map[string]any{
			"name": "faster-whisper", "installed": true, "version": "2.4.0", "description": "Faster Whisper transcription",
			"attribution": map[string]string{"name": "Guillaume Klein"},
			"models":      []any{map[string]any{"name": "tiny-int8", "languages": []string{"en", "fr"}, "installed": true}},
		}}, "tts": []any{}}, nil)
		return wy.WriteEvent(c, ev)
	})
	info, err := (&Engine{Addr: srv.addr()}).Describe(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(info.ASR) != 1 || info.ASR[0].Name != "faster-whisper" || info.ASR[0].Models[0].Languages[1] != "fr" {
		t.Fatalf("info %+v", info)
	}

	noASR := serve(t, func(r *bufio.Reader, c net.Conn) error {
		expect(r, "describe")
		ev, _ := wy.NewEvent("info", map[string]any{"tts": []any{map[string]string{"name": "piper"}}}, nil)
		return wy.WriteEvent(c, ev)
	})
	if _, err := (&Engine{Addr: noASR.addr()}).Describe(context.Background()); err == nil || !strings.Contains(err.Error(), "no speech recognition") {
		t.Fatalf("Describe of a TTS-only server = %v", err)
	}
}

// Event types the client does not know are skipped, as the reference
// clients skip them (a newer server's progress events, a vendor's own):
// before the transcript and before describe's info.
func TestUnknownEventsAreSkipped(t *testing.T) {
	srv := serve(t, func(r *bufio.Reader, c net.Conn) error {
		ev, err := wy.ReadEvent(r)
		if err != nil {
			return err
		}
		if ev.Type == "describe" {
			x, _ := wy.NewEvent("x-vendor-hello", map[string]any{"v": 2}, []byte("abc"))
			wy.WriteEvent(c, x)
			info, _ := wy.NewEvent("info", map[string]any{"asr": []any{map[string]any{"name": "faster-whisper", "models": []any{}}}}, nil)
			return wy.WriteEvent(c, info)
		}
		for ev.Type != "audio-stop" {
			if ev, err = wy.ReadEvent(r); err != nil {
				return err
			}
		}
		for _, typ := range []string{"x-progress", "transcript-start", "run-pipeline", "transcript-chunk"} {
			x, _ := wy.NewEvent(typ, map[string]any{"percent": 50, "text": "hel"}, nil)
			if err := wy.WriteEvent(c, x); err != nil {
				return err
			}
		}
		tr, _ := wy.NewEvent("transcript", map[string]any{"text": "hello"}, nil)
		return wy.WriteEvent(c, tr)
	})
	e := &Engine{Addr: srv.addr(), Timeout: 5 * time.Second}
	if _, tr, err := utterance(t, e, 3200); err != nil || tr.Text != "hello" {
		t.Fatalf("Finish = %+v, %v; want hello", tr, err)
	}
	if info, err := e.Describe(context.Background()); err != nil || info.ASR[0].Name != "faster-whisper" {
		t.Fatalf("Describe = %+v, %v", info, err)
	}
}

// voskLike answers as wyoming-vosk does: describe lists its models, and a
// transcribe naming a model it lacks makes its handler fail at the first
// audio chunk and leave the connection open without an answer. names
// receives the name of each transcribe.
func voskLike(models []string, names chan<- string) func(r *bufio.Reader, c net.Conn) error {
	return func(r *bufio.Reader, c net.Conn) error {
		ev, err := wy.ReadEvent(r)
		if err != nil {
			return err
		}
		if ev.Type == "describe" {
			var ms []any
			for _, m := range models {
				ms = append(ms, map[string]any{"name": m, "languages": []string{"en"}, "installed": true})
			}
			info, _ := wy.NewEvent("info", map[string]any{"asr": []any{map[string]any{"name": "vosk", "installed": true, "models": ms}}}, nil)
			return wy.WriteEvent(c, info)
		}
		if ev.Type != "transcribe" {
			return fmt.Errorf("got %s, want transcribe or describe", ev.Type)
		}
		var tr struct{ Name string }
		ev.Decode(&tr)
		names <- tr.Name
		known := tr.Name == ""
		for _, m := range models {
			known = known || m == tr.Name
		}
		if !known {
			return drain(r) // the handler failed: nobody answers, the socket stays open
		}
		for ev.Type != "audio-stop" {
			if ev, err = wy.ReadEvent(r); err != nil {
				return err
			}
		}
		ans, _ := wy.NewEvent("transcript", map[string]any{"text": "hello"}, nil)
		return wy.WriteEvent(c, ans)
	}
}

// hearing.stt.model goes to the server only when its info lists it: a
// name it lacks would leave the robot waiting its whole timeout on
// wyoming-vosk. The rule is said once in the log.
func TestModelSentOnlyWhenTheServerListsIt(t *testing.T) {
	models := []string{"vosk-model-small-en-us-0.15", "vosk-model-en-us-0.22-lgraph"}
	for _, c := range []struct {
		model, sent string
		warns       bool
	}{
		{"vosk-model-en-us-0.22-lgraph", "vosk-model-en-us-0.22-lgraph", false},
		{"vosk-model-en-us-0.42-gigaspeech", "", true}, // not among its models
		{"", "", false},
	} {
		t.Run(c.model, func(t *testing.T) {
			names := make(chan string, 4)
			srv := serve(t, voskLike(models, names))
			var logs logtest.Buffer
			e := &Engine{Addr: srv.addr(), Model: c.model, Timeout: 3 * time.Second, Log: slog.New(slog.NewTextHandler(&logs, nil))}
			for range 2 { // the server's models are asked once
				if _, tr, err := utterance(t, e, 3200); err != nil || tr.Text != "hello" {
					t.Fatalf("Finish = %+v, %v", tr, err)
				}
				if got := <-names; got != c.sent {
					t.Fatalf("transcribe named %q, want %q", got, c.sent)
				}
			}
			warned := strings.Count(logs.String(), "not a model the server lists")
			if (warned == 1) != c.warns || warned > 1 {
				t.Fatalf("warned %d times:\n%s", warned, logs.String())
			}
			detail, err := e.CheckModel(context.Background())
			switch {
			case c.model == "" && (detail != "" || err != nil):
				t.Fatalf("CheckModel without a model: %q, %v", detail, err)
			case c.warns && (!errors.Is(err, stt.ErrUnknownModel) || !strings.Contains(err.Error(), "vosk-model-small-en-us-0.15")):
				t.Fatalf("CheckModel of a model it lacks: %v, want one naming its models", err)
			case c.model != "" && !c.warns && (err != nil || !strings.Contains(detail, "lists it")):
				t.Fatalf("CheckModel: %q, %v", detail, err)
			}
		})
	}
}

// afterStopServer reads an utterance to its audio-stop, then does what
// act says.
func afterStopServer(act func(r *bufio.Reader, c net.Conn) error) func(r *bufio.Reader, c net.Conn) error {
	return func(r *bufio.Reader, c net.Conn) error {
		for {
			ev, err := wy.ReadEvent(r)
			if err != nil {
				return err
			}
			if ev.Type == "audio-stop" {
				return act(r, c)
			}
		}
	}
}

func utterance(t *testing.T, e *Engine, samples int) (time.Duration, stt.Transcript, error) {
	t.Helper()
	s, err := e.Start(context.Background(), 16000)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Write(speech(samples)); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	tr, err := s.Finish(context.Background())
	return time.Since(start), tr, err
}

// A server that stops answering after audio-stop (a handler that failed
// and left its socket open) fails the utterance after the derived
// after-stop wait — 5 s plus the utterance's half second — not after the
// whole timeout of 30 s.
func TestServerSilentAfterStopFailsSooner(t *testing.T) {
	srv := serve(t, afterStopServer(func(r *bufio.Reader, c net.Conn) error {
		return drain(r) // silent, the socket open, until the client goes
	}))
	took, _, err := utterance(t, &Engine{Addr: srv.addr(), Timeout: 30 * time.Second}, 8000)
	if err == nil || !strings.Contains(err.Error(), "no answer within 5.5s of audio-stop") || !strings.Contains(err.Error(), "timed out") {
		t.Fatalf("Finish = %v, want no answer within 5.5s of audio-stop", err)
	}
	if took < 5*time.Second || took > 20*time.Second {
		t.Fatalf("Finish took %v: the wait is 5.5 s after audio-stop", took)
	}
}

// The after-stop wait is for the server's first event: one that says it
// works on it (transcript-start) gives it the whole timeout for the
// transcript. A server silent past an explicit AfterStop fails then.
func TestAfterStopIsForTheFirstEvent(t *testing.T) {
	alive := serve(t, afterStopServer(func(r *bufio.Reader, c net.Conn) error {
		ev, _ := wy.NewEvent("transcript-start", map[string]any{"language": "en"}, nil)
		if err := wy.WriteEvent(c, ev); err != nil {
			return err
		}
		time.Sleep(2 * time.Second) // past AfterStop, within Timeout
		ev, _ = wy.NewEvent("transcript", map[string]any{"text": "slow but sure"}, nil)
		return wy.WriteEvent(c, ev)
	}))
	// AfterStop is generous here so that a loaded CI machine still
	// delivers transcript-start within it; the transcript comes well after.
	if _, tr, err := utterance(t, &Engine{Addr: alive.addr(), Timeout: 10 * time.Second, AfterStop: 700 * time.Millisecond}, 1600); err != nil || tr.Text != "slow but sure" {
		t.Fatalf("a server that answered transcript-start: %+v, %v", tr, err)
	}
	silent := serve(t, afterStopServer(func(r *bufio.Reader, c net.Conn) error { return drain(r) }))
	took, _, err := utterance(t, &Engine{Addr: silent.addr(), Timeout: 10 * time.Second, AfterStop: 200 * time.Millisecond}, 1600)
	if err == nil || !strings.Contains(err.Error(), "no answer within 200ms of audio-stop") {
		t.Fatalf("a silent server: %v", err)
	}
	if took < 200*time.Millisecond || took > 8*time.Second {
		t.Fatalf("a silent server failed after %v", took)
	}
}

// A server that loads its model on its first utterance takes longer for
// it than the engine's timeout: Warm waits as long as its ctx allows,
// and the utterances after it are fast.
func TestWarmLoadsTheModel(t *testing.T) {
	var mu sync.Mutex
	loaded := false
	srv := serve(t, afterStopServer(func(r *bufio.Reader, c net.Conn) error {
		mu.Lock()
		first := !loaded
		loaded = true
		mu.Unlock()
		if first {
			time.Sleep(1500 * time.Millisecond) // loading the model
		}
		ev, _ := wy.NewEvent("transcript", map[string]any{"text": ""}, nil)
		return wy.WriteEvent(c, ev)
	}))
	e := &Engine{Addr: srv.addr(), Timeout: 500 * time.Millisecond}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := e.Warm(ctx, 16000); err != nil {
		t.Fatalf("Warm = %v", err)
	}
	if _, _, err := utterance(t, e, 8000); !errors.Is(err, stt.ErrEmpty) {
		t.Fatalf("after Warm, an utterance: %v, want nothing recognised", err)
	}
	// Warm is bounded by its ctx.
	silent := serve(t, afterStopServer(func(r *bufio.Reader, c net.Conn) error { return drain(r) }))
	short, cancel2 := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel2()
	if err := (&Engine{Addr: silent.addr()}).Warm(short, 16000); err == nil {
		t.Fatal("Warm of a silent server succeeded")
	}
}
