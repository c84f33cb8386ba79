package openai

import (
	"errors"
	"strings"
	"testing"

	"github.com/chorus-robotics/chorus/drivers/stt"
)

// FuzzDecode: any answer body gives a trimmed, non-empty transcript,
// ErrEmpty or an error, never a panic (the error bodies are
// runtime/modelhttp's, fuzzed there).
func FuzzDecode(f *testing.F) {
	f.Add([]byte(`{"text":"Hello robots."}`))
	f.Add([]byte(`{"text":"  "}`))
	f.Add([]byte(`{"error":{"message":"x","type":"invalid_request_error"}}`))
	f.Add([]byte(`<html>`))
	e := &Engine{Language: "en"}
	f.Fuzz(func(t *testing.T, b []byte) {
		tr, err := e.decode(b)
		if err == nil && (tr.Text == "" || tr.Text != strings.TrimSpace(tr.Text) || tr.Confidence != -1) {
			t.Fatalf("decode(%q) = %+v", b, tr)
		}
		if err != nil && errors.Is(err, stt.ErrEmpty) && tr.Text != "" {
			t.Fatalf("ErrEmpty with text %q", tr.Text)
		}
	})
}

// FuzzStreamEvent: any sequence of stream events (split at newlines)
// gives hypotheses that only grow, bounded, and a transcript only at
// transcript.text.done, never a panic.
func FuzzStreamEvent(f *testing.F) {
	f.Add([]byte(`{"type":"transcript.text.delta","delta":"Hello"}` + "\n" + `{"type":"transcript.text.done","text":"Hello robots."}`))
	f.Add([]byte(`{"type":"transcript.text.delta","delta":5}`))
	f.Add([]byte(`{"type":"transcript.text.done"}`))
	f.Add([]byte(`{"type":"other"}` + "\n" + `not json`))
	f.Fuzz(func(t *testing.T, b []byte) {
		a := &streamAnswer{e: &Engine{}}
		last := ""
		for _, data := range strings.Split(string(b), "\n") {
			h, err := a.take([]byte(data))
			if h != "" {
				if len(h) > stt.MaxPartialText {
					t.Fatalf("a hypothesis of %d bytes", len(h))
				}
				if !strings.HasPrefix(h, last) {
					t.Fatalf("hypothesis %q does not grow from %q", h, last)
				}
				last = h
			}
			if err != nil || a.done {
				break
			}
		}
		if !a.done && a.tr.Text != "" {
			t.Fatalf("a transcript %q before transcript.text.done", a.tr.Text)
		}
	})
}
