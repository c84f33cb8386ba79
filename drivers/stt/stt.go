// Package stt turns a person's speech into text while they still speak
// (docs/hearing.md): an Engine starts one Session per utterance, the
// microphone hands it audio as it comes (Write), and the transcript is
// ready soon after the person stops (Finish).
//
// Engines live in subpackages named after what they talk to: wyoming (Home
// Assistant's Wyoming protocol over TCP), openai (an OpenAI-compatible
// /audio/transcriptions endpoint) and pocketsphinx (Debian's offline
// recogniser, run as a program). stttest is a fake for tests.
//
// # Errors
//
// A Session that heard nothing it could recognise ends with ErrEmpty,
// which is not a failure: the caller drops the utterance. Every other
// error is a failure of the engine and names it. A session whose bounded
// buffer overflowed fails at Finish with ErrOverflow; an aborted one with
// ErrAborted.
//
// # Concurrency
//
// An Engine is safe for concurrent use: sessions are independent. One
// Session is used by one goroutine (Write then Finish), except Abort,
// which may be called at any time from any goroutine, also while Finish
// waits (Finish then returns ErrAborted).
package stt

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"
)

// DefaultTimeout is how long a transcript may take after the audio ended.
const DefaultTimeout = 10 * time.Second

// DefaultMaxSeconds is the most audio one utterance may have for the
// engines that take it whole (longer fails with ErrOverflow).
const DefaultMaxSeconds = 30

// Engine starts recognitions.
type Engine interface {
	// Name names the engine in logs and errors.
	Name() string
	// Start begins one utterance whose audio comes at rate (Hz). It does
	// not block for long: any dial or program start is bounded by ctx and
	// the engine's timeout.
	Start(ctx context.Context, rate int) (Session, error)
}

// Session is one utterance being recognised. PCM given to it is mono
// s16 (host order int16) at the rate given to Start.
type Session interface {
	// Write hands over audio. It never blocks for long: audio is queued
	// in a bounded buffer, and a session whose buffer overflows fails at
	// Finish with ErrOverflow. An error means the session already failed
	// (the engine went away); the caller may stop writing.
	Write(pcm []int16) error
	// Finish says the utterance ended and waits for the transcript,
	// bounded by ctx and the engine's timeout. ErrEmpty when nothing was
	// recognised.
	Finish(ctx context.Context) (Transcript, error)
	// Abort drops the utterance (gating started, or the speaker was cut
	// off) and frees what the session holds. It is idempotent and safe
	// to call concurrently with Write and Finish.
	Abort()
}

// Warmer is an Engine whose server may load its model on its first
// utterance, which can take longer than an utterance's timeout
// (wyoming-faster-whisper loads it then). Warm sends a short silent
// utterance bounded by ctx alone, so that the model is loaded before a
// person speaks; nothing recognised is not a failure. `chorusd --doctor`
// warms the engine and says how long it took.
type Warmer interface {
	Warm(ctx context.Context, rate int) error
}

// ModelChecker is an Engine that can ask its server whether it has the
// model the engine was configured with (hearing.stt.model). CheckModel
// returns what it found ("" when no model is configured), or an error
// wrapping ErrUnknownModel naming the models the server has (other
// errors: the server could not be asked).
type ModelChecker interface {
	CheckModel(ctx context.Context) (string, error)
}

// Partials is a Session that tells what it has recognised so far while
// the person still speaks (Wyoming's transcript-chunk, OpenAI's
// transcript.text.delta, the offline recogniser's partial hypotheses).
// Partials returns a channel that holds the newest hypothesis not yet
// read: a newer one replaces it, none ever waits behind another, so a
// slow reader sees the latest and never holds the session up. The
// channel is closed when the session has finished or aborted. An engine
// whose server does not stream (a Wyoming server older than 1.7, an
// OpenAI-compatible endpoint that refuses stream) sends none: its
// channel closes with nothing in it, and the final Transcript is all.
type Partials interface {
	Partials() <-chan Partial
}

// Partial is a hypothesis of the utterance under way: the whole text so
// far (not the part that is new), which grows and may be revised until
// the final Transcript.
type Partial struct {
	Text string
}

// MaxPartialText bounds a hypothesis: what a server streams beyond it is
// not added (the final transcript still comes whole).
const MaxPartialText = 4096

// Growing is a hypothesis a server streams as the parts that are new
// (Wyoming's transcript-chunk, OpenAI's transcript.text.delta).
type Growing struct{ b []byte }

// Add appends part and returns the hypothesis so far, trimmed; a part
// that would take it past MaxPartialText is not added, and gives "".
func (g *Growing) Add(part string) string {
	if len(g.b)+len(part) > MaxPartialText {
		return ""
	}
	g.b = append(g.b, part...)
	return strings.TrimSpace(string(g.b))
}

// String is the text so far, as streamed.
func (g *Growing) String() string { return string(g.b) }

// Newest is a session's mailbox of hypotheses (Partials): Put never
// blocks and replaces a hypothesis not yet read; Close closes C once.
type Newest struct {
	mu     sync.Mutex
	c      chan Partial
	closed bool
}

// NewNewest is an empty mailbox.
func NewNewest() *Newest { return &Newest{c: make(chan Partial, 1)} }

// C is the channel Partials returns.
func (n *Newest) C() <-chan Partial { return n.c }

// Put offers p, replacing a hypothesis not yet read. After Close it does
// nothing.
func (n *Newest) Put(p Partial) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.closed {
		return
	}
	select {
	case <-n.c:
	default:
	}
	n.c <- p // the only sender, under the lock, into a drained buffer of one
}

// Close closes C (a hypothesis not yet read stays readable); it is
// idempotent.
func (n *Newest) Close() {
	n.mu.Lock()
	defer n.mu.Unlock()
	if !n.closed {
		n.closed = true
		close(n.c)
	}
}

// Transcript is what an engine heard.
type Transcript struct {
	Text       string
	Confidence float64 // 0..1, or -1 when the engine gives none
	Language   string  // BCP 47 or ISO 639-1 code as the engine gives it; "" when unknown
}

// Sentinel errors, returned wrapped.
var (
	// ErrEmpty says the engine recognised nothing (silence, noise): not a failure.
	ErrEmpty = errors.New("stt: nothing recognised")
	// ErrOverflow says more audio came than the session buffers.
	ErrOverflow = errors.New("stt: audio buffer overflowed")
	// ErrAborted says the session was aborted.
	ErrAborted = errors.New("stt: session aborted")
	// ErrRateLimited says the engine's server asked to slow down (HTTP
	// 429) past what a retry within the moment could wait for.
	ErrRateLimited = errors.New("stt: rate limited")
	// ErrFinished says Write or Finish came after Finish.
	ErrFinished = errors.New("stt: session already finished")
	// ErrUnknownModel says the engine's server does not list the model
	// the engine was configured with (ModelChecker).
	ErrUnknownModel = errors.New("stt: the server lists no model of that name")
)

// Lifecycle is what every Session keeps of its own life: finished once
// (Finish), aborted at any time (Abort), after which it takes no more
// audio. The session's own mutex guards it.
type Lifecycle struct{ aborted, finished bool }

// Done says why the session takes no more audio (ErrAborted,
// ErrFinished), or nil while it does.
func (l *Lifecycle) Done() error {
	switch {
	case l.aborted:
		return ErrAborted
	case l.finished:
		return ErrFinished
	}
	return nil
}

// Finish marks the session finished, or says why it cannot be (Done).
func (l *Lifecycle) Finish() error {
	if err := l.Done(); err != nil {
		return err
	}
	l.finished = true
	return nil
}

// Abort marks the session aborted; false when it already was.
func (l *Lifecycle) Abort() bool {
	was := l.aborted
	l.aborted = true
	return !was
}

// Aborted reports whether the session was aborted.
func (l *Lifecycle) Aborted() bool { return l.aborted }

// CheckRate refuses a sample rate no engine can use.
func CheckRate(rate int) error {
	if rate < 8000 || rate > 192000 {
		return fmt.Errorf("stt: sample rate %d Hz outside 8000..192000", rate)
	}
	return nil
}

// AppendLE16 appends pcm to b as little-endian 16-bit samples, the byte
// order every engine's wire format uses.
func AppendLE16(b []byte, pcm []int16) []byte {
	for _, s := range pcm {
		b = binary.LittleEndian.AppendUint16(b, uint16(s))
	}
	return b
}

// Queue is a session's bounded queue of what Write hands over, drained
// by the goroutine that sends it on: a push never blocks, and what does
// not fit marks the utterance overflowed (Finish then fails with
// ErrOverflow). The session's lock guards it; the sender ranges over C
// until Close.
type Queue[T any] struct {
	C        chan T
	closed   bool
	Overflow bool
}

// NewQueue is a queue of n.
func NewQueue[T any](n int) Queue[T] { return Queue[T]{C: make(chan T, n)} }

// Push queues v, or marks the queue overflowed when it is full.
func (q *Queue[T]) Push(v T) {
	select {
	case q.C <- v:
	default:
		q.Overflow = true
	}
}

// Close stops the sender taking more, once.
func (q *Queue[T]) Close() {
	if !q.closed {
		q.closed = true
		close(q.C)
	}
}
