// Package pocketsphinx recognises speech offline with Debian's
// pocketsphinx_continuous (packages pocketsphinx, pocketsphinx-en-us;
// version 0.8+5prealpha), run as a program.
//
// # Streaming
//
// The program is started at Start, so its models load while the person
// speaks, with `-infile /dev/stdin`: raw 16 kHz mono s16le read from a
// pipe (a name without ".wav" is read as raw). Audio is written to the
// pipe as Write hands it over, through a bounded queue drained by the
// session's goroutine, and pocketsphinx decodes it as it comes. Finish
// closes the pipe; the program prints its hypothesis and exits. Audio at
// another rate is resampled to 16 kHz (linear, chunk by chunk).
//
// # Output
//
// On stdout the program prints one line per speech segment its VAD found
// (nothing for silence): the words, lower case, separated by spaces. The
// transcript is those lines joined. Its log (INFO lines) goes to stderr;
// the last ERROR line, or the last line, is quoted when it fails.
//
// # Partial hypotheses
//
// The program prints a segment's line as soon as its own VAD ends the
// segment (half a second into a pause; the line comes about 0.7 s after
// the speech stopped: later than the ear's default hangover, so with
// pocketsphinx the words hold only pauses the hangover has not yet ended —
// raise hearing.vad.hangover to 0.9 s for them), while the rest of the utterance is
// still being fed: each line grows the session's hypothesis
// (stt.Partials) — what the person said before each pause, before they
// finished.
//
// # Accuracy
//
// The default en-us language model is poor on synthetic and distant
// speech (espeak-ng's "hello robots what is the weather like today" came
// back as "are what is it went on to you"); with a JSGF grammar
// (Grammar) or a keyword list (Keywords) the same audio comes back word
// for word. Use one in demos and tests. The engine gives no confidence
// (Transcript.Confidence is -1).
//
// # Concurrency
//
// An Engine is safe for concurrent use; each Session runs its own
// process (about 40 MB and one core while it decodes) and owns two
// goroutines: one feeds the pipe, one waits for the process. Both end
// by the time Finish or Abort returns.
package pocketsphinx

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os/exec"
	"strings"
	"sync"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/chorus-robotics/chorus/drivers/audio"
	"github.com/chorus-robotics/chorus/drivers/internal/proc"
	"github.com/chorus-robotics/chorus/drivers/stt"
)

// Defaults.
const (
	DefaultBinary     = "pocketsphinx_continuous"
	DefaultTimeout    = stt.DefaultTimeout
	DefaultMaxSeconds = stt.DefaultMaxSeconds
	DefaultMaxQueue   = 512   // chunks waiting for the pipe
	Rate              = 16000 // what the en-us acoustic model wants
	maxOutput         = 64 << 10
)

// Engine is pocketsphinx_continuous. Empty paths use the program's
// compiled-in defaults (Debian: /usr/share/pocketsphinx/model/en-us/).
type Engine struct {
	Binary     string        // default "pocketsphinx_continuous"
	HMM        string        // -hmm: acoustic model directory
	Dict       string        // -dict: pronunciation dictionary
	LM         string        // -lm: language model (unused with Grammar or Keywords)
	Grammar    string        // -jsgf: a JSGF grammar file; the words must be in Dict
	Keywords   string        // -kws: a keyphrase file, one per line
	Language   string        // reported in transcripts; default "en"
	Timeout    time.Duration // default DefaultTimeout
	MaxSeconds int           // default DefaultMaxSeconds; more audio fails with stt.ErrOverflow
	Log        *slog.Logger
}

var _ stt.Engine = (*Engine)(nil)

// Name implements stt.Engine.
func (e *Engine) Name() string { return "pocketsphinx" }

// Args is the program's command line after its name.
func (e *Engine) Args() ([]string, error) {
	if e.Grammar != "" && e.Keywords != "" {
		return nil, errors.New("stt pocketsphinx: a grammar or a keyword list, not both")
	}
	// The program's own segment pause (-vad_postspeech) stays its default,
	// half a second: a shorter one splits a sentence at its punctuation's
	// pause (espeak-ng's "Hello everyone! What…" at 340 ms), and a grammar
	// of whole sentences then matches neither part.
	args := []string{"-infile", "/dev/stdin", "-samprate", "16000"}
	for _, o := range []struct{ flag, v string }{{"-hmm", e.HMM}, {"-dict", e.Dict}, {"-lm", e.LM}, {"-jsgf", e.Grammar}, {"-kws", e.Keywords}} {
		if o.v != "" {
			args = append(args, o.flag, o.v)
		}
	}
	return args, nil
}

// Start implements stt.Engine: it starts the program.
func (e *Engine) Start(ctx context.Context, rate int) (stt.Session, error) {
	if err := stt.CheckRate(rate); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("stt pocketsphinx: %w", err)
	}
	args, err := e.Args()
	if err != nil {
		return nil, err
	}
	bin := e.Binary
	if bin == "" {
		bin = DefaultBinary
	}
	path, err := exec.LookPath(bin)
	if err != nil {
		return nil, fmt.Errorf("stt pocketsphinx: program %q not found (apt-get install pocketsphinx pocketsphinx-en-us): %w", bin, err)
	}
	cmd, _ := proc.Command(append([]string{path}, args...))
	stderr := &errTail{}
	cmd.Stderr = stderr
	partials := stt.NewNewest()
	out := &limitBuffer{max: maxOutput, line: func(soFar []byte) {
		if text, err := ParseOutput(soFar); err == nil && text != "" && len(text) <= stt.MaxPartialText {
			partials.Put(stt.Partial{Text: text})
		}
	}}
	cmd.Stdout = out
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, fmt.Errorf("stt pocketsphinx: %w", err)
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("stt pocketsphinx: start %s: %w", path, err)
	}
	maxSec := e.MaxSeconds
	if maxSec <= 0 {
		maxSec = DefaultMaxSeconds
	}
	s := &Session{
		e: e, bin: bin, rate: rate, cmd: cmd, stdin: stdin, stdout: out, stderr: stderr, partials: partials,
		maxSamples: maxSec * rate,
		q:          stt.NewQueue[[]int16](DefaultMaxQueue),
		fed:        make(chan struct{}),
		exited:     make(chan struct{}),
		started:    time.Now(),
	}
	go s.feed()
	go s.wait()
	return s, nil
}

// Session is one utterance in one process.
type Session struct {
	e          *Engine
	bin        string
	rate       int
	cmd        *exec.Cmd
	stdin      io.WriteCloser
	stdout     *limitBuffer
	stderr     *errTail
	partials   *stt.Newest // grown by stdout's lines as they come
	maxSamples int
	started    time.Time

	fed     chan struct{} // closed when feed returns (stdin closed)
	exited  chan struct{} // closed when wait returns
	waitErr error         // set before exited is closed

	mu       sync.Mutex
	q        stt.Queue[[]int16] // closed under mu
	life     stt.Lifecycle      // finished, aborted
	inputEnd bool               // feed closed stdin on purpose: an exit before it is a crash
	feedErr  error
	samples  int
}

var (
	_ stt.Session  = (*Session)(nil)
	_ stt.Partials = (*Session)(nil)
)

// Partials implements stt.Partials: the lines the program printed so far
// (package doc).
func (s *Session) Partials() <-chan stt.Partial { return s.partials.C() }

// feed is the goroutine that writes the queue to the program's stdin.
func (s *Session) feed() {
	defer close(s.fed)
	var buf []byte
	for pcm := range s.q.C {
		s.mu.Lock()
		failed := s.feedErr != nil
		s.mu.Unlock()
		if failed {
			continue
		}
		if s.rate != Rate {
			pcm = audio.Resample(audio.PCM{Rate: s.rate, Samples: pcm}, Rate).Samples
		}
		buf = stt.AppendLE16(buf[:0], pcm)
		if _, err := s.stdin.Write(buf); err != nil {
			s.mu.Lock()
			s.feedErr = err
			s.mu.Unlock()
		}
	}
	s.mu.Lock()
	s.inputEnd = true
	s.mu.Unlock()
	s.stdin.Close()
}

// wait is the goroutine that waits for the program to exit.
func (s *Session) wait() {
	err := s.cmd.Wait() // stdout's last line has been written
	s.partials.Close()
	s.mu.Lock()
	if !s.inputEnd && err == nil {
		err = errors.New("exited before the end of the audio")
	}
	s.mu.Unlock()
	s.waitErr = err
	close(s.exited)
}

func (s *Session) died() error {
	select {
	case <-s.exited:
		return s.failure("the program died mid-stream", s.waitErr)
	default:
		return nil
	}
}

func (s *Session) failure(what string, err error) error {
	return fmt.Errorf("stt pocketsphinx: %s: %s: %w%s", s.bin, what, err, s.stderr.Suffix())
}

// Write implements stt.Session.
func (s *Session) Write(pcm []int16) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.life.Done(); err != nil {
		return err
	}
	if err := s.died(); err != nil {
		return err
	}
	if s.q.Overflow || len(pcm) == 0 {
		return nil
	}
	s.samples += len(pcm)
	if s.samples > s.maxSamples {
		s.q.Overflow = true
		return nil
	}
	s.q.Push(append([]int16(nil), pcm...))
	return nil
}

// Finish implements stt.Session: it ends the audio and waits for the
// program's answer.
func (s *Session) Finish(ctx context.Context) (stt.Transcript, error) {
	s.mu.Lock()
	if err := s.life.Finish(); err != nil {
		s.mu.Unlock()
		return stt.Transcript{}, err
	}
	overflow := s.q.Overflow
	s.q.Close()
	s.mu.Unlock()
	if overflow {
		s.kill()
		return stt.Transcript{}, fmt.Errorf("stt pocketsphinx: more than %d s of audio, or the program fell behind: %w", s.maxSamples/s.rate, stt.ErrOverflow)
	}
	end := time.Now()
	timeout := s.e.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case <-s.exited:
	case <-t.C:
		s.kill()
		return stt.Transcript{}, s.failure("no transcript", fmt.Errorf("timed out after %v", timeout))
	case <-ctx.Done():
		s.kill()
		return stt.Transcript{}, fmt.Errorf("stt pocketsphinx: waiting for the transcript: %w", ctx.Err())
	}
	<-s.fed
	s.mu.Lock()
	aborted, feedErr := s.life.Aborted(), s.feedErr
	s.mu.Unlock()
	switch {
	case aborted:
		return stt.Transcript{}, stt.ErrAborted
	case s.waitErr != nil:
		return stt.Transcript{}, s.failure("the program failed", s.waitErr)
	case feedErr != nil:
		return stt.Transcript{}, s.failure("feeding audio", feedErr)
	case s.stdout.over:
		return stt.Transcript{}, fmt.Errorf("stt pocketsphinx: more than %d bytes of output", maxOutput)
	}
	text, err := ParseOutput(s.stdout.b.Bytes())
	if err != nil {
		return stt.Transcript{}, fmt.Errorf("stt pocketsphinx: %w", err)
	}
	if s.e.Log != nil {
		s.e.Log.Debug("pocketsphinx transcript", "audio", time.Duration(s.samples)*time.Second/time.Duration(s.rate),
			"after_end", time.Since(end).Round(time.Millisecond), "since_start", time.Since(s.started).Round(time.Millisecond))
	}
	if text == "" {
		return stt.Transcript{}, fmt.Errorf("stt pocketsphinx: %w", stt.ErrEmpty)
	}
	lang := s.e.Language
	if lang == "" {
		lang = "en"
	}
	return stt.Transcript{Text: text, Confidence: -1, Language: lang}, nil
}

// kill ends the program and both goroutines, and waits for them.
func (s *Session) kill() {
	s.mu.Lock()
	s.q.Close()
	s.mu.Unlock()
	select {
	case <-s.exited:
	default:
		proc.Kill(s.cmd) // before Wait returned: the pid is still ours
	}
	<-s.exited
	<-s.fed // stdin's reader is gone: a blocked write fails
}

// Abort implements stt.Session: it kills the program.
func (s *Session) Abort() {
	s.mu.Lock()
	if !s.life.Abort() {
		s.mu.Unlock()
		return
	}
	s.mu.Unlock()
	s.kill()
}

// ParseOutput reads the program's stdout: one hypothesis per line, words
// of letters, digits, apostrophes, hyphens, dots and underscores
// separated by spaces. A log line or a control character is an error
// (the log must not leak into the transcript); no lines is "".
func ParseOutput(b []byte) (string, error) {
	if !utf8.Valid(b) {
		return "", errors.New("output is not UTF-8")
	}
	var words []string
	for line := range strings.Lines(string(b)) {
		line = strings.TrimRight(line, "\r\n")
		for _, prefix := range []string{"INFO:", "ERROR:", "WARN:", "WARNING:", "FATAL"} {
			if strings.HasPrefix(line, prefix) {
				return "", fmt.Errorf("a log line on stdout: %q", clip(line))
			}
		}
		for _, w := range strings.Fields(line) {
			for _, r := range w {
				if !(unicode.IsLetter(r) || unicode.IsDigit(r) || strings.ContainsRune("'-._", r)) {
					return "", fmt.Errorf("unexpected %q in the hypothesis %q", r, clip(line))
				}
			}
			words = append(words, w)
		}
	}
	return strings.Join(words, " "), nil
}

func clip(s string) string {
	if len(s) > 80 {
		return s[:80] + "…"
	}
	return s
}

// limitBuffer keeps at most max bytes and notes that more came; line
// hears what it holds up to its last line's end each time a line ends.
type limitBuffer struct {
	b    bytes.Buffer
	max  int
	over bool
	line func(soFar []byte)
}

func (l *limitBuffer) Write(p []byte) (int, error) {
	n := len(p)
	if room := l.max - l.b.Len(); len(p) > room {
		l.over = true
		p = p[:max(room, 0)]
	}
	l.b.Write(p)
	if l.line != nil && bytes.IndexByte(p, '\n') >= 0 {
		b := l.b.Bytes()
		l.line(b[:bytes.LastIndexByte(b, '\n')+1])
	}
	return n, nil
}

// errTail keeps the last ERROR line of pocketsphinx's log, or else its
// last line (512 bytes of it).
type errTail struct {
	mu              sync.Mutex
	cur             []byte
	lastErr, lastLn string
}

func (t *errTail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, c := range p {
		if c != '\n' {
			if len(t.cur) < 512 {
				t.cur = append(t.cur, c)
			}
			continue
		}
		if line := strings.TrimSpace(string(t.cur)); line != "" {
			t.lastLn = line
			if strings.HasPrefix(line, "ERROR") || strings.HasPrefix(line, "FATAL") {
				t.lastErr = line
			}
		}
		t.cur = t.cur[:0]
	}
	return len(p), nil
}

// Suffix is ` (stderr: "…")` for an error message, or empty.
func (t *errTail) Suffix() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	s := t.lastErr
	if s == "" {
		s = t.lastLn
		if c := strings.TrimSpace(string(t.cur)); c != "" {
			s = c
		}
	}
	if s == "" {
		return ""
	}
	return fmt.Sprintf(" (stderr: %q)", s)
}
