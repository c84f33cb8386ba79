// Package speak is the body's voice: it answers "speak" queries by turning
// text into speech sentence by sentence and playing it, so the first
// sentence sounds while the rest is still being synthesized. The result
// comes when the audio has drained, with its duration. A newer speak cuts
// the one that is playing off cleanly.
//
// # Concurrency
//
// One utterance plays at a time. Handle may be called from many goroutines;
// each call cancels the one before it and waits for it to stop.
package speak

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/chorus-robotics/chorus/drivers/audio"
	"github.com/chorus-robotics/chorus/drivers/tts"
	"github.com/chorus-robotics/chorus/runtime/metrics"
	"github.com/chorus-robotics/chorus/runtime/sentence"
)

// DefaultMaxChars caps the text of one speak query.
const DefaultMaxChars = 2000

// Speaker answers speak queries.
type Speaker struct {
	TTS      tts.Engine
	Out      audio.Output
	MaxChars int
	Log      *slog.Logger
	Metrics  *metrics.Metrics
	// WholeText synthesizes the whole text in one call instead of sentence
	// by sentence: the slower path, kept to measure against.
	WholeText bool
	// OnFirstAudio, if set, is told how long the first PCM took to reach
	// the audio driver (for benchmarks).
	OnFirstAudio func(time.Duration)

	mu      sync.Mutex
	current *utterance
}

type utterance struct {
	cancel context.CancelFunc
	done   chan struct{}
}

// Request is the body of a speak query.
type Request struct {
	Message string `json:"message"`
	Emotion string `json:"emotion,omitempty"`
}

// Result is the body of a speak result.
type Result struct {
	DurationMs   int64  `json:"durationMs"`
	Sentences    int    `json:"sentences"`
	FirstAudioMs int64  `json:"firstAudioMs"`
	Engine       string `json:"engine"`
}

// ErrCutOff is the error of a speak that a newer one replaced.
var ErrCutOff = errors.New("speak: cut off by a newer speak")

// DecodeRequest decodes and checks a speak body.
func DecodeRequest(body json.RawMessage, maxChars int) (Request, error) {
	var r Request
	if len(body) == 0 {
		return r, errors.New("speak: body with a message is required")
	}
	dec := json.NewDecoder(strings.NewReader(string(body)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&r); err != nil {
		return r, fmt.Errorf("speak: bad body: %w", err)
	}
	if maxChars <= 0 {
		maxChars = DefaultMaxChars
	}
	switch n := utf8.RuneCountInString(r.Message); {
	case strings.TrimSpace(r.Message) == "":
		return r, errors.New("speak: message is empty")
	case n > maxChars:
		return r, fmt.Errorf("speak: message is %d characters, cap is %d", n, maxChars)
	}
	if _, err := tts.ProsodyOf(r.Emotion); err != nil {
		return r, fmt.Errorf("speak: %w", err)
	}
	return r, nil
}

// Handle is the query handler for "speak".
func (s *Speaker) Handle(ctx context.Context, from string, body json.RawMessage) (any, error) {
	req, err := DecodeRequest(body, s.MaxChars)
	if err != nil {
		return nil, err
	}
	return s.Say(ctx, req.Message, req.Emotion)
}

// Say speaks text, cutting off whatever is playing.
func (s *Speaker) Say(ctx context.Context, text, emotion string) (Result, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	me := &utterance{cancel: cancel, done: make(chan struct{})}
	defer close(me.done)
	s.mu.Lock()
	prev := s.current
	s.current = me
	s.mu.Unlock()
	if prev != nil {
		prev.cancel()
		<-prev.done // the old stream is aborted before the new one starts
	}
	defer func() {
		s.mu.Lock()
		if s.current == me {
			s.current = nil
		}
		s.mu.Unlock()
	}()
	res, err := s.play(ctx, text, emotion)
	if err != nil && ctx.Err() != nil {
		s.mu.Lock()
		replaced := s.current != me
		s.mu.Unlock()
		if replaced {
			return res, ErrCutOff
		}
	}
	return res, err
}

type chunk struct {
	pcm audio.PCM
	err error
}

func (s *Speaker) play(ctx context.Context, text, emotion string) (Result, error) {
	start := time.Now()
	sentences := sentence.Split(text)
	if s.WholeText {
		sentences = []string{strings.Join(sentences, " ")}
	}
	res := Result{Sentences: len(sentences), Engine: s.TTS.Name()}
	st, err := s.Out.Begin(ctx, firstWords(text))
	if err != nil {
		return res, fmt.Errorf("speak: audio output: %w", err)
	}
	// Synthesize ahead on one goroutine; play on this one.
	pcm := make(chan chunk, 1)
	synthCtx, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		defer close(pcm)
		for _, sentence := range sentences {
			p, err := s.TTS.Synthesize(synthCtx, sentence, emotion)
			if errors.Is(err, tts.ErrEmpty) {
				continue
			}
			select {
			case pcm <- chunk{p, err}:
			case <-synthCtx.Done():
				return
			}
			if err != nil {
				return
			}
		}
	}()
	defer wg.Wait()
	defer stop()
	first := true
	for c := range pcm {
		if c.err != nil {
			st.Abort()
			return res, fmt.Errorf("speak: %w", c.err)
		}
		if err := st.Write(ctx, c.pcm); err != nil {
			st.Abort()
			return res, fmt.Errorf("speak: audio output: %w", err)
		}
		if first {
			first = false
			d := time.Since(start)
			res.FirstAudioMs = d.Milliseconds()
			if s.Metrics != nil {
				s.Metrics.FirstAudio.Observe(d.Seconds())
			}
			if s.OnFirstAudio != nil {
				s.OnFirstAudio(d)
			}
		}
	}
	if err := ctx.Err(); err != nil {
		st.Abort()
		return res, err
	}
	d, err := st.Drain(ctx)
	if err != nil {
		return res, fmt.Errorf("speak: audio output: %w", err)
	}
	res.DurationMs = d.Milliseconds()
	return res, nil
}

func firstWords(s string) string {
	r := []rune(s)
	if len(r) > 24 {
		r = r[:24]
	}
	return string(r)
}
