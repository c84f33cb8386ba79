package openai

import (
	"context"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/chorus-robotics/chorus/drivers/stt"
	"github.com/chorus-robotics/chorus/runtime/logtest"
)

// finishReading finishes s while it reads s's hypotheses, and returns the
// transcript, the error and every hypothesis read.
func finishReading(t *testing.T, s stt.Session) (stt.Transcript, error, []string) {
	t.Helper()
	seen := make(chan []string, 1)
	go func() {
		var hs []string
		for h := range s.(stt.Partials).Partials() {
			hs = append(hs, h.Text)
		}
		seen <- hs
	}()
	tr, err := s.Finish(context.Background())
	select {
	case hs := <-seen:
		return tr, err, hs
	case <-time.After(5 * time.Second):
		t.Fatal("the hypotheses did not end with Finish")
		return tr, err, nil
	}
}

func start(t *testing.T, e *Engine) stt.Session {
	t.Helper()
	s, err := e.Start(context.Background(), 16000)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Abort)
	if err := s.Write(tone(16000)); err != nil {
		t.Fatal(err)
	}
	return s
}

// A model that streams (gpt-4o-mini-transcribe) answers server-sent
// events: each transcript.text.delta grows the hypothesis while the rest
// is still being written, and transcript.text.done is the transcript.
func TestStreamedTranscript(t *testing.T) {
	api := newAPI(t)
	api.streamed = func(w http.ResponseWriter, _ int) {
		for _, d := range []string{"My", " sister", " is coming", " to visit."} {
			sse(w, `{"type":"transcript.text.delta","delta":"`+d+`","logprobs":[]}`)
			time.Sleep(20 * time.Millisecond) // the model writes at its pace
		}
		sse(w, `{"type":"transcript.text.done","text":"My sister is coming to visit.","usage":{"type":"tokens","total_tokens":20}}`)
	}
	e := api.engine()
	e.Model = "gpt-4o-mini-transcribe"
	tr, err, seen := finishReading(t, start(t, e))
	if err != nil || tr.Text != "My sister is coming to visit." {
		t.Fatalf("Finish = %+v, %v", tr, err)
	}
	if len(seen) < 2 || seen[0] != "My" && !strings.HasPrefix(seen[0], "My ") {
		t.Errorf("hypotheses %q: want them to grow from the first delta", seen)
	}
	for i := 1; i < len(seen); i++ {
		if !strings.HasPrefix(seen[i], seen[i-1]) {
			t.Errorf("hypothesis %q does not grow from %q", seen[i], seen[i-1])
		}
	}
	if got := api.received(); len(got) != 1 || !got[0].Stream {
		t.Errorf("requests %+v: want one, asking to stream", got)
	}
}

// A server that refuses stream (a stricter OpenAI clone) is asked again
// at once for the whole answer, and never asked to stream again: one
// warning, no lost utterance.
func TestStreamRefusedIsRememberedAndAskedWhole(t *testing.T) {
	api := newAPI(t)
	api.refuseStream = true
	e := api.engine()
	var logs logtest.Buffer
	e.Log = slog.New(slog.NewTextHandler(&logs, nil))
	for i := range 3 {
		tr, err, seen := finishReading(t, start(t, e))
		if err != nil || tr.Text != "Hello robots." || len(seen) != 0 {
			t.Fatalf("utterance %d: %+v, %v, hypotheses %q", i, tr, err, seen)
		}
	}
	got := api.received()
	if len(got) != 3 {
		t.Fatalf("%d valid requests, want 3 (the refused one is not valid)", len(got))
	}
	for _, r := range got {
		if r.Stream {
			t.Errorf("a request the server took asked to stream: %+v", r)
		}
	}
	api.mu.Lock()
	calls := api.calls
	api.mu.Unlock()
	if calls != 4 {
		t.Errorf("%d requests, want 4: one refused, then three whole", calls)
	}
	if n := strings.Count(logs.String(), "does not stream transcripts"); n != 1 {
		t.Errorf("warned %d times, want once:\n%s", n, logs.String())
	}
}

// A stream is untrusted: cut before transcript.text.done, or with a delta
// that is no string, it fails the utterance, naming why; the hypotheses
// it gave end with it.
func TestUnkindStreams(t *testing.T) {
	for _, tc := range []struct {
		name   string
		events []string
		want   string
	}{
		{"cut mid-answer", []string{`{"type":"transcript.text.delta","delta":"Hello"}`}, "without transcript.text.done"},
		{"a delta that is no string", []string{`{"type":"transcript.text.delta","delta":5}`}, "transcript.text.delta"},
		{"no JSON", []string{`{"type":`}, "not JSON"},
		{"done without text", []string{`{"type":"transcript.text.done"}`}, "no text"},
		{"done empty", []string{`{"type":"transcript.text.done","text":"  "}`}, stt.ErrEmpty.Error()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			api := newAPI(t)
			api.streamed = func(w http.ResponseWriter, _ int) { sse(w, tc.events...) }
			e := api.engine()
			e.Model = "gpt-4o-mini-transcribe"
			_, err, _ := finishReading(t, start(t, e))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Finish: %v, want an error naming %q", err, tc.want)
			}
		})
	}
}
