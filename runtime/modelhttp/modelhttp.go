// Package modelhttp is the one HTTP exchange Chorus makes with a model
// server: the brains' (OpenAI-compatible chat completions, Anthropic's
// Messages API) and the drivers' (an OpenAI-compatible transcription
// endpoint). A request (JSON, or any body with its content type), an
// answer read to a bounded size, and retries on 429 and 5xx that say what
// they do.
//
// A 429 is logged with the Retry-After the server asked for and reported
// to OnRateLimited (the callers count it in
// chorus_brain_rate_limited_total). No wait ever runs past the caller's
// deadline: when the server asks for longer than is left, the call fails
// at once with ErrRateLimited, naming both, so a companion listens instead
// of sleeping through the vote. No header value (an API key) is logged,
// and a server message that quotes one is redacted.
//
// It is a leaf: it imports nothing of Chorus, so the brains and the
// drivers (which import nothing of the conversation runtime) share it
// (issue 30, item 2).
//
// # Concurrency
//
// A Client is safe for concurrent use.
package modelhttp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// OpenAIBaseURL is OpenAI's API: the default base URL of every client of
// an OpenAI-compatible API (the chat brain, speech to text).
const OpenAIBaseURL = "https://api.openai.com/v1"

// Defaults.
const (
	DefaultMaxRetries = 2
	DefaultMaxBody    = 8 << 20 // a model's answer; a longer one is an error
	backoffBase       = 500 * time.Millisecond
	maxRetryAfter     = time.Hour
)

// ErrRateLimited is returned (wrapped) when the server rate-limits the call
// and waiting would run past the deadline, or the retries are used up.
var ErrRateLimited = errors.New("rate limited")

// StatusError is an answer with a status other than 2xx.
type StatusError struct {
	Provider string
	Status   int
	Message  string // the server's error message, clipped
}

func (e *StatusError) Error() string {
	return fmt.Sprintf("%s: HTTP %d: %s", e.Provider, e.Status, e.Message)
}

// Client posts to a model server.
type Client struct {
	Provider   string       // "openai", "anthropic", "openai-stt": for logs and errors
	HTTP       *http.Client // default: dial and TLS timeouts, no overall timeout (the context has it)
	MaxRetries int          // on 429 and 5xx; default 2, negative for none
	MaxBody    int64        // default 8 MiB
	Log        *slog.Logger
	// OnRateLimited hears of each 429 and the wait it asks for (nil: none).
	OnRateLimited func(wait time.Duration)
}

var defaultHTTP = &http.Client{Transport: &http.Transport{
	Proxy:                 http.ProxyFromEnvironment,
	DialContext:           (&net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
	TLSHandshakeTimeout:   10 * time.Second,
	MaxIdleConnsPerHost:   4,
	IdleConnTimeout:       90 * time.Second,
	ExpectContinueTimeout: time.Second,
}}

// Post sends body as JSON to url with header and decodes a 2xx answer
// with decode (Send).
func (c *Client) Post(ctx context.Context, url string, header http.Header, body any, decode func([]byte) error) error {
	payload, err := json.Marshal(body)
	if err != nil {
		return fmt.Errorf("%s: encode the request: %w", c.Provider, err)
	}
	return c.Send(ctx, url, header, "application/json", payload, decode)
}

// Send posts payload of content type ctype to url with header and decodes
// a 2xx answer with decode. 429 and 5xx answers are retried (MaxRetries),
// waiting what the server asks (Retry-After-Ms, Retry-After) or a short
// backoff.
func (c *Client) Send(ctx context.Context, url string, header http.Header, ctype string, payload []byte, decode func([]byte) error) error {
	return c.send(ctx, url, header, ctype, payload, nil, decode)
}

// taker may take an answer's body itself, as it arrives (a stream): it
// reports whether it did. Its context is the request's; cancelling it
// closes the request.
type taker func(ctx context.Context, resp *http.Response, cancel context.CancelCauseFunc) (bool, error)

// send is Send, with take offered each answer first.
func (c *Client) send(ctx context.Context, url string, header http.Header, ctype string, payload []byte, take taker, decode func([]byte) error) error {
	retries := c.MaxRetries
	if retries == 0 {
		retries = DefaultMaxRetries
	}
	for attempt := 0; ; attempt++ {
		status, b, h, taken, err := c.do(ctx, url, header, ctype, payload, take)
		if err != nil || taken {
			return err
		}
		if status >= 200 && status < 300 {
			return decode(b)
		}
		serr := &StatusError{Provider: c.Provider, Status: status, Message: redact(errorMessage(b), header)}
		if !retryable(status) {
			return serr
		}
		wait, asked := retryAfter(h)
		if !asked {
			wait = backoff(attempt)
		}
		if status == http.StatusTooManyRequests {
			c.rateLimited(wait, asked, attempt, retries)
		}
		if attempt >= retries {
			if status == http.StatusTooManyRequests {
				return fmt.Errorf("%s: %w after %d tries (the server asks to wait %v): %w", c.Provider, ErrRateLimited, attempt+1, wait.Round(time.Millisecond), serr)
			}
			return serr
		}
		if dl, ok := ctx.Deadline(); ok && time.Until(dl) < wait {
			if status == http.StatusTooManyRequests {
				return fmt.Errorf("%s: %w: the server asks to wait %v, the deadline is in %v: %w", c.Provider, ErrRateLimited,
					wait.Round(time.Millisecond), time.Until(dl).Round(time.Millisecond), serr)
			}
			return serr
		}
		if status != http.StatusTooManyRequests && c.Log != nil {
			c.Log.Warn("model server failed; retrying", "provider", c.Provider, "status", status, "wait", wait.Round(time.Millisecond))
		}
		t := time.NewTimer(wait)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("%s: waiting to retry: %w", c.Provider, ctx.Err())
		}
	}
}

func (c *Client) do(ctx context.Context, url string, header http.Header, ctype string, payload []byte, take taker) (int, []byte, http.Header, bool, error) {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(payload))
	if err != nil {
		return 0, nil, nil, false, fmt.Errorf("%s: %w", c.Provider, err)
	}
	for k, vs := range header {
		for _, v := range vs {
			req.Header.Add(k, v)
		}
	}
	req.Header.Set("Content-Type", ctype)
	if req.Header.Get("Accept") == "" {
		req.Header.Set("Accept", "application/json")
	}
	hc := c.HTTP
	if hc == nil {
		hc = defaultHTTP
	}
	resp, err := hc.Do(req)
	if err != nil {
		return 0, nil, nil, false, fmt.Errorf("%s: %w", c.Provider, err)
	}
	defer resp.Body.Close()
	if take != nil {
		if taken, err := take(ctx, resp, cancel); taken || err != nil {
			return resp.StatusCode, nil, resp.Header, taken, err
		}
	}
	limit := c.MaxBody
	if limit <= 0 {
		limit = DefaultMaxBody
	}
	b, err := io.ReadAll(io.LimitReader(resp.Body, limit+1))
	if err != nil {
		return 0, nil, nil, false, fmt.Errorf("%s: reading the answer: %w", c.Provider, err)
	}
	if int64(len(b)) > limit {
		return 0, nil, nil, false, fmt.Errorf("%s: the answer is larger than %d bytes", c.Provider, limit)
	}
	return resp.StatusCode, b, resp.Header, false, nil
}

func (c *Client) rateLimited(wait time.Duration, asked bool, attempt, retries int) {
	if c.OnRateLimited != nil {
		c.OnRateLimited(wait)
	}
	if c.Log != nil {
		c.Log.Warn("model server rate-limits (HTTP 429)", "provider", c.Provider, "retry_after", wait.Round(time.Millisecond),
			"retry_after_given", asked, "try", attempt+1, "of", retries+1)
	}
}

func retryable(status int) bool {
	switch status {
	case http.StatusRequestTimeout, http.StatusConflict, http.StatusTooManyRequests, 529: // 529: Anthropic overloaded
		return true
	}
	return status >= 500
}

// retryAfter reads how long the server asks to wait: Retry-After-Ms
// (OpenAI, Anthropic), else Retry-After in seconds or as an HTTP date.
func retryAfter(h http.Header) (time.Duration, bool) {
	if v := h.Get("Retry-After-Ms"); v != "" {
		if ms, err := strconv.ParseFloat(v, 64); err == nil && ms >= 0 && ms < float64(maxRetryAfter/time.Millisecond) {
			return time.Duration(ms * float64(time.Millisecond)), true
		}
	}
	if v := h.Get("Retry-After"); v != "" {
		if s, err := strconv.ParseFloat(v, 64); err == nil {
			if s >= 0 && s < maxRetryAfter.Seconds() {
				return time.Duration(s * float64(time.Second)), true
			}
			return maxRetryAfter, true
		}
		if t, err := http.ParseTime(v); err == nil {
			d := time.Until(t)
			if d < 0 {
				d = 0
			}
			return min(d, maxRetryAfter), true
		}
	}
	return 0, false
}

// backoff is 0.5 s, 1 s, 2 s ... with ±20 % jitter.
func backoff(attempt int) time.Duration {
	d := backoffBase << min(attempt, 6)
	return time.Duration(float64(d) * (0.8 + 0.4*rand.Float64()))
}

// secretHeaders carry credentials (OpenAI's bearer token, Anthropic's key).
var secretHeaders = []string{"Authorization", "X-Api-Key", "Api-Key"}

// redact removes the credentials the request carried from msg: some
// servers and proxies quote the key they refused ("Incorrect API key
// provided: ..."), and the message goes into logs.
func redact(msg string, header http.Header) string {
	for _, name := range secretHeaders {
		for _, v := range header.Values(name) {
			for _, secret := range []string{v, strings.TrimPrefix(v, "Bearer ")} {
				if len(secret) >= 4 {
					msg = strings.ReplaceAll(msg, secret, "[redacted]")
				}
			}
		}
	}
	return msg
}

// ErrorText is the message of an API error object as a stream carries it
// ({"message": ...}, or a string), clipped.
func ErrorText(e json.RawMessage) string { return errorMessage([]byte(`{"error":` + string(e) + `}`)) }

// errorMessage finds the server's message in an error body ({"error":
// {"message": ...}} for both APIs, or a bare string), clipped to 300 bytes.
func errorMessage(b []byte) string {
	var e struct {
		Error json.RawMessage `json:"error"`
	}
	msg := strings.TrimSpace(string(b))
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
	if len(msg) > 300 {
		msg = msg[:300] + "…"
	}
	if msg == "" {
		msg = "(no message)"
	}
	return msg
}
