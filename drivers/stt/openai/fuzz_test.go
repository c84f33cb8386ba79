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
