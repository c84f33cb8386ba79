// Package wyoming recognises speech with a Wyoming server (Home
// Assistant's voice protocol, spec in rhasspy/wyoming's README): one TCP
// connection per utterance, audio streamed while the person speaks.
//
// The exchange: the client sends transcribe {language?, name?},
// audio-start {rate, width, channels}, one audio-chunk {rate, width,
// channels} + PCM per Write, audio-stop; the server answers transcript
// {text, language?} (an error event {text, code?} is a failure). Describe
// sends describe and reads info, for the doctor. Every event goes through
// one strict reader and writer (drivers/wyoming). Event types the client
// does not wait for are skipped (logged at debug), as the reference
// clients skip them: a vendor's own.
//
// # Partial transcripts
//
// A Wyoming 1.7 server that streams (its info's asr program says
// supports_transcript_streaming) sends transcript-start, then
// transcript-chunk {text} events — each the part of the transcript that
// is new — while the audio still comes, and after audio-stop the whole
// transcript and transcript-stop. The session reads the server's events
// from its start, on a goroutine of its own, so each chunk grows the
// hypothesis the session's Partials channel holds while the person
// speaks; an older server sends no chunks and works as before. A chunk
// without a text string is skipped; a hypothesis stops growing at
// stt.MaxPartialText.
//
// # The model's name
//
// Model (hearing.stt.model) is sent as transcribe's name only when the
// server's info lists a model of exactly that name among its asr
// programs' models; otherwise transcribe goes without a name and the
// server uses its own model, and a warning says so once. A name means
// different things to different servers: wyoming-faster-whisper ignores
// it, wyoming-vosk loads the model of that name and, given one it lacks,
// fails inside its handler and leaves the connection open without an
// answer. The info is asked once, on a connection of its own, before the
// first utterance that would send a name (again after a failure, at most
// once a minute; while it is not known, no name is sent). CheckModel says
// the same for `chorusd --doctor`.
//
// # Timeouts
//
// Timeout bounds each write and the wait for the transcript after
// audio-stop. A server that has stopped answering is found sooner:
// AfterStop bounds the wait for its first event after audio-stop (any
// event; after it the wait is Timeout's). Zero derives it:
// DefaultAfterStop plus the utterance's length (a server that recognises
// slower than real time on top of 5 s is too slow for a conversation),
// never more than Timeout. A server that loads its model on its first
// utterance (wyoming-faster-whisper) may need longer than Timeout for it:
// Warm sends half a second of silence bounded by its ctx alone, which
// `chorusd --doctor` does and reports.
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
// An Engine is safe for concurrent use. Each Session owns two
// goroutines: one drains its bounded queue of chunks onto the connection,
// one reads the server's events; both have ended when Finish or Abort
// returns.
package wyoming

import (
	"bufio"
	"context"
	"errors"
	"fmt"
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
	DefaultDialTimeout = wy.DefaultDialTimeout
	DefaultTimeout     = 15 * time.Second // from audio-stop to transcript; also bounds each write
	DefaultAfterStop   = 5 * time.Second  // plus the utterance's length: from audio-stop to the server's first event
	DefaultMaxQueue    = 256              // chunks (about 5 s of 20 ms frames)
	maxEvents          = 1000             // events read while waiting for one answer
	describeTimeout    = 3 * time.Second  // the describe before the first utterance that sends a model's name
	describeRetry      = time.Minute      // after a describe that failed
	warmTimeout        = 10 * time.Minute // Warm's bound when its ctx has none
)

// Engine talks to one Wyoming STT server.
type Engine struct {
	Addr        string        // host:port, e.g. "127.0.0.1:10300" (wyoming-faster-whisper's default)
	Language    string        // sent in transcribe; "" lets the server choose
	Model       string        // sent as transcribe's name when the server lists it (package doc); "" for the server's own
	DialTimeout time.Duration // default DefaultDialTimeout
	Timeout     time.Duration // default DefaultTimeout
	// AfterStop bounds the wait for the server's first event after
	// audio-stop; 0 derives it (DefaultAfterStop plus the utterance's
	// length); never more than Timeout.
	AfterStop time.Duration
	MaxQueue  int // chunks waiting to be sent; default DefaultMaxQueue
	Log       *slog.Logger

	mu         sync.Mutex
	modelKnown bool      // the server's info was read: sendModel holds
	sendModel  bool      // Model is among the server's models
	modelTried time.Time // the last describe that failed
}

var (
	_ stt.Engine       = (*Engine)(nil)
	_ stt.Warmer       = (*Engine)(nil)
	_ stt.ModelChecker = (*Engine)(nil)
)

// Name implements stt.Engine.
func (e *Engine) Name() string { return "wyoming" }

func (e *Engine) timeout() time.Duration {
	if e.Timeout > 0 {
		return e.Timeout
	}
	return DefaultTimeout
}

func (e *Engine) log() *slog.Logger {
	if e.Log == nil {
		return slog.New(slog.DiscardHandler)
	}
	return e.Log
}

// skipped logs an event skipped while waiting for another.
func (e *Engine) skipped(want string) func(wy.Event) {
	return func(ev wy.Event) {
		e.log().Debug("wyoming: skipped an event the client does not wait for", "addr", e.Addr, "type", ev.Type, "waiting_for", want)
	}
}

// modelName is transcribe's name: Model when the server lists it, ""
// otherwise or while that is not known (package doc).
func (e *Engine) modelName(ctx context.Context) string {
	if e.Model == "" {
		return ""
	}
	e.mu.Lock()
	known, send, tried := e.modelKnown, e.sendModel, e.modelTried
	e.mu.Unlock()
	if known {
		return name(send, e.Model)
	}
	if !tried.IsZero() && time.Since(tried) < describeRetry {
		return ""
	}
	info, err := e.describe(ctx, min(describeTimeout, e.timeout()))
	if err != nil {
		e.mu.Lock()
		e.modelTried = time.Now()
		e.mu.Unlock()
		e.log().Warn("wyoming: the server's models could not be read; transcribe goes without hearing.stt.model's name until they can",
			"addr", e.Addr, "model", e.Model, "err", err, "retry_in", describeRetry)
		return ""
	}
	send, models := e.learn(info)
	if !send {
		e.log().Warn("wyoming: hearing.stt.model is not a model the server lists: it is not sent, the server uses its own",
			"addr", e.Addr, "model", e.Model, "server_models", strings.Join(models, ", "))
	}
	return name(send, e.Model)
}

func name(send bool, model string) string {
	if send {
		return model
	}
	return ""
}

// learn notes whether info lists Model, and returns every model it lists.
func (e *Engine) learn(info wy.Info) (bool, []string) {
	var models []string
	listed := false
	for _, p := range info.ASR {
		for _, m := range p.Models {
			models = append(models, m.Name)
			listed = listed || m.Name == e.Model
		}
	}
	e.mu.Lock()
	e.modelKnown, e.sendModel = true, listed
	e.mu.Unlock()
	return listed, models
}

// CheckModel implements stt.ModelChecker: whether the server lists
// Model, so that it is sent (package doc); stt.ErrUnknownModel when it
// does not. "" and no error when no model is configured.
func (e *Engine) CheckModel(ctx context.Context) (string, error) {
	if e.Model == "" {
		return "", nil
	}
	info, err := e.describe(ctx, e.timeout())
	if err != nil {
		return "", err
	}
	listed, models := e.learn(info)
	if !listed {
		return "", fmt.Errorf("stt wyoming: %s lists no model %q (it lists: %s): transcribe goes without it and the server uses its own: %w",
			e.Addr, e.Model, strings.Join(models, ", "), stt.ErrUnknownModel)
	}
	return fmt.Sprintf("model %q: the server lists it; sent in transcribe", e.Model), nil
}

func (e *Engine) dial(ctx context.Context) (net.Conn, error) {
	return wy.Dial(ctx, "stt wyoming", e.Addr, e.DialTimeout)
}

type transcribe struct {
	Language string `json:"language,omitempty"`
	Name     string `json:"name,omitempty"`
}

// Start implements stt.Engine: it connects and sends transcribe and
// audio-start.
func (e *Engine) Start(ctx context.Context, rate int) (stt.Session, error) {
	return e.start(ctx, rate, e.timeout(), e.AfterStop)
}

// Warm implements stt.Warmer: half a second of silence, bounded by ctx
// alone (10 minutes when it has no deadline), so that a server that loads
// its model on its first utterance loads it now. Nothing recognised is
// not a failure.
func (e *Engine) Warm(ctx context.Context, rate int) error {
	timeout := warmTimeout
	if dl, ok := ctx.Deadline(); ok {
		timeout = max(time.Until(dl), time.Millisecond)
	}
	s, err := e.start(ctx, rate, timeout, timeout)
	if err != nil {
		return err
	}
	if err := s.Write(make([]int16, rate/2)); err != nil {
		s.Abort()
		return err
	}
	if _, err := s.Finish(ctx); err != nil && !errors.Is(err, stt.ErrEmpty) {
		return err
	}
	return nil
}

func (e *Engine) start(ctx context.Context, rate int, timeout, afterStop time.Duration) (*Session, error) {
	if err := stt.CheckRate(rate); err != nil {
		return nil, err
	}
	model := e.modelName(ctx)
	conn, err := e.dial(ctx)
	if err != nil {
		return nil, err
	}
	format := wy.Mono16(rate)
	if err := wy.Start(conn, "transcribe", transcribe{e.Language, model}, format, timeout); err != nil {
		return nil, fmt.Errorf("stt wyoming: %s: %w", e.Addr, err)
	}
	max := e.MaxQueue
	if max <= 0 {
		max = DefaultMaxQueue
	}
	s := &Session{e: e, conn: conn, format: format, timeout: timeout, afterStop: afterStop,
		q: stt.NewQueue[[]byte](max), done: make(chan struct{}), answered: make(chan struct{}), partials: stt.NewNewest()}
	go s.send()
	go s.read()
	return s, nil
}

// Session is one utterance on one connection.
type Session struct {
	e         *Engine
	conn      net.Conn
	format    wy.Audio
	timeout   time.Duration // each write; the transcript after audio-stop
	afterStop time.Duration // the first event after audio-stop; 0: derived
	done      chan struct{} // closed when send returns
	answered  chan struct{} // closed when read returns
	partials  *stt.Newest   // the hypotheses read grows from transcript-chunks
	soFar     stt.Growing   // the chunks' text so far; read's alone

	dmu sync.Mutex // guards the read deadline against ctx's cut
	cut bool       // ctx ended: the deadline stays in the past

	mu        sync.Mutex
	q         stt.Queue[[]byte] // closed by Finish or Abort, under mu
	life      stt.Lifecycle     // finished, aborted
	sendErr   error
	sent      int       // bytes of PCM written
	stopped   time.Time // audio-stop was sent
	heard     bool      // an event came after audio-stop
	answer    wy.Event  // read's result: the transcript event,
	answerErr error     // or why there is none
}

var (
	_ stt.Session  = (*Session)(nil)
	_ stt.Partials = (*Session)(nil)
)

// Partials implements stt.Partials: a Wyoming 1.7 server that streams
// (its info says supports_transcript_streaming) sends transcript-chunk
// events while the audio still comes; each grows the hypothesis. An
// older server sends none.
func (s *Session) Partials() <-chan stt.Partial { return s.partials.C() }

// read is the session's reader, from the start: it reads the server's
// events while the audio is sent — transcript-chunks become hypotheses as
// they come — until the transcript, an error event or the connection's
// end, and leaves that for Finish. Before audio-stop nothing bounds the
// read but the connection (Finish and Abort end it).
func (s *Session) read() {
	defer close(s.answered)
	defer s.partials.Close()
	ev, err := wy.ReadAnswer(bufio.NewReader(s.conn), "transcript", maxEvents, s.event)
	s.mu.Lock()
	s.answer, s.answerErr = ev, err
	s.mu.Unlock()
}

// event takes an event that came before the transcript: the first after
// audio-stop gives the transcript Timeout's wait from audio-stop, a
// transcript-chunk grows the hypothesis, transcript-start is the stream's
// opening, anything else is skipped.
func (s *Session) event(ev wy.Event) {
	s.mu.Lock()
	if !s.stopped.IsZero() && !s.heard {
		s.heard = true
		s.readDeadline(s.stopped.Add(s.timeout))
	}
	s.mu.Unlock()
	switch ev.Type {
	case "transcript-chunk":
		var c struct {
			Text *string `json:"text"`
		}
		if err := ev.Decode(&c); err != nil || c.Text == nil {
			s.e.log().Debug("wyoming: a transcript-chunk without a text string; skipped", "addr", s.e.Addr)
			return
		}
		if text := s.soFar.Add(*c.Text); text != "" {
			s.partials.Put(stt.Partial{Text: text})
		}
	case "transcript-start":
	default:
		s.e.skipped("transcript")(ev)
	}
}

// send is the session's goroutine: it writes queued chunks as audio-chunk
// events until the queue is closed.
func (s *Session) send() {
	defer close(s.done)
	for payload := range s.q.C {
		s.mu.Lock()
		failed := s.sendErr != nil
		s.mu.Unlock()
		if failed {
			continue // drain
		}
		err := wy.WriteChunk(s.conn, s.format, payload, s.timeout)
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
	for len(pcm) > 0 && !s.q.Overflow {
		n := min(len(pcm), s.format.Rate)
		s.q.Push(stt.AppendLE16(make([]byte, 0, 2*n), pcm[:n]))
		pcm = pcm[n:]
	}
	return nil
}

// Finish implements stt.Session: it waits for the queued chunks to go
// out, sends audio-stop and waits for the transcript.
func (s *Session) Finish(ctx context.Context) (stt.Transcript, error) {
	s.mu.Lock()
	if err := s.life.Finish(); err != nil {
		s.mu.Unlock()
		return stt.Transcript{}, err
	}
	s.q.Close()
	s.mu.Unlock()
	defer func() {
		s.conn.Close()
		<-s.answered // the closed connection ends the read at once
	}()

	// The timeouts bound the wait; ctx ends it sooner through AfterFunc,
	// after ctx.Err() is set, so the error names ctx.
	s.conn.SetDeadline(time.Now().Add(s.timeout))
	stop := context.AfterFunc(ctx, func() {
		s.dmu.Lock()
		s.cut = true
		s.conn.SetDeadline(time.Unix(1, 0))
		s.dmu.Unlock()
	})
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
	overflow, sendErr, sent := s.q.Overflow, s.sendErr, s.sent
	s.mu.Unlock()
	if overflow {
		return stt.Transcript{}, fmt.Errorf("stt wyoming: %s: more than %d chunks waited to be sent: %w", s.e.Addr, cap(s.q.C), stt.ErrOverflow)
	}
	if sendErr != nil {
		return stt.Transcript{}, fmt.Errorf("stt wyoming: %s: sending audio: %w", s.e.Addr, timeoutErr(sendErr))
	}
	stopEv, _ := wy.NewEvent("audio-stop", nil, nil)
	if err := wy.WriteEvent(s.conn, stopEv); err != nil {
		return stt.Transcript{}, fmt.Errorf("stt wyoming: %s: %w", s.e.Addr, timeoutErr(err))
	}
	start := time.Now()
	// The server's first event must come within the after-stop wait;
	// after it, the transcript within Timeout of audio-stop (event).
	wait := s.afterStopWait(sent)
	s.mu.Lock()
	s.stopped = start
	s.readDeadline(start.Add(wait))
	s.mu.Unlock()
	<-s.answered
	s.mu.Lock()
	ev, err, heard := s.answer, s.answerErr, s.heard
	s.mu.Unlock()
	if err != nil {
		if isTimeout(err) && !heard && wait < s.timeout && ctx.Err() == nil {
			return stt.Transcript{}, fmt.Errorf("stt wyoming: %s: timed out: no answer within %v of audio-stop (%v of audio): the server stopped answering (a Wyoming server whose handler failed leaves the connection open; its log says why): %w",
				s.e.Addr, wait.Round(time.Millisecond), s.duration(sent).Round(time.Millisecond), err)
		}
		return stt.Transcript{}, fmt.Errorf("stt wyoming: %s: waiting for the transcript: %w", s.e.Addr, timeoutErr(err))
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

// afterStopWait is the wait for the server's first event after
// audio-stop, for an utterance of sent bytes.
func (s *Session) afterStopWait(sent int) time.Duration {
	w := s.afterStop
	if w <= 0 {
		w = DefaultAfterStop + s.duration(sent)
	}
	return min(w, s.timeout)
}

// duration is how long sent bytes of the session's audio last.
func (s *Session) duration(sent int) time.Duration {
	return time.Duration(sent/2) * time.Second / time.Duration(s.format.Rate)
}

// readDeadline moves the read deadline, unless ctx has cut it.
func (s *Session) readDeadline(t time.Time) {
	s.dmu.Lock()
	defer s.dmu.Unlock()
	if !s.cut {
		s.conn.SetReadDeadline(t)
	}
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// timeoutErr names a network timeout as one.
func timeoutErr(err error) error {
	if isTimeout(err) {
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
	s.q.Close()
	s.mu.Unlock()
	s.conn.Close()
	<-s.done // the closed connection ends any write at once
	<-s.answered
}

// Info is what a server says it offers (its info event: drivers/wyoming).
type Info = wy.Info

// Program is one speech recogniser a server offers.
type Program = wy.Program

// Model is one model of a Program.
type Model = wy.Model

// Describe asks the server what it offers (describe → info). An error
// names the address; a server that offers no speech recogniser is one.
func (e *Engine) Describe(ctx context.Context) (Info, error) {
	info, err := e.describe(ctx, e.timeout())
	if err != nil {
		return info, err
	}
	if len(info.ASR) == 0 {
		return info, fmt.Errorf("stt wyoming: %s offers no speech recognition (its info has no asr)", e.Addr)
	}
	return info, nil
}

// describe is describe → info on a connection of its own, within timeout.
func (e *Engine) describe(ctx context.Context, timeout time.Duration) (Info, error) {
	conn, err := e.dial(ctx)
	if err != nil {
		return Info{}, err
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(timeout))
	stop := context.AfterFunc(ctx, func() { conn.SetDeadline(time.Unix(1, 0)) })
	defer stop()
	info, err := wy.Describe(conn, maxEvents, e.skipped("info"))
	if err != nil {
		return Info{}, fmt.Errorf("stt wyoming: %s: describe: %w", e.Addr, timeoutErr(err))
	}
	return info, nil
}
