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
// # Streamed transcripts
//
// Finish asks for the transcript as it is written (stream=true): the
// server answers server-sent events, transcript.text.delta {delta} as the
// text grows — each grows the session's hypothesis (stt.Partials) — and
// transcript.text.done {text}, the transcript. A server that ignores the
// field answers the whole JSON, taken as before. A server that refuses it
// (a 400 that names stream: whisper-1 on OpenAI's API) is asked again at
// once for the whole answer, and the engine remembers: it never asks that
// server to stream again (a warning says so once). A stream that ends
// without transcript.text.done fails the utterance.
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
// The session's hypotheses end when Finish returns or Abort is called.
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
	"sync/atomic"
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

	refused atomic.Bool // the server refused to stream: whole answers only
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
	return &Session{e: e, rate: rate, max: maxSec * rate, partials: stt.NewNewest()}, nil
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
	partials *stt.Newest        // the hypotheses the stream's deltas grow
}

var (
	_ stt.Session  = (*Session)(nil)
	_ stt.Partials = (*Session)(nil)
)

// Partials implements stt.Partials: the transcript as a streaming server
// writes it, after the audio was sent (package doc).
func (s *Session) Partials() <-chan stt.Partial { return s.partials.C() }

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
	s.partials.Close()
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
	defer s.partials.Close()
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
	tr, err := s.e.transcribe(ctx, p, s.partials)
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

// transcribe sends the utterance: streamed unless the server refused it
// once, then whole.
func (e *Engine) transcribe(ctx context.Context, p audio.PCM, partials *stt.Newest) (stt.Transcript, error) {
	if !e.refused.Load() {
		body, ctype, err := e.form(p, true)
		if err != nil {
			return stt.Transcript{}, err
		}
		tr, err := e.stream(ctx, body, ctype, partials)
		if !errors.Is(err, modelhttp.ErrStreamRefused) {
			return tr, err
		}
		if !e.refused.Swap(true) {
			e.log().Warn("stt openai: the server does not stream transcripts; asking for whole ones from now on", "url", e.URL(), "err", err)
		}
	}
	body, ctype, err := e.form(p, false)
	if err != nil {
		return stt.Transcript{}, err
	}
	return e.post(ctx, body, ctype)
}

func (e *Engine) log() *slog.Logger {
	if e.Log == nil {
		return slog.New(slog.DiscardHandler)
	}
	return e.Log
}

// form builds the multipart body; stream asks for server-sent events.
func (e *Engine) form(p audio.PCM, stream bool) ([]byte, string, error) {
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
	if stream {
		fields = append(fields, [2]string{"stream", "true"})
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

// client is the exchange (runtime/modelhttp, the brains' too) and its
// header.
func (e *Engine) client() (*modelhttp.Client, http.Header) {
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
	return c, header
}

// post asks for the whole transcript and decodes it.
func (e *Engine) post(ctx context.Context, body []byte, ctype string) (stt.Transcript, error) {
	c, header := e.client()
	var tr stt.Transcript
	err := c.Send(ctx, e.URL(), header, ctype, body, func(b []byte) error {
		var err error
		tr, err = e.decode(b)
		return err
	})
	return tr, rateLimited(err)
}

// rateLimited names a rate limit as the engine's.
func rateLimited(err error) error {
	if errors.Is(err, modelhttp.ErrRateLimited) {
		return fmt.Errorf("stt openai: %w: %w", ErrRateLimited, err)
	}
	return err
}

// stream asks for the transcript as it is written: each delta grows the
// hypothesis in partials; transcript.text.done is the transcript (a
// server that answers whole is decoded as such).
func (e *Engine) stream(ctx context.Context, body []byte, ctype string, partials *stt.Newest) (stt.Transcript, error) {
	c, header := e.client()
	a := &streamAnswer{e: e}
	err := c.StreamSend(ctx, e.URL(), header, ctype, body, modelhttp.Streamed{
		Event: func(ev modelhttp.Event) error {
			hypothesis, err := a.take(ev.Data)
			if hypothesis != "" {
				partials.Put(stt.Partial{Text: hypothesis})
			}
			if err == nil && a.done {
				return modelhttp.ErrEnd
			}
			return err
		},
		Whole: func(b []byte) error {
			a.done = true
			var err error
			a.tr, err = e.decode(b)
			return err
		},
	})
	if err == nil && !a.done {
		err = fmt.Errorf("stt openai: the stream ended without transcript.text.done (%q so far)", clip(a.soFar.String()))
	}
	return a.tr, rateLimited(err)
}

// streamAnswer is a transcript streamed as it is written: the deltas so
// far, then, at transcript.text.done, the transcript.
type streamAnswer struct {
	e     *Engine
	soFar stt.Growing
	tr    stt.Transcript
	done  bool
}

// take reads one event's data: a transcript.text.delta grows the text so
// far (up to stt.MaxPartialText) and returns it as the hypothesis;
// transcript.text.done is the transcript; other types (a newer server's)
// are skipped.
func (a *streamAnswer) take(data []byte) (hypothesis string, err error) {
	var d struct {
		Type     string  `json:"type"`
		Delta    *string `json:"delta"`
		Text     *string `json:"text"`
		Language string  `json:"language"`
	}
	if err := json.Unmarshal(data, &d); err != nil {
		return "", fmt.Errorf("stt openai: a stream event is not JSON: %w (%q)", err, clip(string(data)))
	}
	switch d.Type {
	case "transcript.text.delta":
		if d.Delta == nil {
			return "", fmt.Errorf("stt openai: a transcript.text.delta without a delta string: %q", clip(string(data)))
		}
		return a.soFar.Add(*d.Delta), nil
	case "transcript.text.done":
		a.done = true
		a.tr, err = a.e.transcript(d.Text, d.Language, data)
		return "", err
	}
	return "", nil
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
	return e.transcript(a.Text, a.Language, b)
}

// transcript is a transcript from an answer's text and language (b, the
// answer, names what was wrong).
func (e *Engine) transcript(t *string, lang string, b []byte) (stt.Transcript, error) {
	if t == nil {
		return stt.Transcript{}, fmt.Errorf("stt openai: the answer has no text: %q", clip(string(b)))
	}
	text := strings.TrimSpace(*t)
	if text == "" {
		return stt.Transcript{}, fmt.Errorf("stt openai: %w", stt.ErrEmpty)
	}
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
