// Streaming: an answer read as server-sent events while the model writes
// it (issue 28), under the same limits as a whole answer and one more:
// an idle limit between two chunks.

package modelhttp

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strings"
	"time"
)

// DefaultIdle is how long a stream may go without a byte once its first
// byte came: a stream that stalls mid-answer is cut then, not waited on
// for the whole deadline.
const DefaultIdle = 5 * time.Second

// ErrStalled is returned (wrapped) when a stream sent nothing for its idle
// limit.
var ErrStalled = errors.New("the stream stalled")

// ErrStreamRefused is returned (wrapped) when the server refuses to
// stream: a 400 whose message names "stream". The caller asks again for
// the whole answer.
var ErrStreamRefused = errors.New("the server does not stream")

// ErrEnd is what an event handler returns when the answer is complete
// ([DONE], message_stop): the stream ends there and its request is
// closed, without waiting for the server to close it (a server or a
// proxy may hold the connection open after the answer).
var ErrEnd = errors.New("the answer is complete")

// Event is one server-sent event: its name ("" for a plain data event)
// and its data (the data lines joined by newlines).
type Event struct {
	Name string
	Data []byte
}

// Streamed is how a caller takes a streamed answer.
type Streamed struct {
	// Event hears each event as it arrives; an error ends the stream
	// with it.
	Event func(Event) error
	// Whole hears a 2xx answer that is not an event stream: a server
	// that ignored the request to stream and answered whole.
	Whole func([]byte) error
	// Idle is the longest wait for the next byte once the answer has
	// started (default DefaultIdle).
	Idle time.Duration
}

// Stream posts body as JSON to url with header, asking for an event
// stream, and hands the answer to s as it arrives. Before the stream
// starts, 429 and 5xx are retried as Send retries them; once it has
// started, nothing is retried (what was heard was heard). The stream
// ends at its end, when s.Event fails, when ctx ends (the request is
// closed at once), after MaxBody bytes, or after s.Idle without a byte
// (ErrStalled).
func (c *Client) Stream(ctx context.Context, url string, header http.Header, body any, s Streamed) error {
	payload, err := json.Marshal(body)
	if err != nil {
		return fmt.Errorf("%s: encode the request: %w", c.Provider, err)
	}
	return c.StreamSend(ctx, url, header, "application/json", payload, s)
}

// StreamSend is Stream with a body of its own content type (a multipart
// form: a transcription).
func (c *Client) StreamSend(ctx context.Context, url string, header http.Header, ctype string, payload []byte, s Streamed) error {
	idle := s.Idle
	if idle <= 0 {
		idle = DefaultIdle
	}
	h := header.Clone()
	if h == nil {
		h = http.Header{}
	}
	h.Set("Accept", "text/event-stream")
	var streamErr error
	err := c.send(ctx, url, h, ctype, payload, func(ctx context.Context, resp *http.Response, cancel context.CancelCauseFunc) (bool, error) {
		if resp.StatusCode < 200 || resp.StatusCode >= 300 {
			return false, nil // read and retried or reported as any answer
		}
		ct, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
		if ct != "text/event-stream" {
			return false, nil // whole: decoded below
		}
		streamErr = c.readEvents(ctx, resp.Body, idle, cancel, s.Event)
		return true, nil
	}, func(b []byte) error {
		if s.Whole == nil {
			return fmt.Errorf("%s: the answer is not an event stream", c.Provider)
		}
		return s.Whole(b)
	})
	if err != nil {
		var se *StatusError
		if errors.As(err, &se) && se.Status == http.StatusBadRequest && strings.Contains(strings.ToLower(se.Message), "stream") {
			return fmt.Errorf("%s: %w: %w", c.Provider, ErrStreamRefused, err)
		}
		return err
	}
	return streamErr
}

// readEvents reads server-sent events from r until its end, handing each
// to fn; no byte for idle cancels the request with ErrStalled.
func (c *Client) readEvents(ctx context.Context, r io.Reader, idle time.Duration, cancel context.CancelCauseFunc, fn func(Event) error) error {
	limit := c.MaxBody
	if limit <= 0 {
		limit = DefaultMaxBody
	}
	// The idle limit runs from the answer's first byte: before it, a model
	// still reading a long prompt (a small board's) is bounded by the
	// caller's deadline alone.
	var stall *time.Timer
	defer func() {
		if stall != nil {
			stall.Stop()
		}
	}()
	br := bufio.NewReaderSize(&countingReader{r: r, left: limit + 1, onRead: func() {
		if stall == nil {
			stall = time.AfterFunc(idle, func() { cancel(ErrStalled) })
		} else {
			stall.Reset(idle)
		}
	}}, 32<<10)
	var ev Event
	var data bytes.Buffer
	for {
		line, err := br.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			// A line longer than the buffer: keep reading it whole.
			rest, err2 := br.ReadBytes('\n')
			line, err = append(append([]byte(nil), line...), rest...), err2
		}
		if len(line) > 0 {
			line = bytes.TrimRight(line, "\r\n")
			switch {
			case len(line) == 0: // the event is complete
				if data.Len() > 0 || ev.Name != "" {
					ev.Data = bytes.TrimSuffix(data.Bytes(), []byte("\n"))
					if ferr := fn(ev); ferr != nil {
						return ended(ferr)
					}
				}
				ev, data = Event{}, bytes.Buffer{}
			case line[0] == ':': // a comment: a keep-alive
			default:
				field, value, _ := bytes.Cut(line, []byte(":"))
				value = bytes.TrimPrefix(value, []byte(" "))
				switch string(field) {
				case "event":
					ev.Name = string(value)
				case "data":
					data.Write(value)
					data.WriteByte('\n')
				}
			}
		}
		if err != nil {
			if errors.Is(context.Cause(ctx), ErrStalled) {
				return fmt.Errorf("%s: %w: nothing came for %v", c.Provider, ErrStalled, idle)
			}
			if errors.Is(err, errTooLong) {
				return fmt.Errorf("%s: the answer is larger than %d bytes", c.Provider, limit)
			}
			if err == io.EOF {
				if data.Len() > 0 { // the last event had no blank line after it
					ev.Data = bytes.TrimSuffix(data.Bytes(), []byte("\n"))
					return ended(fn(ev))
				}
				return nil
			}
			if ctx.Err() != nil {
				return fmt.Errorf("%s: %w", c.Provider, ctx.Err())
			}
			return fmt.Errorf("%s: reading the stream: %w", c.Provider, err)
		}
	}
}

var errTooLong = errors.New("the answer is too long")

// ended is a handler's error, nil when it says the answer is complete.
func ended(err error) error {
	if errors.Is(err, ErrEnd) {
		return nil
	}
	return err
}

// countingReader fails once it has read left bytes, and tells of every
// read.
type countingReader struct {
	r      io.Reader
	left   int64
	onRead func()
}

func (c *countingReader) Read(p []byte) (int, error) {
	if int64(len(p)) > c.left {
		p = p[:c.left]
	}
	n, err := c.r.Read(p)
	c.left -= int64(n)
	if n > 0 {
		c.onRead()
	}
	if c.left <= 0 {
		return n, errTooLong // the byte past the limit was read: too long
	}
	return n, err
}
