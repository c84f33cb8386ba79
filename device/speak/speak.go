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
	"github.com/chorus-robotics/chorus/runtime/protocol"
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
	// MaxHold bounds how long a held speak waits for its start (default
	// DefaultMaxHold): a companion that never starts it holds nothing up.
	MaxHold time.Duration
	// OnVoice, if set, is told when an utterance's audio starts (just
	// before its first samples go to the audio output) and when it ends
	// (drained, stopped or failed): the body's actions and face follow
	// the words. It must not block.
	OnVoice func(messageID string, e protocol.Emotion, speaking bool)

	mu      sync.Mutex
	current *utterance
	holds   map[string]chan struct{} // held speaks by token, closed to start
	early   map[string]time.Time     // starts that came before their speak
}

type utterance struct {
	cancel context.CancelFunc
	done   chan struct{}
	finish chan struct{} // closed: stop after the sentence that is playing
	once   sync.Once
}

// DefaultMaxHold bounds a held speak's wait for its start.
const DefaultMaxHold = time.Minute

// maxEarly bounds the starts kept for speaks not yet arrived.
const maxEarly = 16

// The bodies of speak, speak.start and speak.stop and of their results
// are protocol.SpeakRequest, SpeakStart, SpeakStop and SpeakResult,
// SpeakStartResult, SpeakStopResult.

// ErrCutOff is the error of a speak that a newer one replaced.
var ErrCutOff = errors.New("speak: cut off by a newer speak")

// DecodeRequest decodes a speak body strictly (protocol.DecodeSpeakRequest)
// and holds it to the device's cap of maxChars characters (default
// DefaultMaxChars).
func DecodeRequest(body json.RawMessage, maxChars int) (protocol.SpeakRequest, error) {
	r, err := protocol.DecodeSpeakRequest(body, 0)
	if err != nil {
		return protocol.SpeakRequest{}, err
	}
	if maxChars <= 0 {
		maxChars = DefaultMaxChars
	}
	if n := utf8.RuneCountInString(r.Message); n > maxChars {
		return protocol.SpeakRequest{}, fmt.Errorf("speak: message is %d characters, cap is %d", n, maxChars)
	}
	return r, nil
}

// Handle is the query handler for "speak".
func (s *Speaker) Handle(ctx context.Context, from string, body json.RawMessage) (any, error) {
	req, err := DecodeRequest(body, s.MaxChars)
	if err != nil {
		return nil, err
	}
	return s.SayRequest(ctx, req)
}

// HandleStart is the query handler for "speak.start": {"hold": token}
// starts the held speak with that token. A start that overtakes its speak
// (queries run concurrently) is kept for a while and starts it on arrival.
func (s *Speaker) HandleStart(ctx context.Context, from string, body json.RawMessage) (any, error) {
	b, err := protocol.DecodeSpeakStart(body, 0)
	if err != nil {
		return nil, err
	}
	return protocol.SpeakStartResult{Started: s.Start(b.Hold)}, nil
}

// HandleStop is the query handler for "speak.stop": {"at": "sentence"}
// ends the utterance that is playing after its current sentence,
// {"at": "immediate"} at once (barge-in).
func (s *Speaker) HandleStop(ctx context.Context, from string, body json.RawMessage) (any, error) {
	b, err := protocol.DecodeSpeakStop(body, 0)
	if err != nil {
		return nil, err
	}
	return protocol.SpeakStopResult{Stopped: s.Stop(b.At == protocol.BargeInImmediate)}, nil
}

// Start starts the held speak with token; it reports whether one was
// waiting (if not, the start is kept for a speak still on its way).
func (s *Speaker) Start(token string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if ch, ok := s.holds[token]; ok {
		close(ch)
		delete(s.holds, token)
		return true
	}
	if s.early == nil {
		s.early = map[string]time.Time{}
	}
	now := time.Now()
	for k, at := range s.early {
		if now.Sub(at) > s.maxHold() || len(s.early) >= maxEarly {
			delete(s.early, k)
		}
	}
	s.early[token] = now
	return false
}

// Stop ends the utterance that is playing: at once, or after its current
// sentence. It reports whether one was playing.
func (s *Speaker) Stop(immediate bool) bool {
	s.mu.Lock()
	u := s.current
	s.mu.Unlock()
	if u == nil {
		return false
	}
	if immediate {
		u.cancel()
	} else {
		u.once.Do(func() { close(u.finish) })
	}
	return true
}

func (s *Speaker) maxHold() time.Duration {
	if s.MaxHold > 0 {
		return s.MaxHold
	}
	return DefaultMaxHold
}

// Say speaks text, cutting off whatever is playing.
func (s *Speaker) Say(ctx context.Context, text, emotion string) (protocol.SpeakResult, error) {
	return s.SayRequest(ctx, protocol.SpeakRequest{Message: text, Emotion: protocol.Emotion(emotion)})
}

// SayRequest speaks r.Message; with a hold token it prepares first and
// plays only once Start(token) comes, and cuts off what is playing only
// then.
func (s *Speaker) SayRequest(ctx context.Context, r protocol.SpeakRequest) (protocol.SpeakResult, error) {
	text, emotion, hold := r.Message, string(r.Emotion), r.Hold
	name := r.MessageID
	if name == "" {
		name = firstWords(text)
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	me := &utterance{cancel: cancel, done: make(chan struct{}), finish: make(chan struct{})}
	defer close(me.done)
	start := time.Now()
	sentences := sentence.Split(text)
	if s.WholeText {
		sentences = []string{strings.Join(sentences, " ")}
	}
	res := protocol.SpeakResult{Sentences: len(sentences), Engine: s.TTS.Name()}
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
	if hold != "" {
		if err := s.wait(ctx, hold); err != nil {
			return res, err
		}
		start = time.Now()
	}
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
	res, err := s.play(ctx, me, pcm, start, res, name, r)
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

// wait holds a prepared speak until Start(token), its context's end, or
// MaxHold.
func (s *Speaker) wait(ctx context.Context, token string) error {
	ch := make(chan struct{})
	s.mu.Lock()
	if _, ok := s.early[token]; ok {
		delete(s.early, token)
		close(ch)
	} else {
		if s.holds == nil {
			s.holds = map[string]chan struct{}{}
		}
		s.holds[token] = ch
	}
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		delete(s.holds, token)
		s.mu.Unlock()
	}()
	t := time.NewTimer(s.maxHold())
	defer t.Stop()
	select {
	case <-ch:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("speak: held, never started: %w", ctx.Err())
	case <-t.C:
		return fmt.Errorf("speak: held %v and never started", s.maxHold())
	}
}

type chunk struct {
	pcm audio.PCM
	err error
}

func (s *Speaker) play(ctx context.Context, me *utterance, pcm <-chan chunk, start time.Time, res protocol.SpeakResult, name string, r protocol.SpeakRequest) (protocol.SpeakResult, error) {
	st, err := s.Out.Begin(ctx, name)
	if err != nil {
		return res, fmt.Errorf("speak: audio output: %w", err)
	}
	// A stop at the end of the sentence cancels the wait for the device's
	// buffer, so the next sentence is never queued, and drains the rest.
	feed, stopFeeding := context.WithCancel(ctx)
	defer stopFeeding()
	go func() {
		select {
		case <-me.finish:
			stopFeeding()
		case <-feed.Done():
		}
	}()
	first := true
	for c := range pcm {
		if c.err != nil {
			st.Abort()
			return res, fmt.Errorf("speak: %w", c.err)
		}
		if feed.Err() != nil {
			res.Stopped = true
			break
		}
		if first && s.OnVoice != nil {
			s.OnVoice(r.MessageID, r.Emotion, true)
			defer s.OnVoice(r.MessageID, r.Emotion, false)
		}
		if err := st.Write(feed, c.pcm); err != nil {
			if ctx.Err() == nil && feed.Err() != nil {
				res.Stopped = true
				break // stopped after the sentence that is playing
			}
			st.Abort()
			return res, fmt.Errorf("speak: audio output: %w", err)
		}
		if first {
			first = false
			res.StartedAt = time.Now().UTC()
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
