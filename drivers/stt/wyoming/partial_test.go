package wyoming

import (
	"bufio"
	"context"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/chorus-robotics/chorus/drivers/stt"
	"github.com/chorus-robotics/chorus/drivers/stt/wyoming/wyomingtest"
	wy "github.com/chorus-robotics/chorus/drivers/wyoming"
)

// words is the sentence the streaming fake hears: a word every quarter
// second of audio.
var words = strings.Fields("my sister is coming to visit and we will bake bread")

func hypothesis(samples, rate int) string {
	n := min(samples/(rate/4), len(words))
	return strings.Join(words[:n], " ")
}

// waitPartial reads p's hypotheses until one begins with want (the newest
// replaces one not read, so a reader may see a longer one first), and
// fails t when none does within 5 s or p closes first.
func waitPartial(t *testing.T, p <-chan stt.Partial, want string) []string {
	t.Helper()
	var seen []string
	timeout := time.After(5 * time.Second)
	for {
		select {
		case h, ok := <-p:
			if !ok {
				t.Fatalf("the hypotheses ended at %q, before %q", seen, want)
			}
			seen = append(seen, h.Text)
			if strings.HasPrefix(h.Text, want) {
				return seen
			}
		case <-timeout:
			t.Fatalf("no hypothesis %q within 5 s; saw %q", want, seen)
		}
	}
}

// A Wyoming 1.7 server that streams sends transcript-chunks while the
// audio still comes: each grows the session's hypothesis before Finish,
// the final transcript is the whole text, and the hypotheses end with the
// session. The server's info says it streams.
func TestPartialsWhileThePersonSpeaks(t *testing.T) {
	full := strings.Join(words, " ")
	srv := &wyomingtest.Server{Delay: 50 * time.Millisecond, Partial: hypothesis, Text: func(int, int) string { return full }}
	addr, err := srv.Start()
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	e := &Engine{Addr: addr, Language: "en"}
	info, err := e.Describe(context.Background())
	if err != nil || !info.ASR[0].SupportsTranscriptStreaming {
		t.Fatalf("info %+v, %v: want supports_transcript_streaming", info, err)
	}
	s, err := e.Start(context.Background(), 16000)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Abort()
	p := s.(stt.Partials).Partials()
	// A second of speech: four words heard, before the person is done.
	for range 50 {
		if err := s.Write(speech(320)); err != nil {
			t.Fatal(err)
		}
	}
	seen := waitPartial(t, p, "my sister is coming")
	for i := 1; i < len(seen); i++ {
		if !strings.HasPrefix(seen[i], seen[i-1]) {
			t.Errorf("hypothesis %q does not grow from %q", seen[i], seen[i-1])
		}
	}
	// Two more seconds, then the end of the utterance.
	for range 100 {
		if err := s.Write(speech(320)); err != nil {
			t.Fatal(err)
		}
	}
	waitPartial(t, p, "my sister is coming to visit and we")
	tr, err := s.Finish(context.Background())
	if err != nil || tr.Text != full {
		t.Fatalf("Finish = %+v, %v; want %q", tr, err, full)
	}
	for h := range p { // what was not read yet, then the end
		if h.Text != hypothesis(3*16000, 16000) {
			t.Errorf("a hypothesis after Finish: %q", h.Text)
		}
	}
	if pr := srv.Problems(); len(pr) > 0 {
		t.Errorf("the server found: %q", pr)
	}
}

// A server older than Wyoming 1.7 sends no chunks: the session's
// hypotheses close with nothing in them, and the transcript comes as
// before.
func TestNoPartialsFromAnOlderServer(t *testing.T) {
	srv := &wyomingtest.Server{Text: func(int, int) string { return "hello robots" }}
	addr, err := srv.Start()
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	e := &Engine{Addr: addr}
	if info, err := e.Describe(context.Background()); err != nil || info.ASR[0].SupportsTranscriptStreaming {
		t.Fatalf("info %+v, %v: want no streaming", info, err)
	}
	s, err := e.Start(context.Background(), 16000)
	if err != nil {
		t.Fatal(err)
	}
	s.Write(speech(16000))
	if tr, err := s.Finish(context.Background()); err != nil || tr.Text != "hello robots" {
		t.Fatalf("Finish = %+v, %v", tr, err)
	}
	for h := range s.(stt.Partials).Partials() {
		t.Errorf("a hypothesis from a server that does not stream: %q", h.Text)
	}
}

// What a server streams is untrusted: a chunk whose text is no string is
// skipped, a hypothesis never grows past stt.MaxPartialText, and an
// aborted session's hypotheses end.
func TestPartialsFromAnUnkindServer(t *testing.T) {
	chunk := func(c net.Conn, data map[string]any) error {
		ev, _ := wy.NewEvent("transcript-chunk", data, nil)
		return wy.WriteEvent(c, ev)
	}
	srv := serve(t, func(r *bufio.Reader, c net.Conn) error {
		if _, err := expect(r, "transcribe"); err != nil {
			return err
		}
		start, _ := wy.NewEvent("transcript-start", nil, nil)
		wy.WriteEvent(c, start)
		chunk(c, map[string]any{"text": 5})
		chunk(c, map[string]any{})
		chunk(c, map[string]any{"text": "hello"})
		chunk(c, map[string]any{"text": " " + strings.Repeat("x", stt.MaxPartialText)})
		chunk(c, map[string]any{"text": " robots"})
		return drain(r)
	})
	e := &Engine{Addr: srv.addr()}
	s, err := e.Start(context.Background(), 16000)
	if err != nil {
		t.Fatal(err)
	}
	p := s.(stt.Partials).Partials()
	waitPartial(t, p, "hello robots")
	s.Abort()
	select {
	case _, ok := <-p:
		if ok {
			t.Error("a hypothesis after Abort")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the hypotheses did not end with the aborted session")
	}
}
