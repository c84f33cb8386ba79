// Package voiceidtest is a fake LocalAI voice embedding service for
// tests: it speaks /v1/voice/embed as LocalAI does, checks what it
// receives (the method, the path, a JSON body naming its model, audio as
// a WAV data URI or raw base64), computes a real embedding from that
// audio (Spectral), and can be as unkind as the real one: down, slow,
// answering garbage.
package voiceidtest

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"time"

	"github.com/chorus-robotics/chorus/drivers/audio"
)

// Model is the fake service's model name.
const Model = "spectral"

// Server is the fake service.
type Server struct {
	*httptest.Server

	mu      sync.Mutex
	delay   time.Duration
	mode    string // "", "down", "garbage"
	calls   int
	bad     []string // what it refused and why
	seconds float64  // of audio received
}

// New starts a fake service; it stops with the test.
func New(t interface{ Cleanup(func()) }) *Server {
	s := &Server{}
	s.Server = httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(s.Close)
	return s
}

// Delay makes every answer wait d.
func (s *Server) Delay(d time.Duration) { s.mu.Lock(); s.delay = d; s.mu.Unlock() }

// Mode sets how it answers: "" embeddings, "down" HTTP 503, "garbage" a
// 200 that is not an embedding.
func (s *Server) Mode(m string) { s.mu.Lock(); s.mode = m; s.mu.Unlock() }

// Calls is how many requests it had.
func (s *Server) Calls() int { s.mu.Lock(); defer s.mu.Unlock(); return s.calls }

// Refused is what it refused as a bad request (a client's defect).
func (s *Server) Refused() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.bad...)
}

func (s *Server) refuse(w http.ResponseWriter, status int, format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	s.mu.Lock()
	s.bad = append(s.bad, msg)
	s.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(map[string]any{"error": map[string]any{"code": status, "message": msg, "type": ""}})
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	s.calls++
	delay, mode := s.delay, s.mode
	s.mu.Unlock()
	if r.Method != http.MethodPost || r.URL.Path != "/v1/voice/embed" {
		s.refuse(w, http.StatusNotFound, "%s %s: not LocalAI's voice embedding endpoint", r.Method, r.URL.Path)
		return
	}
	if !strings.HasPrefix(r.Header.Get("Content-Type"), "application/json") {
		s.refuse(w, http.StatusBadRequest, "content type %q, want application/json", r.Header.Get("Content-Type"))
		return
	}
	var req struct {
		Model string `json:"model"`
		Audio string `json:"audio"`
	}
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, 32<<20))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil {
		s.refuse(w, http.StatusBadRequest, "the body: %v", err)
		return
	}
	if req.Model != Model {
		s.refuse(w, http.StatusNotFound, "model %q is not loaded (only %q)", req.Model, Model)
		return
	}
	b64 := req.Audio
	if i := strings.Index(b64, ";base64,"); strings.HasPrefix(b64, "data:") && i >= 0 {
		b64 = b64[i+len(";base64,"):]
	}
	wav, err := base64.StdEncoding.DecodeString(b64)
	if err != nil || len(wav) == 0 {
		s.refuse(w, http.StatusBadRequest, "audio is required: a URL, base64 or a data URI (%v)", err)
		return
	}
	pcm, err := audio.DecodeWAV(wav)
	if err != nil {
		s.refuse(w, http.StatusBadRequest, "audio: %v", err)
		return
	}
	s.mu.Lock()
	s.seconds += float64(len(pcm.Samples)) / float64(pcm.Rate)
	s.mu.Unlock()
	select {
	case <-time.After(delay):
	case <-r.Context().Done():
		return
	}
	switch mode {
	case "down":
		http.Error(w, `{"error":{"code":503,"message":"backend not ready"}}`, http.StatusServiceUnavailable)
		return
	case "garbage":
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"embedding":[0,0,"x"],"dim":"three"}`))
		return
	}
	vec := Spectral(pcm.Samples, pcm.Rate)
	if vec == nil {
		s.refuse(w, http.StatusBadRequest, "audio: too short to embed (%d samples)", len(pcm.Samples))
		return
	}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(map[string]any{"embedding": vec, "dim": len(vec), "model": Model})
}
