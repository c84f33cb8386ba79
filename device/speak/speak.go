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
//
// # A speak still being written
//
// A speak with More (issue 28) stays open: its synthesis takes sentences
// from a source that grows as speak.more appends arrive (HandleMore, More),
// each appended text split into sentences, in seq order. It ends at the
// append with more:false, when no append has come for MoreWait and
// everything taken has been said, when the cap MaxChars refuses an append,
// or when a speak.stop or a newer speak ends the utterance; from then on
// appends to it are refused. Appends that come before their speak, or
// ahead of a gap in seq, are kept (at most 16 speaks, 64 appends each, for
// MaxHold) and applied in order once the gap fills. An append's emotion
// (a model writes it after its words) is the utterance's from there on: it
// shows when the audio before it has been handed out, and the sentences
// after it are synthesized with it.
package speak

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
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
	// (drained, stopped or failed), and again, speaking, when an append
	// brings the emotion (SpeakMore.Emotion): the body's actions and face
	// follow the words. It must not block.
	OnVoice func(messageID string, e protocol.Emotion, speaking bool)
	// MoreWait bounds how long a speak with More waits for its next append
	// once it has said everything it was given (default DefaultMoreWait):
	// then it ends with what it had.
	MoreWait time.Duration

	mu        sync.Mutex
	current   *utterance
	holds     map[string]chan struct{} // held speaks by token, closed to start
	early     map[string]time.Time     // starts that came before their speak
	open      map[string]*source       // speaks with More by message id, taking appends
	ended     map[string]time.Time     // speaks with More that take no more, when they ended
	earlyMore map[string]*earlyAppends // appends that came before their speak
}

type utterance struct {
	cancel context.CancelFunc
	done   chan struct{}
	finish chan struct{} // closed: stop after the sentence that is playing
	once   sync.Once
	src    *source // nil unless the speak has More
}

// DefaultMoreWait bounds a speak's wait for its next append.
const DefaultMoreWait = 10 * time.Second

// Bounds of the appends kept for speaks not yet arrived (maxEarlyMore
// speaks) and of those kept for one speak, early or ahead of a gap in seq
// (maxAppends); maxEndedSpeak bounds the ended speaks remembered, for
// MaxHold, to refuse their appends.
const (
	maxEarlyMore  = 16
	maxAppends    = 64
	maxEndedSpeak = 64
)

// source is the growing text of a speak with More. Its fields are guarded
// by Speaker.mu.
type source struct {
	id        string
	queue     []string                   // sentences not yet taken by synthesis
	next      int                        // the seq applied next
	pending   map[int]protocol.SpeakMore // appends ahead of a gap in seq
	over      bool                       // takes no more appends
	chars     int                        // characters taken, first words and appends
	sentences int                        // sentences taken
	last      time.Time                  // when the speak or its last append came
	wake      chan struct{}              // signalled when something is taken or it is over
	emotion   protocol.Emotion           // the newest emotion, the speak's or an append's
	given     protocol.Emotion           // the emotion handed to synthesis
}

// earlyAppends are the appends kept for a speak not yet arrived.
type earlyAppends struct {
	at     time.Time
	pieces map[int]protocol.SpeakMore
	capped bool // one was refused for MaxChars: the speak takes no more
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

// HandleMore is the query handler for "speak.more": it appends the
// body's words to the open speak with its messageId (More).
func (s *Speaker) HandleMore(ctx context.Context, from string, body json.RawMessage) (any, error) {
	m, err := protocol.DecodeSpeakMore(body, 0)
	if err != nil {
		return nil, err
	}
	ok, err := s.More(m)
	if err != nil {
		return nil, err
	}
	return protocol.SpeakMoreResult{Appended: ok}, nil
}

// More appends m to the open speak with m.MessageID, in seq order. It
// reports whether the append was taken: applied, kept until the seq
// before it comes (or its speak does, when it overtook it), or a duplicate
// of a seq already taken (true, and said once). It is false, with no
// error, once that speak has ended (its end mark, MoreWait, a stop, a
// newer speak, or its own end): every append to it is refused then,
// duplicates too. An append that would take the utterance past MaxChars
// is refused with an error naming the cap, and the speak takes no more:
// what it took in order plays on (appends kept ahead of a gap are
// dropped). An append past the bound of those kept ahead of a gap, or
// for a speak not yet here, is refused with an error.
func (s *Speaker) More(m protocol.SpeakMore) (bool, error) {
	if err := m.Validate(); err != nil {
		return false, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if src, ok := s.open[m.MessageID]; ok {
		return s.appendLocked(src, m)
	}
	now := time.Now()
	for id, at := range s.ended {
		if now.Sub(at) > s.maxHold() {
			delete(s.ended, id)
		}
	}
	if _, ok := s.ended[m.MessageID]; ok {
		return false, nil
	}
	// Its speak is still on its way: keep the append for it.
	for id, e := range s.earlyMore {
		if now.Sub(e.at) > s.maxHold() {
			delete(s.earlyMore, id)
		}
	}
	e, ok := s.earlyMore[m.MessageID]
	if !ok {
		if len(s.earlyMore) >= maxEarlyMore {
			oldest := ""
			for id, e := range s.earlyMore {
				if oldest == "" || e.at.Before(s.earlyMore[oldest].at) {
					oldest = id
				}
			}
			delete(s.earlyMore, oldest)
		}
		if s.earlyMore == nil {
			s.earlyMore = map[string]*earlyAppends{}
		}
		e = &earlyAppends{at: now, pieces: map[int]protocol.SpeakMore{}}
		s.earlyMore[m.MessageID] = e
	}
	if _, dup := e.pieces[m.Seq]; dup {
		return true, nil
	}
	if e.capped {
		return false, nil
	}
	if len(e.pieces) >= maxAppends {
		return false, fmt.Errorf("speak: %d appends kept for speak %q not yet here, cap is %d", len(e.pieces), m.MessageID, maxAppends)
	}
	chars := utf8.RuneCountInString(m.Message)
	for _, p := range e.pieces {
		chars += utf8.RuneCountInString(p.Message)
	}
	if max := s.maxChars(); chars > max {
		e.capped = true
		return false, fmt.Errorf("speak: appends to %q are %d characters, cap is %d; it takes no more", m.MessageID, chars, max)
	}
	e.pieces[m.Seq] = m
	return true, nil
}

// appendLocked takes m into the open speak src; s.mu is held.
func (s *Speaker) appendLocked(src *source, m protocol.SpeakMore) (bool, error) {
	if src.over {
		return false, nil
	}
	if _, dup := src.pending[m.Seq]; dup || m.Seq < src.next {
		return true, nil
	}
	chars := src.chars + utf8.RuneCountInString(m.Message)
	for _, p := range src.pending {
		chars += utf8.RuneCountInString(p.Message)
	}
	if max := s.maxChars(); chars > max {
		s.endLocked(src)
		return false, fmt.Errorf("speak: %q would be %d characters with append %d, cap is %d; it takes no more", src.id, chars, m.Seq, max)
	}
	if m.Seq > src.next {
		if len(src.pending) >= maxAppends {
			return false, fmt.Errorf("speak: %d appends to %q wait for seq %d, cap is %d", len(src.pending), src.id, src.next, maxAppends)
		}
		if src.pending == nil {
			src.pending = map[int]protocol.SpeakMore{}
		}
		src.pending[m.Seq] = m
		return true, nil
	}
	s.applyLocked(src, m)
	for !src.over {
		p, ok := src.pending[src.next]
		if !ok {
			break
		}
		delete(src.pending, src.next)
		s.applyLocked(src, p)
	}
	return true, nil
}

// applyLocked appends m, the next in seq, to src; s.mu is held.
func (s *Speaker) applyLocked(src *source, m protocol.SpeakMore) {
	src.next = m.Seq + 1
	src.last = time.Now()
	if m.Emotion != "" {
		src.emotion = m.Emotion // known after the first words: from here on
	}
	s.takeLocked(src, m.Message)
	if !m.More {
		s.endLocked(src)
	}
	src.signal()
}

// takeLocked adds text's sentences to src; s.mu is held.
func (s *Speaker) takeLocked(src *source, text string) {
	ss := sentence.Split(text)
	if s.WholeText && len(ss) > 1 {
		ss = []string{strings.Join(ss, " ")}
	}
	src.queue = append(src.queue, ss...)
	src.sentences += len(ss)
	src.chars += utf8.RuneCountInString(text)
}

// endLocked makes src take no more appends; what it took is still said.
// s.mu is held.
func (s *Speaker) endLocked(src *source) {
	if src.over {
		return
	}
	src.over = true
	src.pending = nil
	if s.open[src.id] == src {
		delete(s.open, src.id)
	}
	if s.ended == nil {
		s.ended = map[string]time.Time{}
	}
	if len(s.ended) >= maxEndedSpeak {
		oldest := ""
		for id, at := range s.ended {
			if oldest == "" || at.Before(s.ended[oldest]) {
				oldest = id
			}
		}
		delete(s.ended, oldest)
	}
	s.ended[src.id] = time.Now()
	src.signal()
}

func (src *source) signal() {
	select {
	case src.wake <- struct{}{}:
	default:
	}
}

// openSource opens the speak r (with More) to appends, with the appends
// that came before it; s.mu is not held.
func (s *Speaker) openSource(r protocol.SpeakRequest) *source {
	src := &source{id: r.MessageID, next: 1, last: time.Now(), wake: make(chan struct{}, 1), emotion: r.Emotion, given: r.Emotion}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.takeLocked(src, r.Message)
	if old, ok := s.open[r.MessageID]; ok {
		s.endLocked(old) // the same speak again: the newer one takes the appends
	}
	delete(s.ended, r.MessageID)
	if s.open == nil {
		s.open = map[string]*source{}
	}
	s.open[r.MessageID] = src
	if e, ok := s.earlyMore[r.MessageID]; ok {
		delete(s.earlyMore, r.MessageID)
		seqs := make([]int, 0, len(e.pieces))
		for seq := range e.pieces {
			seqs = append(seqs, seq)
		}
		slices.Sort(seqs)
		for _, seq := range seqs {
			if _, err := s.appendLocked(src, e.pieces[seq]); err != nil && s.Log != nil {
				s.Log.Warn("speak: an early append refused", "messageId", r.MessageID, "seq", seq, "err", err)
			}
		}
		if e.capped {
			s.endLocked(src)
		}
	}
	return src
}

// nextSentence is the next sentence of src for synthesis and its
// emotion: it waits for an append while src is open, at most MoreWait
// since the last one came, then ends src. An emotion an append changed is
// handed over first with no text. ok is false when src has nothing more
// to say.
func (s *Speaker) nextSentence(ctx context.Context, src *source) (text string, e protocol.Emotion, ok bool) {
	for {
		s.mu.Lock()
		if src.emotion != src.given {
			src.given = src.emotion
			s.mu.Unlock()
			return "", src.given, true
		}
		if len(src.queue) > 0 {
			text = src.queue[0]
			src.queue = src.queue[1:]
			s.mu.Unlock()
			return text, src.given, true
		}
		if src.over {
			s.mu.Unlock()
			return "", "", false
		}
		wait := s.moreWait() - time.Since(src.last)
		if wait <= 0 {
			s.endLocked(src)
			s.mu.Unlock()
			if s.Log != nil {
				s.Log.Info("speak: no append came; it ends with what it had", "messageId", src.id, "moreWait", s.moreWait())
			}
			return "", "", false
		}
		s.mu.Unlock()
		t := time.NewTimer(wait)
		select {
		case <-src.wake:
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return "", "", false
		}
		t.Stop()
	}
}

func (s *Speaker) moreWait() time.Duration {
	if s.MoreWait > 0 {
		return s.MoreWait
	}
	return DefaultMoreWait
}

func (s *Speaker) maxChars() int {
	if s.MaxChars > 0 {
		return s.MaxChars
	}
	return DefaultMaxChars
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
	if u.src != nil {
		// After the stop is marked: a speak waiting for an append ends
		// at once, and its result says it was stopped.
		s.mu.Lock()
		s.endLocked(u.src)
		s.mu.Unlock()
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
	text, hold := r.Message, r.Hold
	name := r.MessageID
	if name == "" {
		name = firstWords(text)
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	me := &utterance{cancel: cancel, done: make(chan struct{}), finish: make(chan struct{})}
	defer close(me.done)
	start := time.Now()
	res := protocol.SpeakResult{Engine: s.TTS.Name()}
	synthCtx, stop := context.WithCancel(ctx)
	var next func() (string, protocol.Emotion, bool)
	if r.More && r.MessageID != "" {
		// A speak still being written: its sentences come as appends do.
		me.src = s.openSource(r)
		defer func() {
			s.mu.Lock()
			s.endLocked(me.src)
			s.mu.Unlock()
		}()
		next = func() (string, protocol.Emotion, bool) { return s.nextSentence(synthCtx, me.src) }
	} else {
		sentences := sentence.Split(text)
		if s.WholeText {
			sentences = []string{strings.Join(sentences, " ")}
		}
		res.Sentences = len(sentences)
		next = func() (string, protocol.Emotion, bool) {
			if len(sentences) == 0 {
				return "", "", false
			}
			t := sentences[0]
			sentences = sentences[1:]
			return t, r.Emotion, true
		}
	}
	// Synthesize ahead on one goroutine; play on this one.
	pcm := make(chan chunk, 1)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		defer close(pcm)
		for {
			sentence, e, ok := next()
			if !ok {
				return
			}
			if sentence == "" { // the emotion, known late (speak.more)
				select {
				case pcm <- chunk{emotion: e, mark: true}:
					continue
				case <-synthCtx.Done():
					return
				}
			}
			p, err := s.TTS.Synthesize(synthCtx, sentence, string(e))
			if errors.Is(err, tts.ErrEmpty) {
				continue
			}
			select {
			case pcm <- chunk{pcm: p, err: err, emotion: e}:
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
	if prev != nil {
		// Cancelled first, then closed to appends: an old speak whose
		// appends ended before its cancel would finish as if said whole,
		// not cut off (ErrCutOff).
		prev.cancel()
		if prev.src != nil {
			s.endLocked(prev.src) // cut off: it takes no more appends
		}
	}
	s.mu.Unlock()
	if prev != nil {
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
	if me.src != nil {
		s.mu.Lock()
		res.Sentences = me.src.sentences
		s.mu.Unlock()
	}
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

// chunk is a sentence's audio and the emotion it was synthesized with,
// or (mark) only an emotion that became known as the speak went on.
type chunk struct {
	pcm     audio.PCM
	err     error
	emotion protocol.Emotion
	mark    bool
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
	first, shown := true, r.Emotion
	for c := range pcm {
		if c.err != nil {
			st.Abort()
			return res, fmt.Errorf("speak: %w", c.err)
		}
		if feed.Err() != nil {
			res.Stopped = true
			break
		}
		if c.emotion != "" && c.emotion != shown { // an append's emotion shows from here on
			shown = c.emotion
			if !first && s.OnVoice != nil {
				s.OnVoice(r.MessageID, shown, true)
			}
		}
		if c.mark {
			continue
		}
		if first && s.OnVoice != nil {
			s.OnVoice(r.MessageID, shown, true)
			defer func() { s.OnVoice(r.MessageID, shown, false) }()
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
	if me.src != nil {
		select {
		case <-me.finish: // a stop at the sentence while it waited for an append
			res.Stopped = true
		default:
		}
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
