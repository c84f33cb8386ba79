package openai

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chorus-robotics/chorus/drivers/audio"
	"github.com/chorus-robotics/chorus/drivers/stt"
	"github.com/chorus-robotics/chorus/drivers/stt/stttest"
)

const key = "sk-test-0123456789abcdef"

// received is what the strict server saw in one valid request.
type received struct {
	Model, Language, Format string
	Stream                  bool
	PCM                     audio.PCM
}

// apiServer is as strict as OpenAI's /v1/audio/transcriptions: it refuses
// what the real API refuses, with its error JSON, and records the valid
// requests. answer writes the answer to a valid request (default: the
// text "hello robots"). As the real API, it takes stream=true: whisper-1
// ignores it and answers whole; gpt-4o-mini-transcribe answers
// server-sent events, transcript.text.delta then transcript.text.done
// (streamed writes them; default: "Hello robots." a word at a time).
// refuseStream makes it a stricter clone that refuses the field.
type apiServer struct {
	*httptest.Server
	mu           sync.Mutex
	got          []received
	calls        int
	answer       func(w http.ResponseWriter, call int)
	streamed     func(w http.ResponseWriter, call int)
	refuseStream bool
}

// sse writes events as OpenAI's API streams them: a data line each.
func sse(w http.ResponseWriter, events ...string) {
	w.Header().Set("Content-Type", "text/event-stream")
	for _, e := range events {
		fmt.Fprintf(w, "data: %s\n\n", e)
		if f, ok := w.(http.Flusher); ok {
			f.Flush()
		}
	}
}

func apiError(w http.ResponseWriter, status int, msg, typ string, param, code any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(map[string]any{"error": map[string]any{"message": msg, "type": typ, "param": param, "code": code}})
}

var iso639 = regexp.MustCompile(`^[a-z]{2}$`)

func newAPI(t *testing.T) *apiServer {
	s := &apiServer{}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.calls++
		call := s.calls
		s.mu.Unlock()
		if r.Method != http.MethodPost || r.URL.Path != "/v1/audio/transcriptions" {
			apiError(w, http.StatusNotFound, fmt.Sprintf("Invalid URL (%s %s)", r.Method, r.URL.Path), "invalid_request_error", nil, nil)
			return
		}
		if r.Header.Get("Authorization") != "Bearer "+key {
			apiError(w, http.StatusUnauthorized, "Incorrect API key provided: "+strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")+". You can find your API key at https://platform.openai.com/account/api-keys.", "invalid_request_error", nil, "invalid_api_key")
			return
		}
		if err := r.ParseMultipartForm(32 << 20); err != nil {
			apiError(w, http.StatusBadRequest, "Could not parse multipart form", "invalid_request_error", nil, nil)
			return
		}
		s.mu.Lock()
		refuse := s.refuseStream
		s.mu.Unlock()
		for name := range r.MultipartForm.Value {
			switch name {
			case "model", "language", "response_format", "prompt", "temperature":
			case "stream":
				if !refuse {
					continue
				}
				fallthrough
			default:
				apiError(w, http.StatusBadRequest, "Unrecognized request argument supplied: "+name, "invalid_request_error", nil, nil)
				return
			}
		}
		model := r.FormValue("model")
		if model == "" {
			apiError(w, http.StatusBadRequest, "you must provide a model parameter", "invalid_request_error", nil, nil)
			return
		}
		if model != "whisper-1" && model != "gpt-4o-mini-transcribe" {
			apiError(w, http.StatusNotFound, "The model `"+model+"` does not exist or you do not have access to it.", "invalid_request_error", nil, "model_not_found")
			return
		}
		lang := r.FormValue("language")
		if lang != "" && !iso639.MatchString(lang) {
			apiError(w, http.StatusBadRequest, "Invalid language '"+lang+"'. Language parameter must be specified in ISO-639-1 format.", "invalid_request_error", "language", "invalid_language_format")
			return
		}
		format := r.FormValue("response_format")
		if format != "json" {
			apiError(w, http.StatusBadRequest, "the test server answers only json, got "+format, "invalid_request_error", "response_format", nil)
			return
		}
		files := r.MultipartForm.File["file"]
		if len(files) != 1 {
			apiError(w, http.StatusBadRequest, "1 validation error for Request\nbody -> file\n  field required (type=value_error.missing)", "invalid_request_error", nil, nil)
			return
		}
		ext := path.Ext(files[0].Filename)
		f, _ := files[0].Open()
		b, _ := io.ReadAll(f)
		f.Close()
		pcm, err := audio.DecodeWAV(b)
		if ext != ".wav" || err != nil {
			apiError(w, http.StatusBadRequest, "Invalid file format. Supported formats: ['flac', 'm4a', 'mp3', 'mp4', 'mpeg', 'mpga', 'oga', 'ogg', 'wav', 'webm']", "invalid_request_error", nil, nil)
			return
		}
		if pcm.Duration() < 100*time.Millisecond {
			apiError(w, http.StatusBadRequest, "Audio file is too short. Minimum audio length is 0.1 seconds.", "invalid_request_error", "file", "audio_too_short")
			return
		}
		stream := r.FormValue("stream") == "true"
		s.mu.Lock()
		s.got = append(s.got, received{model, lang, format, stream, pcm})
		answer, streamed := s.answer, s.streamed
		s.mu.Unlock()
		if stream && model != "whisper-1" {
			if streamed != nil {
				streamed(w, call)
				return
			}
			sse(w, `{"type":"transcript.text.delta","delta":"Hello"}`, `{"type":"transcript.text.delta","delta":" robots."}`,
				`{"type":"transcript.text.done","text":"Hello robots.","usage":{"type":"tokens","input_tokens":14,"output_tokens":4,"total_tokens":18}}`)
			return
		}
		if answer != nil {
			answer(w, call)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"text":"Hello robots."}`)
	}))
	t.Cleanup(s.Close)
	return s
}

func (s *apiServer) engine() *Engine {
	return &Engine{BaseURL: s.URL + "/v1/", APIKey: key, Model: "whisper-1", Language: "en", HTTPClient: s.Client()}
}

func (s *apiServer) received() []received {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]received(nil), s.got...)
}

func tone(n int) []int16 {
	p := make([]int16, n)
	for i := range p {
		p[i] = int16((i%40)*800 - 16000)
	}
	return p
}

// utter streams seconds of audio at rate in 20 ms frames and finishes.
func utter(t *testing.T, e *Engine, rate int, seconds float64) (stt.Transcript, error) {
	t.Helper()
	s, err := e.Start(context.Background(), rate)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Abort()
	audio := tone(int(seconds * float64(rate)))
	for i := 0; i < len(audio); i += rate / 50 {
		if err := s.Write(audio[i:min(i+rate/50, len(audio))]); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return s.Finish(ctx)
}

func TestTranscribe(t *testing.T) {
	srv := newAPI(t)
	tr, err := utter(t, srv.engine(), 16000, 3)
	if err != nil {
		t.Fatal(err)
	}
	if tr != (stt.Transcript{Text: "Hello robots.", Confidence: -1, Language: "en"}) {
		t.Fatalf("transcript %+v", tr)
	}
	got := srv.received()
	if len(got) != 1 || got[0].Model != "whisper-1" || got[0].Language != "en" || got[0].PCM.Rate != 16000 || len(got[0].PCM.Samples) != 48000 {
		t.Fatalf("server received %+v", got)
	}
	if !slicesEqual(got[0].PCM.Samples, tone(48000)) {
		t.Fatal("the WAV's samples are not the audio written")
	}
}

func slicesEqual(a, b []int16) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestServerRefuses: what the real API refuses fails with its message,
// and the key it quotes is redacted.
func TestServerRefuses(t *testing.T) {
	srv := newAPI(t)
	for _, tc := range []struct {
		name string
		edit func(e *Engine)
		want string
	}{
		{"wrong key", func(e *Engine) { e.APIKey = "sk-wrong-key-123456" }, "HTTP 401: Incorrect API key provided: [redacted]"},
		{"no key", func(e *Engine) { e.APIKey = "" }, "HTTP 401"},
		{"unknown model", func(e *Engine) { e.Model = "whisper-9" }, "HTTP 404: The model `whisper-9` does not exist"},
		{"bad language", func(e *Engine) { e.Language = "english" }, "HTTP 400: Invalid language 'english'"},
		{"wrong base URL", func(e *Engine) { e.BaseURL = srv.URL }, "HTTP 404: Invalid URL (POST /audio/transcriptions)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := srv.engine()
			tc.edit(e)
			_, err := utter(t, e, 16000, 1)
			var se *StatusError
			if !errors.As(err, &se) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Finish = %v, want %q", err, tc.want)
			}
			if e.APIKey != "" && strings.Contains(err.Error(), e.APIKey) {
				t.Fatalf("the key is in the error: %v", err)
			}
		})
	}
}

func TestTooShortIsEmptyWithoutARequest(t *testing.T) {
	srv := newAPI(t)
	_, err := utter(t, srv.engine(), 16000, 0.05)
	if !errors.Is(err, stt.ErrEmpty) {
		t.Fatalf("Finish = %v, want ErrEmpty", err)
	}
	if srv.count() != 0 {
		t.Fatalf("%d requests for 50 ms of audio", srv.count())
	}
}

func TestAnswers(t *testing.T) {
	for _, tc := range []struct {
		name   string
		answer func(w http.ResponseWriter, call int)
		want   string // "" for an error
		is     error
		msg    string
		calls  int
	}{
		{"empty text", func(w http.ResponseWriter, _ int) { io.WriteString(w, `{"text":"  "}`) }, "", stt.ErrEmpty, "", 1},
		{"429 then 200", func(w http.ResponseWriter, call int) {
			if call == 1 {
				w.Header().Set("Retry-After-Ms", "50")
				apiError(w, 429, "Rate limit reached for whisper-1", "requests", nil, "rate_limit_exceeded")
				return
			}
			io.WriteString(w, `{"text":"again"}`)
		}, "again", nil, "", 2},
		{"429 twice", func(w http.ResponseWriter, _ int) {
			w.Header().Set("Retry-After", "0")
			apiError(w, 429, "Rate limit reached for whisper-1", "requests", nil, "rate_limit_exceeded")
		}, "", ErrRateLimited, "HTTP 429", 2},
		{"429 past the deadline", func(w http.ResponseWriter, _ int) {
			w.Header().Set("Retry-After", "60")
			apiError(w, 429, "Rate limit reached", "requests", nil, "rate_limit_exceeded")
		}, "", ErrRateLimited, "the deadline is in", 1},
		{"500 then 200", func(w http.ResponseWriter, call int) {
			if call == 1 {
				apiError(w, 500, "The server had an error while processing your request.", "server_error", nil, nil)
				return
			}
			io.WriteString(w, `{"text":"ok"}`)
		}, "ok", nil, "", 2},
		{"500 twice", func(w http.ResponseWriter, _ int) {
			apiError(w, 500, "The server had an error while processing your request.", "server_error", nil, nil)
		}, "", nil, "HTTP 500: The server had an error", 2},
		{"garbage", func(w http.ResponseWriter, _ int) { io.WriteString(w, `<html>Bad gateway</html>`) }, "", nil, "not JSON", 1},
		{"no text", func(w http.ResponseWriter, _ int) { io.WriteString(w, `{"segments":[]}`) }, "", nil, "no text", 1},
		{"oversize", func(w http.ResponseWriter, _ int) {
			io.WriteString(w, `{"text":"`+strings.Repeat("a", 2<<20)+`"}`)
		}, "", nil, "larger than", 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := newAPI(t)
			srv.answer = tc.answer
			var limited atomic.Int32
			e := srv.engine()
			e.OnRateLimited = func(time.Duration) { limited.Add(1) }
			var logs bytes.Buffer
			e.Log = slog.New(slog.NewTextHandler(&logs, nil))
			e.Timeout = 2 * time.Second
			tr, err := utter(t, e, 16000, 1)
			switch {
			case tc.want != "":
				if err != nil || tr.Text != tc.want {
					t.Fatalf("Finish = %+v, %v", tr, err)
				}
			default:
				if err == nil || (tc.is != nil && !errors.Is(err, tc.is)) || !strings.Contains(err.Error(), tc.msg) {
					t.Fatalf("Finish = %v, want %v %q", err, tc.is, tc.msg)
				}
			}
			if srv.count() != tc.calls {
				t.Errorf("%d requests, want %d", srv.count(), tc.calls)
			}
			if strings.HasPrefix(tc.name, "429") {
				if n := limited.Load(); n < 1 {
					t.Errorf("429 reported %v times", n)
				}
				if !strings.Contains(logs.String(), "HTTP 429") {
					t.Errorf("429 not logged: %s", logs.String())
				}
			}
			if strings.Contains(logs.String(), key) {
				t.Fatalf("the key is in the log: %s", logs.String())
			}
		})
	}
}

func TestHangTimesOut(t *testing.T) {
	srv := newAPI(t)
	release := make(chan struct{})
	srv.answer = func(w http.ResponseWriter, _ int) { <-release }
	defer close(release)
	e := srv.engine()
	e.Timeout = 200 * time.Millisecond
	start := time.Now()
	_, err := utter(t, e, 16000, 1)
	if !errors.Is(err, context.DeadlineExceeded) || time.Since(start) > 3*time.Second {
		t.Fatalf("Finish = %v after %v", err, time.Since(start))
	}
}

func TestAbortCancelsTheRequest(t *testing.T) {
	srv := newAPI(t)
	release := make(chan struct{})
	srv.answer = func(w http.ResponseWriter, _ int) { <-release }
	defer close(release)
	s, _ := srv.engine().Start(context.Background(), 16000)
	s.Write(tone(16000))
	stttest.AbortDuringFinish(t, s, 100*time.Millisecond, 5*time.Second)
	if err := s.Write(tone(10)); !errors.Is(err, stt.ErrAborted) {
		t.Fatalf("Write after Abort = %v", err)
	}
}

func TestOverflow(t *testing.T) {
	srv := newAPI(t)
	e := srv.engine()
	e.MaxSeconds = 2
	_, err := utter(t, e, 16000, 2.5)
	if !errors.Is(err, stt.ErrOverflow) || srv.count() != 0 {
		t.Fatalf("Finish = %v after %d requests, want ErrOverflow and none", err, srv.count())
	}
}

func TestConcurrentSessions(t *testing.T) {
	srv := newAPI(t)
	e := srv.engine()
	var wg sync.WaitGroup
	for i := range 6 {
		wg.Go(func() {
			rate := []int{16000, 44100, 48000}[i%3]
			if tr, err := utter(t, e, rate, 0.5); err != nil || tr.Text == "" {
				t.Error(tr, err)
			}
		})
	}
	wg.Wait()
	for _, r := range srv.received() {
		if r.PCM.Duration() != 500*time.Millisecond {
			t.Errorf("%d Hz: %v of audio", r.PCM.Rate, r.PCM.Duration())
		}
	}
}

func (s *apiServer) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.calls
}
