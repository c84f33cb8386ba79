package modelhttp

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// sse is a server that answers with the event stream parts, flushing
// after each, and waiting before a part for its gate (a nil gate: at
// once). It checks that it was asked for an event stream.
func sse(t *testing.T, parts []string, gates []chan struct{}) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Accept") != "text/event-stream" || r.Header.Get("Content-Type") != "application/json" {
			t.Errorf("asked with Accept %q, Content-Type %q", r.Header.Get("Accept"), r.Header.Get("Content-Type"))
		}
		w.Header().Set("Content-Type", "text/event-stream; charset=utf-8")
		w.WriteHeader(http.StatusOK)
		for i, p := range parts {
			if i < len(gates) && gates[i] != nil {
				select {
				case <-gates[i]:
				case <-r.Context().Done():
					return
				}
			}
			fmt.Fprint(w, p)
			w.(http.Flusher).Flush()
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}

func collect(events *[]Event) func(Event) error {
	return func(e Event) error {
		*events = append(*events, Event{Name: e.Name, Data: append([]byte(nil), e.Data...)})
		return nil
	}
}

// Both APIs' event shapes: OpenAI's data lines ending in [DONE],
// Anthropic's named events; comments (keep-alives) skipped, CRLF lines,
// data split over lines joined with a newline.
func TestStreamReadsEvents(t *testing.T) {
	srv := sse(t, []string{
		": keep-alive\n\n",
		"data: {\"a\":1}\n\n",
		"event: content_block_delta\r\ndata: {\"b\":2}\r\n\r\n",
		"data: line one\ndata: line two\n\n",
		"data: [DONE]\n\n",
	}, nil)
	var got []Event
	c := &Client{Provider: "test"}
	if err := c.Stream(context.Background(), srv.URL, nil, map[string]any{"stream": true}, Streamed{Event: collect(&got)}); err != nil {
		t.Fatal(err)
	}
	want := []Event{{"", []byte(`{"a":1}`)}, {"content_block_delta", []byte(`{"b":2}`)}, {"", []byte("line one\nline two")}, {"", []byte("[DONE]")}}
	if fmt.Sprintf("%q", got) != fmt.Sprintf("%q", want) {
		t.Fatalf("events %q, want %q", got, want)
	}
}

// An event is handed on as soon as it arrives, before the server has
// written the rest of its answer.
func TestStreamHandsEventsOnAsTheyCome(t *testing.T) {
	gate := make(chan struct{})
	srv := sse(t, []string{"data: first\n\n", "data: second\n\n"}, []chan struct{}{nil, gate})
	var got []string
	c := &Client{Provider: "test"}
	err := c.Stream(context.Background(), srv.URL, nil, struct{}{}, Streamed{Event: func(e Event) error {
		got = append(got, string(e.Data))
		if len(got) == 1 {
			close(gate) // the server writes the second only now
		}
		return nil
	}})
	if err != nil || strings.Join(got, ",") != "first,second" {
		t.Fatalf("events %q, err %v", got, err)
	}
}

// stalling is a server that sends one event, then nothing until the
// client lets go of the request; closed closes then.
func stalling(t *testing.T) (srv *httptest.Server, closed chan struct{}) {
	closed = make(chan struct{})
	srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(w, "data: one\n\n")
		w.(http.Flusher).Flush()
		<-r.Context().Done()
		close(closed)
	}))
	t.Cleanup(srv.Close)
	return srv, closed
}

// A stream that stops sending mid-answer is cut after its idle limit, and
// its request is closed (the server sees it go).
func TestStreamStallIsCut(t *testing.T) {
	srv, closed := stalling(t)
	var got []Event
	c := &Client{Provider: "test"}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	err := c.Stream(ctx, srv.URL, nil, struct{}{}, Streamed{Event: collect(&got), Idle: 50 * time.Millisecond})
	if !errors.Is(err, ErrStalled) || len(got) != 1 {
		t.Fatalf("err %v after %d events, want ErrStalled after 1", err, len(got))
	}
	select {
	case <-closed:
	case <-time.After(10 * time.Second):
		t.Fatal("the stalled request was not closed")
	}
}

// The idle limit runs from the first byte: a model that takes longer than
// it to start (a long prompt on a small board) is not cut.
func TestStreamSlowStartIsNoStall(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		w.(http.Flusher).Flush() // the headers at once, as llama.cpp sends them
		time.Sleep(200 * time.Millisecond)
		fmt.Fprint(w, "data: late\n\n")
	}))
	defer srv.Close()
	var got []Event
	c := &Client{Provider: "test"}
	if err := c.Stream(context.Background(), srv.URL, nil, struct{}{}, Streamed{Event: collect(&got), Idle: 20 * time.Millisecond}); err != nil || len(got) != 1 {
		t.Fatalf("err %v, %d events", err, len(got))
	}
}

// A handler that says the answer is complete (ErrEnd) ends the stream
// there, and its request is closed, though the server holds the
// connection open after the answer.
func TestStreamEndsWhenTheAnswerIsComplete(t *testing.T) {
	srv, closed := stalling(t)
	c := &Client{Provider: "test"}
	err := c.Stream(context.Background(), srv.URL, nil, struct{}{}, Streamed{Event: func(Event) error { return ErrEnd }, Idle: time.Minute})
	if err != nil {
		t.Fatalf("err %v, want nil", err)
	}
	select {
	case <-closed:
	case <-time.After(10 * time.Second):
		t.Fatal("the request was not closed at the end of the answer")
	}
}

// Cancelling (barge-in, another robot granted) closes the request at once.
func TestStreamCancelClosesTheRequest(t *testing.T) {
	srv, closed := stalling(t)
	ctx, cancel := context.WithCancel(context.Background())
	c := &Client{Provider: "test"}
	err := c.Stream(ctx, srv.URL, nil, struct{}{}, Streamed{Event: func(Event) error { cancel(); return nil }, Idle: time.Minute})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err %v, want context.Canceled", err)
	}
	select {
	case <-closed:
	case <-time.After(10 * time.Second):
		t.Fatal("the cancelled request was not closed")
	}
}

// A server that refuses to stream says so: a 400 naming stream is
// ErrStreamRefused (not retried); one that ignores the ask and answers
// whole is handed to Whole.
func TestStreamRefusedOrAnsweredWhole(t *testing.T) {
	var calls atomic.Int32
	refuse := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		w.WriteHeader(http.StatusBadRequest)
		fmt.Fprint(w, `{"error":{"message":"'stream' is not supported by this server"}}`)
	}))
	defer refuse.Close()
	c := &Client{Provider: "test"}
	err := c.Stream(context.Background(), refuse.URL, nil, struct{}{}, Streamed{Event: func(Event) error { return nil }})
	if !errors.Is(err, ErrStreamRefused) || calls.Load() != 1 {
		t.Fatalf("err %v after %d calls, want ErrStreamRefused after 1", err, calls.Load())
	}
	whole := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"whole":true}`)
	}))
	defer whole.Close()
	var got string
	err = c.Stream(context.Background(), whole.URL, nil, struct{}{}, Streamed{Event: func(Event) error { return errors.New("no event expected") },
		Whole: func(b []byte) error { got = string(b); return nil }})
	if err != nil || got != `{"whole":true}` {
		t.Fatalf("whole %q, err %v", got, err)
	}
}

// A 429 before the stream starts is retried as a whole answer's is; a
// stream is bounded as a whole answer is.
func TestStreamRetriedBeforeItStartsAndBounded(t *testing.T) {
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if calls.Add(1) == 1 {
			w.Header().Set("Retry-After-Ms", "10")
			w.WriteHeader(http.StatusTooManyRequests)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		for range 100 {
			fmt.Fprint(w, "data: "+strings.Repeat("x", 100)+"\n\n")
		}
	}))
	defer srv.Close()
	n := 0
	c := &Client{Provider: "test", MaxBody: 1 << 20}
	if err := c.Stream(context.Background(), srv.URL, nil, struct{}{}, Streamed{Event: func(Event) error { n++; return nil }}); err != nil || n != 100 || calls.Load() != 2 {
		t.Fatalf("err %v, %d events, %d calls", err, n, calls.Load())
	}
	small := &Client{Provider: "test", MaxBody: 1000}
	err := small.Stream(context.Background(), srv.URL, nil, struct{}{}, Streamed{Event: func(Event) error { return nil }})
	if err == nil || !strings.Contains(err.Error(), "larger than 1000 bytes") {
		t.Fatalf("a stream past MaxBody: %v", err)
	}
}

// FuzzEvents feeds the event reader anything a server could send: it
// never panics, and every event it hands on came from data lines.
func FuzzEvents(f *testing.F) {
	f.Add("data: {\"a\":1}\n\n")
	f.Add("event: x\r\ndata: y\r\n\r\n: c\n\ndata: [DONE]")
	f.Add("data\n\ndata:\n\nevent:\n\n")
	f.Fuzz(func(t *testing.T, text string) {
		c := &Client{Provider: "fuzz", MaxBody: 1 << 16}
		ctx, cancel := context.WithCancelCause(context.Background())
		defer cancel(nil)
		_ = c.readEvents(ctx, strings.NewReader(text), time.Minute, cancel, func(e Event) error {
			if len(e.Data) > len(text) {
				t.Fatalf("an event larger than the input: %q", e.Data)
			}
			return nil
		})
	})
}
