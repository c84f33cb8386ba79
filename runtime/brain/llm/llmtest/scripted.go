package llmtest

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
)

// T is the part of a *testing.T a Scripted server reports to (this
// package is also built into benchmarks, which do not import testing).
type T interface {
	Errorf(format string, args ...any)
	Cleanup(func())
}

// Reply answers one request; req is its JSON body.
type Reply func(w http.ResponseWriter, req map[string]any)

// Scripted is a provider's endpoint for its own tests: it answers POST
// path with the scripted replies, in order, keeps every request for the
// test to check, and refuses an image the real API refuses.
type Scripted struct {
	mu      sync.Mutex
	Reqs    []map[string]any
	Headers []http.Header
	Refused []string // images the server refused, as the real API would
	*httptest.Server
}

// NewScripted starts the server (closed at the test's cleanup). problem
// names what the real API would refuse in a request ("" for nothing);
// refuse writes the API's answer to it.
func NewScripted(t T, path string, problem func(req map[string]any) string, refuse func(w http.ResponseWriter, why string), replies ...Reply) *Scripted {
	s := &Scripted{}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != path || r.Method != http.MethodPost {
			t.Errorf("%s %s", r.Method, r.URL.Path)
			http.NotFound(w, r)
			return
		}
		b, _ := io.ReadAll(r.Body)
		var req map[string]any
		if err := json.Unmarshal(b, &req); err != nil {
			t.Errorf("request is not JSON: %v", err)
		}
		s.mu.Lock()
		s.Reqs = append(s.Reqs, req)
		s.Headers = append(s.Headers, r.Header.Clone())
		i := len(s.Reqs) - 1
		s.mu.Unlock()
		if why := problem(req); why != "" { // as the real API refuses it
			s.mu.Lock()
			s.Refused = append(s.Refused, why)
			s.mu.Unlock()
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusBadRequest)
			refuse(w, why)
			return
		}
		if i >= len(replies) {
			t.Errorf("unexpected request %d", i+1)
			http.Error(w, "no more replies", 500)
			return
		}
		replies[i](w, req)
	}))
	t.Cleanup(s.Close)
	return s
}

// Requests returns the requests so far.
func (s *Scripted) Requests() []map[string]any {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.Reqs
}

// InOrder reports whether each of names occurs in s, each after the one
// before it (the order of the fields a request's schema names).
func InOrder(s string, names ...string) bool {
	at := 0
	for _, n := range names {
		i := strings.Index(s[at:], n)
		if i < 0 {
			return false
		}
		at += i + len(n)
	}
	return true
}

// Parts returns the content parts of type typ in every message of a
// chat request, in order (an image block, an image_url part).
func Parts(req map[string]any, typ string) []map[string]any {
	var out []map[string]any
	msgs, _ := req["messages"].([]any)
	for _, m := range msgs {
		parts, _ := m.(map[string]any)["content"].([]any)
		for _, p := range parts {
			if pm, _ := p.(map[string]any); pm["type"] == typ {
				out = append(out, pm)
			}
		}
	}
	return out
}

// Events is a reply that streams: it checks that the request asked for a
// stream (stream true), then writes each event (its "event:" and "data:"
// lines, as given) and flushes it, as a streaming server does; a stream
// cut short is one whose last event is not the end.
func Events(t T, events ...string) Reply { return HeldEvents(t, nil, events...) }

// HeldEvents is Events, then holding the connection open until held
// closes (nil: not at all), as a server or a proxy that is slow to close
// after the answer.
func HeldEvents(t T, held <-chan struct{}, events ...string) Reply {
	return func(w http.ResponseWriter, req map[string]any) {
		if req["stream"] != true {
			t.Errorf("a streamed reply for a request without stream true: %v", req["stream"])
		}
		w.Header().Set("Content-Type", "text/event-stream")
		w.Header().Set("Cache-Control", "no-cache")
		for _, e := range events {
			io.WriteString(w, e+"\n\n")
			w.(http.Flusher).Flush()
		}
		if held != nil {
			<-held
		}
	}
}
