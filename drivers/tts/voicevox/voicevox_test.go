package voicevox

import (
	"context"
	"encoding/json"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/chorus-robotics/chorus/drivers/audio"
)

// engine is a VOICEVOX engine stand-in that checks the requests the way the
// real one receives them.
func engine(t *testing.T) *httptest.Server {
	return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			t.Errorf("%s %s, want POST", r.Method, r.URL.Path)
		}
		switch r.URL.Path {
		case "/audio_query":
			if r.URL.Query().Get("speaker") != "3" || r.URL.Query().Get("text") == "" {
				t.Errorf("audio_query query %v", r.URL.Query())
			}
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, `{"accent_phrases":[],"speedScale":1.0,"pitchScale":0.0,"intonationScale":1.0,"volumeScale":1.0,`+
				`"prePhonemeLength":0.1,"postPhonemeLength":0.1,"outputSamplingRate":24000,"outputStereo":false,"kana":"コンニチワ"}`)
		case "/synthesis":
			if r.URL.Query().Get("speaker") != "3" || r.Header.Get("Content-Type") != "application/json" {
				t.Errorf("synthesis query %v, content type %q", r.URL.Query(), r.Header.Get("Content-Type"))
			}
			var aq map[string]any
			if err := json.NewDecoder(r.Body).Decode(&aq); err != nil {
				t.Errorf("synthesis body: %v", err)
			}
			if aq["kana"] != "コンニチワ" || aq["outputSamplingRate"] != 24000.0 {
				t.Errorf("synthesis body lost the engine's fields: %v", aq)
			}
			if s := aq["speedScale"].(float64); math.Abs(s-1.1) > 1e-9 {
				t.Errorf("speedScale %v, want 1.1 for happy", s)
			}
			s := make([]int16, 12000)
			for i := range s {
				s[i] = int16(5000 * math.Sin(float64(i)/5))
			}
			w.Header().Set("Content-Type", "audio/wav")
			w.Write(audio.EncodeWAV(audio.PCM{Rate: 24000, Samples: s}))
		default:
			http.NotFound(w, r)
		}
	}))
}

func TestSynthesize(t *testing.T) {
	srv := engine(t)
	defer srv.Close()
	e := &Engine{URL: srv.URL, Speaker: 3}
	p, err := e.Synthesize(context.Background(), "こんにちは", "happy")
	if err != nil {
		t.Fatal(err)
	}
	if p.Rate != 24000 || len(p.Samples) != 12000 {
		t.Fatalf("rate %d, %d samples", p.Rate, len(p.Samples))
	}
}

func TestEngineErrors(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, `{"detail":"speaker not found"}`, http.StatusUnprocessableEntity)
	}))
	defer srv.Close()
	_, err := (&Engine{URL: srv.URL, Speaker: 999}).Synthesize(context.Background(), "hi", "")
	if err == nil || !strings.Contains(err.Error(), "422") || !strings.Contains(err.Error(), "speaker not found") {
		t.Fatalf("err = %v", err)
	}
	srv.Close()
	if _, err := (&Engine{URL: srv.URL}).Synthesize(context.Background(), "hi", ""); err == nil {
		t.Fatal("an engine that is down did not fail")
	}
}
