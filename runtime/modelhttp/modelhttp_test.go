package modelhttp

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

func TestRetryAfterHeaders(t *testing.T) {
	future := time.Now().Add(90 * time.Second).UTC().Format(http.TimeFormat)
	for _, c := range []struct {
		h      http.Header
		want   time.Duration
		wantOK bool
	}{
		{http.Header{"Retry-After-Ms": {"125"}}, 125 * time.Millisecond, true},
		{http.Header{"Retry-After": {"2"}}, 2 * time.Second, true},
		{http.Header{"Retry-After": {"0.5"}}, 500 * time.Millisecond, true},
		{http.Header{"Retry-After-Ms": {"-1"}, "Retry-After": {"3"}}, 3 * time.Second, true},
		{http.Header{"Retry-After": {"1e100"}}, maxRetryAfter, true},
		{http.Header{"Retry-After": {"soon"}}, 0, false},
		{http.Header{}, 0, false},
	} {
		got, ok := retryAfter(c.h)
		if ok != c.wantOK || got != c.want {
			t.Errorf("%v: %v %v, want %v %v", c.h, got, ok, c.want, c.wantOK)
		}
	}
	if d, ok := retryAfter(http.Header{"Retry-After": {future}}); !ok || d < 80*time.Second || d > 91*time.Second {
		t.Errorf("HTTP date: %v %v", d, ok)
	}
}

// rateLimited is a server that answers every request 429 with the
// header retry set to after, and body; calls counts the requests.
func rateLimited(t *testing.T, retry, after, body string) (srv *httptest.Server, calls *atomic.Int32) {
	calls = new(atomic.Int32)
	srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		w.Header().Set(retry, after)
		w.WriteHeader(http.StatusTooManyRequests)
		io.WriteString(w, body)
	}))
	t.Cleanup(srv.Close)
	return srv, calls
}

// A 429 whose Retry-After is longer than what is left of the caller's
// deadline fails at once, saying so, logged and counted — instead of
// sleeping until the deadline (issue 15, defect 4).
func TestRateLimitNeverSleepsPastTheDeadline(t *testing.T) {
	srv, calls := rateLimited(t, "Retry-After", "30", `{"error":{"message":"Rate limit reached for requests","type":"requests","code":"rate_limit_exceeded"}}`)
	var logs bytes.Buffer
	var waits []time.Duration
	c := &Client{Provider: "openai", Log: slog.New(slog.NewTextHandler(&logs, nil)), OnRateLimited: func(d time.Duration) { waits = append(waits, d) }}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	start := time.Now()
	err := c.Post(ctx, srv.URL, http.Header{"Authorization": {"Bearer sk-secret"}}, map[string]any{}, func([]byte) error { return nil })
	if !errors.Is(err, ErrRateLimited) {
		t.Fatalf("err = %v, want ErrRateLimited", err)
	}
	if d := time.Since(start); d > 500*time.Millisecond {
		t.Fatalf("returned after %v: it slept toward the deadline", d)
	}
	for _, want := range []string{"30s", "deadline", "Rate limit reached"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q: %v", want, err)
		}
	}
	if !strings.Contains(logs.String(), "HTTP 429") || !strings.Contains(logs.String(), "retry_after=30s") {
		t.Errorf("no log line with the Retry-After:\n%s", logs.String())
	}
	if strings.Contains(logs.String(), "sk-secret") || strings.Contains(err.Error(), "sk-secret") {
		t.Error("the API key leaked")
	}
	if len(waits) != 1 || waits[0] != 30*time.Second {
		t.Errorf("OnRateLimited heard %v, want one 429 asking 30 s", waits)
	}
	if calls.Load() != 1 {
		t.Errorf("%d calls", calls.Load())
	}
}

// A short Retry-After is waited out and the call retried; after the
// retries it fails naming the rate limit.
func TestShortRateLimitIsRetriedThenGivenUp(t *testing.T) {
	srv, calls := rateLimited(t, "Retry-After-Ms", "20", "")
	c := &Client{Provider: "anthropic", MaxRetries: 2}
	err := c.Post(context.Background(), srv.URL, nil, map[string]any{}, func([]byte) error { return nil })
	if !errors.Is(err, ErrRateLimited) || calls.Load() != 3 {
		t.Fatalf("err = %v after %d calls, want ErrRateLimited after 3", err, calls.Load())
	}
}

func TestAnswerSizeIsBounded(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Write(bytes.Repeat([]byte("x"), 2048))
	}))
	defer srv.Close()
	c := &Client{Provider: "openai", MaxBody: 1024}
	err := c.Post(context.Background(), srv.URL, nil, map[string]any{}, func([]byte) error { return nil })
	if err == nil || !strings.Contains(err.Error(), "larger than 1024 bytes") {
		t.Fatalf("err = %v", err)
	}
}

func TestErrorMessage(t *testing.T) {
	for in, want := range map[string]string{
		`{"error":{"message":"bad model","type":"invalid_request_error"}}`:            "bad model",
		`{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`: "Overloaded",
		`{"error":"model not found"}`:                                                 "model not found",
		`upstream timed out`:                                                          "upstream timed out",
		``:                                                                            "(no message)",
		strings.Repeat("z", 500):                                                      strings.Repeat("z", 300) + "…",
	} {
		if got := errorMessage([]byte(in)); got != want {
			t.Errorf("errorMessage(%.40q) = %.40q, want %.40q", in, got, want)
		}
	}
}

// A server that quotes the refused key back (as some proxies do) does not
// get it into the error, which goes into logs.
func TestRefusedKeyIsNotRepeatedInTheError(t *testing.T) {
	const key = "sk-live-0123456789abcdef"
	for _, h := range []http.Header{{"Authorization": {"Bearer " + key}}, {"X-Api-Key": {key}}} {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			got := strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ") + r.Header.Get("X-Api-Key")
			w.WriteHeader(http.StatusUnauthorized)
			io.WriteString(w, `{"error":{"message":"Incorrect API key provided: `+got+`.","type":"invalid_request_error"}}`)
		}))
		c := &Client{Provider: "openai"}
		err := c.Post(context.Background(), srv.URL, h, map[string]any{}, func([]byte) error { return nil })
		srv.Close()
		var se *StatusError
		if !errors.As(err, &se) || se.Status != 401 || strings.Contains(err.Error(), key) || !strings.Contains(err.Error(), "[redacted]") {
			t.Fatalf("err = %v", err)
		}
	}
}

// FuzzErrorMessage: any error body gives a message, clipped, never a panic.
func FuzzErrorMessage(f *testing.F) {
	f.Add([]byte(`{"error":{"message":"x","type":"invalid_request_error"}}`))
	f.Add([]byte(`{"error":"overloaded"}`))
	f.Add([]byte(`<html>`))
	f.Add([]byte(``))
	f.Fuzz(func(t *testing.T, b []byte) {
		if m := errorMessage(b); len(m) > 300+len("…") || m == "" {
			t.Fatalf("errorMessage of %d bytes", len(m))
		}
	})
}
