// Package wyoming recognises speech with a Wyoming server (Home
// Assistant's voice protocol, spec in rhasspy/wyoming's README): one TCP
// connection per utterance, audio streamed while the person speaks.
//
// The exchange: the client sends transcribe {language?, name?},
// audio-start {rate, width, channels}, one audio-chunk {rate, width,
// channels} + PCM per Write, audio-stop; the server answers transcript
// {text, language?} (an error event {text, code?} is a failure). Describe
// sends describe and reads info, for the doctor. Every event goes through
// one strict reader and writer (drivers/wyoming).
//
// # Usage
//
//	e := &wyoming.Engine{Addr: "127.0.0.1:10300", Language: "en"}
//	s, err := e.Start(ctx, 16000)
//	s.Write(frame) ...
//	tr, err := s.Finish(ctx)
//
// # Concurrency
//
// An Engine is safe for concurrent use. Each Session owns one goroutine,
// which drains its bounded queue of chunks onto the connection; it ends
// when Finish or Abort returns.
package wyoming

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"strings"
	"sync"
	"time"

	"github.com/chorus-robotics/chorus/drivers/stt"
	wy "github.com/chorus-robotics/chorus/drivers/wyoming"
)

// Defaults.
const (
	DefaultDialTimeout = 3 * time.Second
	DefaultTimeout     = 15 * time.Second // from audio-stop to transcript; also bounds each write
	DefaultMaxQueue    = 256              // chunks (about 5 s of 20 ms frames)
	maxEvents          = 1000             // events read while waiting for one answer
)

// Engine talks to one Wyoming STT server.
type Engine struct {
	Addr        string        // host:port, e.g. "127.0.0.1:10300" (wyoming-faster-whisper's default)
	Language    string        // sent in transcribe; "" lets the server choose
	Model       string        // sent as transcribe's name; "" for the server's default
	DialTimeout time.Duration // default DefaultDialTimeout
	Timeout     time.Duration // default DefaultTimeout
	MaxQueue    int           // chunks waiting to be sent; default DefaultMaxQueue
	Log         *slog.Logger
}

var _ stt.Engine = (*Engine)(nil)

// Name implements stt.Engine.
func (e *Engine) Name() string { return "wyoming" }

func (e *Engine) timeout() time.Duration {
	if e.Timeout > 0 {
		return e.Timeout
	}
	return DefaultTimeout
}

func (e *Engine) dial(ctx context.Context) (net.Conn, error) {
	if e.Addr == "" {
		return nil, errors.New("stt wyoming: no server address")
	}
	dt := e.DialTimeout
	if dt <= 0 {
		dt = DefaultDialTimeout
	}
	d := net.Dialer{Timeout: dt}
	c, err := d.DialContext(ctx, "tcp", e.Addr)
	if err != nil {
		return nil, fmt.Errorf("stt wyoming: connect to %s: %w", e.Addr, err)
	}
	return c, nil
}

// audioFormat is the data of audio-start and audio-chunk.
type audioFormat struct {
	Rate     int `json:"rate"`
	Width    int `json:"width"`
	Channels int `json:"channels"`
}

type transcribe struct {
	Language string `json:"language,omitempty"`
	Name     string `json:"name,omitempty"`
}

// Start implements stt.Engine: it connects and sends transcribe and
// audio-start.
func (e *Engine) Start(ctx context.Context, rate int) (stt.Session, error) {
	if err := stt.CheckRate(rate); err != nil {
		return nil, err
	}
	conn, err := e.dial(ctx)
	if err != nil {
		return nil, err
	}
	format := audioFormat{Rate: rate, Width: 2, Channels: 1}
	var b []byte
	for _, ev := range []struct {
		typ string
		v   any
	}{{"transcribe", transcribe{e.Language, e.Model}}, {"audio-start", format}} {
		ev, err := wy.NewEvent(ev.typ, ev.v, nil)
		if err == nil {
			b, err = wy.AppendEvent(b, ev)
		}
		if err != nil {
			conn.Close()
			return nil, fmt.Errorf("stt wyoming: %w", err)
		}
	}
	conn.SetWriteDeadline(time.Now().Add(e.timeout()))
	if _, err := conn.Write(b); err != nil {
		conn.Close()
		return nil, fmt.Errorf("stt wyoming: %s: sending transcribe: %w", e.Addr, err)
	}
	max := e.MaxQueue
	if max <= 0 {
		max = DefaultMaxQueue
	}
	s := &Session{e: e, conn: conn, format: format, queue: make(chan []byte, max), done: make(chan struct{})}
	go s.send()
	return s, nil
}

// Session is one utterance on one connection.
type Session struct {
	e      *Engine
	conn   net.Conn
	format audioFormat
	done   chan struct{} // closed when send returns

	mu       sync.Mutex
	queue    chan []byte // closed by Finish or Abort, under mu
	closed   bool
	life     stt.Lifecycle // finished, aborted
	overflow bool
	sendErr  error
	sent     int // bytes of PCM written
}

var _ stt.Session = (*Session)(nil)

// send is the session's goroutine: it writes queued chunks as audio-chunk
// events until the queue is closed.
func (s *Session) send() {
	defer close(s.done)
	for payload := range s.queue {
		s.mu.Lock()
		failed := s.sendErr != nil
		s.mu.Unlock()
		if failed {
			continue // drain
		}
		ev, err := wy.NewEvent("audio-chunk", s.format, payload)
		if err == nil {
			s.conn.SetWriteDeadline(time.Now().Add(s.e.timeout()))
			err = wy.WriteEvent(s.conn, ev)
		}
		s.mu.Lock()
		if err != nil {
			s.sendErr = err
		} else {
			s.sent += len(payload)
		}
		s.mu.Unlock()
	}
}

// Write implements stt.Session: it queues the audio as chunks of at most
// one second and returns at once.
func (s *Session) Write(pcm []int16) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.life.Done(); err != nil {
		return err
	}
	switch {
	case s.sendErr != nil:
		return fmt.Errorf("stt wyoming: %s: %w", s.e.Addr, s.sendErr)
	}
	for len(pcm) > 0 && !s.overflow {
		n := min(len(pcm), s.format.Rate)
		select {
		case s.queue <- stt.AppendLE16(make([]byte, 0, 2*n), pcm[:n]):
		default:
			s.overflow = true
		}
		pcm = pcm[n:]
	}
	return nil
}

// closeQueue stops the sender taking more; the caller holds mu.
func (s *Session) closeQueue() {
	if !s.closed {
		s.closed = true
		close(s.queue)
	}
}

// Finish implements stt.Session: it waits for the queued chunks to go
// out, sends audio-stop and waits for the transcript.
func (s *Session) Finish(ctx context.Context) (stt.Transcript, error) {
	s.mu.Lock()
	if err := s.life.Finish(); err != nil {
		s.mu.Unlock()
		return stt.Transcript{}, err
	}
	s.closeQueue()
	s.mu.Unlock()
	defer s.conn.Close()

	// The engine's timeout bounds the wait; ctx ends it sooner through
	// AfterFunc, after ctx.Err() is set, so the error names ctx.
	s.conn.SetDeadline(time.Now().Add(s.e.timeout()))
	stop := context.AfterFunc(ctx, func() { s.conn.SetDeadline(time.Unix(1, 0)) })
	defer stop()

	tr, err := s.finish(ctx)
	if err != nil {
		s.mu.Lock()
		aborted := s.life.Aborted()
		s.mu.Unlock()
		if aborted {
			return stt.Transcript{}, stt.ErrAborted
		}
		if ctx.Err() != nil && !errors.Is(err, ctx.Err()) {
			err = fmt.Errorf("%w (%w)", err, ctx.Err())
		}
	}
	return tr, err
}

func (s *Session) finish(ctx context.Context) (stt.Transcript, error) {
	select {
	case <-s.done:
	case <-ctx.Done():
		<-s.done // the deadline set by AfterFunc ends the write
		return stt.Transcript{}, fmt.Errorf("stt wyoming: %s: sending audio: %w", s.e.Addr, ctx.Err())
	}
	s.mu.Lock()
	overflow, sendErr, sent := s.overflow, s.sendErr, s.sent
	s.mu.Unlock()
	if overflow {
		return stt.Transcript{}, fmt.Errorf("stt wyoming: %s: more than %d chunks waited to be sent: %w", s.e.Addr, cap(s.queue), stt.ErrOverflow)
	}
	if sendErr != nil {
		return stt.Transcript{}, fmt.Errorf("stt wyoming: %s: sending audio: %w", s.e.Addr, timeoutErr(sendErr))
	}
	stopEv, _ := wy.NewEvent("audio-stop", nil, nil)
	if err := wy.WriteEvent(s.conn, stopEv); err != nil {
		return stt.Transcript{}, fmt.Errorf("stt wyoming: %s: %w", s.e.Addr, timeoutErr(err))
	}
	start := time.Now()
	ev, err := readAnswer(bufio.NewReader(s.conn), "transcript", "transcript-start", "transcript-chunk", "transcript-stop")
	if err != nil {
		return stt.Transcript{}, fmt.Errorf("stt wyoming: %s: waiting for the transcript: %w", s.e.Addr, err)
	}
	var t struct {
		Text     *string `json:"text"`
		Language string  `json:"language"`
	}
	if err := ev.Decode(&t); err != nil || t.Text == nil {
		return stt.Transcript{}, fmt.Errorf("stt wyoming: %s: transcript without a text string: %w", s.e.Addr, wy.ErrProtocol)
	}
	if s.e.Log != nil {
		s.e.Log.Debug("wyoming transcript", "addr", s.e.Addr, "audio_bytes", sent, "wait", time.Since(start).Round(time.Millisecond))
	}
	text := strings.TrimSpace(*t.Text)
	if text == "" {
		return stt.Transcript{}, fmt.Errorf("stt wyoming: %s: %w", s.e.Addr, stt.ErrEmpty)
	}
	lang := t.Language
	if lang == "" {
		lang = s.e.Language
	}
	return stt.Transcript{Text: text, Confidence: -1, Language: lang}, nil
}

// readAnswer reads events until one of type want; the other types listed
// are skipped, an error event is the server's failure, any other type is
// a protocol error.
func readAnswer(r *bufio.Reader, want string, skip ...string) (wy.Event, error) {
	for range maxEvents {
		ev, err := wy.ReadEvent(r)
		switch {
		case errors.Is(err, io.EOF):
			return wy.Event{}, errors.New("the server closed the connection without answering")
		case err != nil:
			return wy.Event{}, timeoutErr(err)
		}
		switch {
		case ev.Type == want:
			return ev, nil
		case ev.Type == "error":
			var e struct {
				Text string `json:"text"`
				Code string `json:"code"`
			}
			ev.Decode(&e)
			return wy.Event{}, fmt.Errorf("the server says: %q (code %q)", e.Text, e.Code)
		}
		known := false
		for _, t := range skip {
			known = known || ev.Type == t
		}
		if !known {
			return wy.Event{}, fmt.Errorf("%w: unexpected %s event while waiting for %s", wy.ErrProtocol, ev.Type, want)
		}
	}
	return wy.Event{}, fmt.Errorf("%w: %d events without a %s", wy.ErrProtocol, maxEvents, want)
}

// timeoutErr names a network timeout as one.
func timeoutErr(err error) error {
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return fmt.Errorf("timed out: %w", err)
	}
	return err
}

// Abort implements stt.Session: it drops the connection (the server sees
// the utterance end without audio-stop) and waits for the sender.
func (s *Session) Abort() {
	s.mu.Lock()
	if !s.life.Abort() {
		s.mu.Unlock()
		return
	}
	s.closeQueue()
	s.mu.Unlock()
	s.conn.Close()
	<-s.done // the closed connection ends any write at once
}

// Info is what a server says it can do (the asr part of its info event).
type Info struct {
	ASR []Program `json:"asr"`
}

// Program is one speech recogniser a server offers.
type Program struct {
	Name        string  `json:"name"`
	Description string  `json:"description"`
	Installed   bool    `json:"installed"`
	Version     string  `json:"version"`
	Models      []Model `json:"models"`
}

// Model is one model of a Program.
type Model struct {
	Name      string   `json:"name"`
	Languages []string `json:"languages"`
	Installed bool     `json:"installed"`
}

// Describe asks the server what it offers (describe → info). An error
// names the address; a server that offers no speech recogniser is one.
func (e *Engine) Describe(ctx context.Context) (Info, error) {
	conn, err := e.dial(ctx)
	if err != nil {
		return Info{}, err
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(e.timeout()))
	stop := context.AfterFunc(ctx, func() { conn.SetDeadline(time.Unix(1, 0)) })
	defer stop()
	if err := wy.WriteEvent(conn, wy.Event{Type: "describe"}); err != nil {
		return Info{}, fmt.Errorf("stt wyoming: %s: %w", e.Addr, timeoutErr(err))
	}
	ev, err := readAnswer(bufio.NewReader(conn), "info")
	if err != nil {
		return Info{}, fmt.Errorf("stt wyoming: %s: describe: %w", e.Addr, err)
	}
	var info Info
	if err := ev.Decode(&info); err != nil {
		return Info{}, fmt.Errorf("stt wyoming: %s: %w", e.Addr, err)
	}
	if len(info.ASR) == 0 {
		return info, fmt.Errorf("stt wyoming: %s offers no speech recognition (its info has no asr)", e.Addr)
	}
	return info, nil
}
