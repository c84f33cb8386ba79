// Package openai recognises speech with an OpenAI-compatible transcription
// endpoint: POST {base_url}/audio/transcriptions, multipart/form-data with
// the utterance as a WAV file, the model, an optional language and
// response_format=json, answered by {"text": "..."}. OpenAI, Groq, a
// whisper.cpp server and the faster-whisper servers speak it.
//
// The endpoint takes a whole file, so audio is buffered during the
// utterance (bounded: MaxSeconds, over that Finish fails with
// stt.ErrOverflow) and sent at Finish. An utterance shorter than 0.1 s is
// stt.ErrEmpty without a request (the API refuses it as too short).
//
// The exchange is runtime/modelhttp's, the brains' too: 429 and 5xx
// answers are retried (MaxRetries, default once) if the deadline leaves
// time for the wait the server asks (Retry-After-Ms, Retry-After) or a
// short backoff; a 429 is logged and reported to OnRateLimited. The API
// key is sent as a bearer token and never logged: a server message that
// quotes it is redacted.
//
// # Concurrency
//
// An Engine is safe for concurrent use. A Session starts no goroutine;
// Finish makes the request on the caller's goroutine and Abort cancels it.
package openai

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"mime/multipart"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/chorus-robotics/chorus/drivers/audio"
	"github.com/chorus-robotics/chorus/drivers/stt"
	"github.com/chorus-robotics/chorus/runtime/modelhttp"
)

// Defaults.
const (
	DefaultBaseURL       = modelhttp.OpenAIBaseURL
	DefaultModel         = "whisper-1"
	DefaultMaxSeconds    = stt.DefaultMaxSeconds
	DefaultFinishTimeout = 30 * time.Second // Finish's whole exchange, retries included
	DefaultMaxRetries    = 1
	DefaultMaxBody       = 1 << 20
	minAudio             = 100 * time.Millisecond
	provider             = "openai-stt"
)

// ErrRateLimited is returned (wrapped) when the server rate-limits and
// the retries or the deadline are used up.
var ErrRateLimited = stt.ErrRateLimited

// Engine is one transcription endpoint.
type Engine struct {
	BaseURL    string // e.g. https://api.groq.com/openai/v1; default DefaultBaseURL
	APIKey     string // sent as "Authorization: Bearer …" when set; from the environment, never from a file in the repo
	Model      string // default DefaultModel
	Language   string // ISO-639-1 ("en"); "" lets the server detect it
	MaxSeconds int    // of audio per utterance; default DefaultMaxSeconds
	Timeout    time.Duration
	MaxRetries int   // on 429 and 5xx; default 1, negative for none
	MaxBody    int64 // of the answer; default 1 MiB
	HTTPClient *http.Client
	Log        *slog.Logger
	// OnRateLimited hears of each 429 and the wait it asks for (the
	// daemon counts it in chorus_brain_rate_limited_total, provider
	// "openai-stt"); nil: none.
	OnRateLimited func(wait time.Duration)
}

var _ stt.Engine = (*Engine)(nil)

// Name implements stt.Engine.
func (e *Engine) Name() string { return "openai" }

// URL is the endpoint the engine posts to.
func (e *Engine) URL() string {
	base := strings.TrimRight(e.BaseURL, "/")
	if base == "" {
		base = DefaultBaseURL
	}
	return base + "/audio/transcriptions"
}

// Start implements stt.Engine; it touches no network.
func (e *Engine) Start(ctx context.Context, rate int) (stt.Session, error) {
	if err := stt.CheckRate(rate); err != nil {
		return nil, err
	}
	maxSec := e.MaxSeconds
	if maxSec <= 0 {
		maxSec = DefaultMaxSeconds
	}
	return &Session{e: e, rate: rate, max: maxSec * rate}, nil
}

// Session buffers one utterance.
type Session struct {
	e    *Engine
	rate int
	max  int

	mu       sync.Mutex
	pcm      []int16
	overflow bool
	life     stt.Lifecycle      // finished, aborted
	cancel   context.CancelFunc // of Finish's request
}

var _ stt.Session = (*Session)(nil)

// Write implements stt.Session.
func (s *Session) Write(pcm []int16) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.life.Done(); err != nil {
		return err
	}
	switch {
	case s.overflow:
		return nil
	}
	if len(s.pcm)+len(pcm) > s.max {
		s.overflow = true
		s.pcm = nil
		return nil
	}
	s.pcm = append(s.pcm, pcm...)
	return nil
}

// Abort implements stt.Session: it drops the audio and cancels a request
// in flight.
func (s *Session) Abort() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.life.Abort()
	s.pcm = nil
	if s.cancel != nil {
		s.cancel()
	}
}

// Finish implements stt.Session: it sends the utterance and waits for
// the text.
func (s *Session) Finish(ctx context.Context) (stt.Transcript, error) {
	timeout := s.e.Timeout
	if timeout <= 0 {
		timeout = DefaultFinishTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	s.mu.Lock()
	if err := s.life.Finish(); err != nil {
		s.mu.Unlock()
		return stt.Transcript{}, err
	}
	s.cancel = cancel
	pcm, overflow := s.pcm, s.overflow
	s.pcm = nil
	s.mu.Unlock()

	if overflow {
		return stt.Transcript{}, fmt.Errorf("stt openai: more than %d s of audio: %w", s.max/s.rate, stt.ErrOverflow)
	}
	p := audio.PCM{Rate: s.rate, Samples: pcm}
	if p.Duration() < minAudio {
		return stt.Transcript{}, fmt.Errorf("stt openai: %v of audio: %w", p.Duration(), stt.ErrEmpty)
	}
	body, ctype, err := s.e.form(p)
	if err != nil {
		return stt.Transcript{}, err
	}
	tr, err := s.e.post(ctx, body, ctype)
	if err != nil {
		s.mu.Lock()
		aborted := s.life.Aborted()
		s.mu.Unlock()
		if aborted {
			return stt.Transcript{}, stt.ErrAborted
		}
	}
	return tr, err
}

// form builds the multipart body.
func (e *Engine) form(p audio.PCM) ([]byte, string, error) {
	var b bytes.Buffer
	w := multipart.NewWriter(&b)
	model := e.Model
	if model == "" {
		model = DefaultModel
	}
	fw, err := w.CreateFormFile("file", "utterance.wav")
	if err == nil {
		_, err = fw.Write(audio.EncodeWAV(p))
	}
	fields := [][2]string{{"model", model}, {"response_format", "json"}}
	if e.Language != "" {
		fields = append(fields, [2]string{"language", e.Language})
	}
	for _, f := range fields {
		if err == nil {
			err = w.WriteField(f[0], f[1])
		}
	}
	if err == nil {
		err = w.Close()
	}
	if err != nil {
		return nil, "", fmt.Errorf("stt openai: building the request: %w", err)
	}
	return b.Bytes(), w.FormDataContentType(), nil
}

// StatusError is an answer with a status other than 2xx (the server's
// message clipped, the key redacted).
type StatusError = modelhttp.StatusError

// post makes the exchange (runtime/modelhttp, the brains' too) and decodes
// the transcript.
func (e *Engine) post(ctx context.Context, body []byte, ctype string) (stt.Transcript, error) {
	retries := e.MaxRetries
	if retries == 0 {
		retries = DefaultMaxRetries
	}
	maxBody := e.MaxBody
	if maxBody <= 0 {
		maxBody = DefaultMaxBody
	}
	c := &modelhttp.Client{Provider: provider, HTTP: e.HTTPClient, MaxRetries: retries, MaxBody: maxBody, Log: e.Log,
		OnRateLimited: e.OnRateLimited}
	header := http.Header{}
	if e.APIKey != "" {
		header.Set("Authorization", "Bearer "+e.APIKey)
	}
	var tr stt.Transcript
	err := c.Send(ctx, e.URL(), header, ctype, body, func(b []byte) error {
		var err error
		tr, err = e.decode(b)
		return err
	})
	if errors.Is(err, modelhttp.ErrRateLimited) {
		return stt.Transcript{}, fmt.Errorf("stt openai: %w: %w", ErrRateLimited, err)
	}
	return tr, err
}

// decode reads {"text": "..."}: a JSON object whose text is a string.
func (e *Engine) decode(b []byte) (stt.Transcript, error) {
	var a struct {
		Text     *string `json:"text"`
		Language string  `json:"language"` // verbose_json only; some servers send it anyway
	}
	if err := json.Unmarshal(b, &a); err != nil {
		return stt.Transcript{}, fmt.Errorf("stt openai: the answer is not JSON: %w (%q)", err, clip(string(b)))
	}
	if a.Text == nil {
		return stt.Transcript{}, fmt.Errorf("stt openai: the answer has no text: %q", clip(string(b)))
	}
	text := strings.TrimSpace(*a.Text)
	if text == "" {
		return stt.Transcript{}, fmt.Errorf("stt openai: %w", stt.ErrEmpty)
	}
	lang := a.Language
	if lang == "" {
		lang = e.Language
	}
	return stt.Transcript{Text: text, Confidence: -1, Language: lang}, nil
}

func clip(s string) string {
	if len(s) > 300 {
		return s[:300] + "…"
	}
	return s
}
