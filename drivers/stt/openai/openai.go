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
// 429 and 5xx answers are retried (MaxRetries, default once) if the
// deadline leaves time for the wait the server asks (Retry-After-Ms,
// Retry-After) or a short backoff; a 429 is logged and counted in
// chorus_brain_rate_limited_total with provider "openai-stt". The API key
// is sent as a bearer token and never logged: a server message that
// quotes it is redacted. (runtime/brain/llmhttp does the same for JSON,
// but drivers may not import the brain.)
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
	"fmt"
	"io"
	"log/slog"
	"mime/multipart"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/chorus-robotics/chorus/drivers/audio"
	"github.com/chorus-robotics/chorus/drivers/stt"
	"github.com/chorus-robotics/chorus/runtime/metrics"
)

// Defaults.
const (
	DefaultBaseURL    = "https://api.openai.com/v1"
	DefaultModel      = "whisper-1"
	DefaultMaxSeconds = 30
	DefaultTimeout    = 30 * time.Second // Finish's whole exchange, retries included
	DefaultMaxRetries = 1
	DefaultMaxBody    = 1 << 20
	minAudio          = 100 * time.Millisecond
	backoffBase       = 500 * time.Millisecond
	provider          = "openai-stt"
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
	Metrics    *metrics.Metrics
}

var _ stt.Engine = (*Engine)(nil)

var defaultHTTP = &http.Client{Transport: &http.Transport{
	Proxy:                 http.ProxyFromEnvironment,
	DialContext:           (&net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
	TLSHandshakeTimeout:   10 * time.Second,
	MaxIdleConnsPerHost:   4,
	IdleConnTimeout:       90 * time.Second,
	ExpectContinueTimeout: time.Second,
}}

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
		timeout = DefaultTimeout
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

// StatusError is an answer with a status other than 2xx.
type StatusError struct {
	Status  int
	Message string // the server's message, clipped, the key redacted
}

func (e *StatusError) Error() string {
	return fmt.Sprintf("stt openai: HTTP %d: %s", e.Status, e.Message)
}

func (e *Engine) post(ctx context.Context, body []byte, ctype string) (stt.Transcript, error) {
	retries := e.MaxRetries
	if retries == 0 {
		retries = DefaultMaxRetries
	}
	retries = max(retries, 0)
	url := e.URL()
	for attempt := 0; ; attempt++ {
		status, b, h, err := e.do(ctx, url, body, ctype)
		if err != nil {
			return stt.Transcript{}, err
		}
		if status >= 200 && status < 300 {
			return e.decode(b)
		}
		serr := &StatusError{Status: status, Message: e.redact(errorMessage(b))}
		if !retryable(status) {
			return stt.Transcript{}, serr
		}
		wait, asked := retryAfter(h)
		if !asked {
			wait = backoffBase << min(attempt, 6)
		}
		limited := status == http.StatusTooManyRequests
		if limited {
			m := metrics.OrNew(e.Metrics)
			m.RateLimited.WithLabelValues(provider).Inc()
			m.RetryAfter.WithLabelValues(provider).Set(wait.Seconds())
			if e.Log != nil {
				e.Log.Warn("transcription server rate-limits (HTTP 429)", "url", url, "retry_after", wait.Round(time.Millisecond),
					"retry_after_given", asked, "try", attempt+1, "of", retries+1)
			}
		}
		if attempt >= retries {
			if limited {
				return stt.Transcript{}, fmt.Errorf("stt openai: %w after %d tries: %w", ErrRateLimited, attempt+1, serr)
			}
			return stt.Transcript{}, serr
		}
		if dl, ok := ctx.Deadline(); ok && time.Until(dl) < wait {
			if limited {
				return stt.Transcript{}, fmt.Errorf("stt openai: %w: the server asks to wait %v, the deadline is in %v: %w", ErrRateLimited,
					wait.Round(time.Millisecond), time.Until(dl).Round(time.Millisecond), serr)
			}
			return stt.Transcript{}, serr
		}
		if e.Log != nil && !limited {
			e.Log.Warn("transcription server failed, retrying", "url", url, "status", status, "wait", wait.Round(time.Millisecond))
		}
		t := time.NewTimer(wait)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return stt.Transcript{}, fmt.Errorf("stt openai: waiting to retry: %w", ctx.Err())
		}
	}
}

func (e *Engine) do(ctx context.Context, url string, body []byte, ctype string) (int, []byte, http.Header, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return 0, nil, nil, fmt.Errorf("stt openai: %w", err)
	}
	req.Header.Set("Content-Type", ctype)
	req.Header.Set("Accept", "application/json")
	if e.APIKey != "" {
		req.Header.Set("Authorization", "Bearer "+e.APIKey)
	}
	hc := e.HTTPClient
	if hc == nil {
		hc = defaultHTTP
	}
	resp, err := hc.Do(req)
	if err != nil {
		return 0, nil, nil, fmt.Errorf("stt openai: %w", err)
	}
	defer resp.Body.Close()
	limit := e.MaxBody
	if limit <= 0 {
		limit = DefaultMaxBody
	}
	b, err := io.ReadAll(io.LimitReader(resp.Body, limit+1))
	if err != nil {
		return 0, nil, nil, fmt.Errorf("stt openai: reading the answer: %w", err)
	}
	if int64(len(b)) > limit {
		return 0, nil, nil, fmt.Errorf("stt openai: the answer is larger than %d bytes", limit)
	}
	return resp.StatusCode, b, resp.Header, nil
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

func retryable(status int) bool {
	return status == http.StatusRequestTimeout || status == http.StatusTooManyRequests || status >= 500
}

// retryAfter reads how long the server asks to wait: Retry-After-Ms, else
// Retry-After in seconds or as an HTTP date.
func retryAfter(h http.Header) (time.Duration, bool) {
	if ms, err := strconv.ParseFloat(h.Get("Retry-After-Ms"), 64); err == nil && ms >= 0 && ms < 3.6e6 {
		return time.Duration(ms * float64(time.Millisecond)), true
	}
	v := h.Get("Retry-After")
	if s, err := strconv.ParseFloat(v, 64); err == nil && s >= 0 {
		return time.Duration(min(s, 3600) * float64(time.Second)), true
	}
	if t, err := http.ParseTime(v); err == nil {
		return max(time.Until(t), 0), true
	}
	return 0, false
}

// redact removes the key from a server's message (some quote the key
// they refused).
func (e *Engine) redact(msg string) string {
	if len(e.APIKey) >= 4 {
		msg = strings.ReplaceAll(msg, e.APIKey, "[redacted]")
	}
	return msg
}

// errorMessage finds the message in {"error": {"message": ...}} or
// {"error": "..."}, or takes the body, clipped.
func errorMessage(b []byte) string {
	msg := strings.TrimSpace(string(b))
	var e struct {
		Error json.RawMessage `json:"error"`
	}
	if json.Unmarshal(b, &e) == nil && len(e.Error) > 0 {
		var inner struct {
			Message string `json:"message"`
		}
		var s string
		switch {
		case json.Unmarshal(e.Error, &inner) == nil && inner.Message != "":
			msg = inner.Message
		case json.Unmarshal(e.Error, &s) == nil && s != "":
			msg = s
		}
	}
	if msg == "" {
		return "(no message)"
	}
	return clip(msg)
}

func clip(s string) string {
	if len(s) > 300 {
		return s[:300] + "…"
	}
	return s
}
