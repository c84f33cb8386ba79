package companion

import (
	"context"
	"strings"
	"sync"
	"time"

	"github.com/chorus-robotics/chorus/runtime/brain"
	"github.com/chorus-robotics/chorus/runtime/protocol"
	"github.com/chorus-robotics/chorus/runtime/query"
	"github.com/chorus-robotics/chorus/runtime/tool"
)

// Streamed thoughts (issue 28). With a brain that streams
// (brain.Streamer), a companion's State leaves the moment the model has
// written its vote (evVote), and a granted turn speaks the draft as its
// sentences end: the first speak carries what is complete with "more",
// each later sentence is appended (speak.more), and the last append says
// no more. The Message is the whole draft, built once it is complete. A
// body that does not take speak.more (Config.SpeakMore false: a body
// behind the bridge) and a text-only companion get the whole draft, as
// before.

// appendTimeout bounds one speak.more; appendTries is how often one is
// sent (the body takes each seq once, so a repeat is safe).
const (
	appendTimeout = 5 * time.Second
	appendTries   = 2
)

// words is a draft as its model writes it: the thinking goroutine writes
// it, the turn's goroutine speaks it.
type words struct {
	mu      sync.Mutex
	text    string // the complete sentences so far
	emotion protocol.Emotion
	done    bool
	u       brain.Utterance // once done: the whole words (no Text: none)
	calls   []tool.Call     // once done: the tools that act the think asked for (no words then)
	grew    chan struct{}   // closed at every change
}

// soFar is what a words holds at one moment.
type soFar struct {
	text    string
	emotion protocol.Emotion
	done    bool
	u       brain.Utterance
}

func newWords() *words { return &words{grew: make(chan struct{})} }

// said is brain.Heard.Said: the complete sentences so far.
func (w *words) said(text string, e protocol.Emotion) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.done {
		return
	}
	w.text, w.emotion = text, e
	w.changed()
}

// changed wakes whoever waits for the words (w.mu held).
func (w *words) changed() {
	close(w.grew)
	w.grew = make(chan struct{})
}

// finish ends the words with the thought's whole utterance, or the tools
// that act it asked for (t.Deferred: the words are written once granted).
func (w *words) finish(t brain.Thought) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.done {
		return
	}
	w.done, w.u, w.calls = true, utteranceOf(t), t.Deferred
	w.changed()
}

// deferred are the tools that act the finished think asked for.
func (w *words) deferred() []tool.Call {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.calls
}

// next waits until the words hold more than n bytes of text, or are done.
// Every wait ends: the thought is done within the think timeout.
func (w *words) next(ctx context.Context, n int) (soFar, error) {
	for {
		w.mu.Lock()
		s, grew := soFar{text: w.text, emotion: w.emotion, done: w.done, u: w.u}, w.grew
		w.mu.Unlock()
		if s.done || len(s.text) > n {
			return s, nil
		}
		select {
		case <-grew:
		case <-ctx.Done():
			return s, ctx.Err()
		}
	}
}

// whole waits for the whole words.
func (w *words) whole(ctx context.Context) (brain.Utterance, error) {
	for {
		s, err := w.next(ctx, 1<<30)
		if err != nil || s.done {
			return s.u, err
		}
	}
}

// utteranceOf is the thought's words as the turn speaks them.
func utteranceOf(t brain.Thought) brain.Utterance {
	if t.State != protocol.Speak || t.Draft == "" {
		return brain.Utterance{}
	}
	return brain.Utterance{Text: t.Draft, Emotion: t.Emotion, To: t.To, Actions: t.Actions, Cut: t.Cut}
}

// speakWords speaks tf's words through the device as they are written, the first
// speak with hold (overlapped turns) or without. first hears the first
// words handed to the device (a part of the utterance unless whole is
// true); done hears the whole utterance once it is complete (what was
// handed, when the device stopped taking more), before the speak's
// result. A body without speak.more gets the whole words in one speak.
// The model writes the emotion after the words (issue 40): the first
// speak goes with neutral, and the first append after the emotion is
// written carries it (the end mark at the latest).
func (t *turn) speakWords(ctx context.Context, tf thoughtFor, hold string, timeout time.Duration,
	first func(u brain.Utterance, whole bool), done func(brain.Utterance)) (protocol.SpeakResult, error) {
	msgID, w := t.msgID, tf.words
	s, err := w.next(ctx, 0)
	if err == nil && !t.cfg.SpeakMore {
		s.u, err = w.whole(ctx)
		s.done = true
	}
	if calls := w.deferred(); err == nil && s.done && s.u.Text == "" && len(calls) > 0 {
		// The think asked for tools that act after its vote had left: the
		// words are written now, from their results.
		s.u, err = t.utter(ctx, tf, calls)
	}
	switch {
	case err != nil:
		return protocol.SpeakResult{}, err
	case s.done && s.u.Text == "":
		return protocol.SpeakResult{}, errNoWords
	case s.done:
		u := withEmotion(s.u)
		if first != nil {
			first(u, true)
		}
		done(u)
		return t.speakQuery(ctx, protocol.SpeakRequest{Message: u.Text, Emotion: u.Emotion, Hold: hold, MessageID: msgID}, timeout)
	}
	e := withEmotion(brain.Utterance{Emotion: s.emotion}).Emotion
	if first != nil {
		first(brain.Utterance{Text: s.text, Emotion: e}, false)
	}
	type spoken struct {
		res protocol.SpeakResult
		err error
	}
	result := make(chan spoken, 1)
	req := protocol.SpeakRequest{Message: s.text, Emotion: e, Hold: hold, MessageID: msgID, More: true}
	// The words are waited for until the speak ends: a body that stopped
	// (a barge-in) or failed takes no more, and the turn ends with it.
	writing, ended := context.WithCancel(ctx)
	defer ended()
	go func() { // owned here: waited for below
		res, err := t.speakQuery(ctx, req, timeout)
		result <- spoken{res, err}
		ended()
	}()
	handed, seq := s.text, 0
	var r *spoken
	for !s.done && r == nil {
		if s, err = w.next(writing, len(handed)); err != nil {
			break
		}
		text := s.text
		if s.done {
			text = s.u.Text
		}
		rest, ok := strings.CutPrefix(text, handed)
		if !ok { // never with a well-behaved brain: words already said cannot change
			t.log.Warn("the draft changed words already spoken; the rest is not said", "message", msgID)
			s.done = false
			break
		}
		if rest = strings.TrimSpace(rest); rest == "" && !s.done {
			continue
		}
		if writing.Err() != nil { // the speak ended meanwhile
			s.done = false
			break
		}
		seq++
		m := protocol.SpeakMore{MessageID: msgID, Seq: seq, Message: rest, More: !s.done}
		if known := emotionSoFar(s); known != "" && known != e { // written after the words
			m.Emotion, e = known, known
		}
		if !t.appendWords(ctx, m) {
			s.done = false
			break
		}
		handed = text
		select {
		case got := <-result: // the device ended the speak: it takes no more
			r = &got
		default:
		}
	}
	u := s.u
	if !s.done || u.Text != handed {
		u = brain.Utterance{Text: handed, Emotion: e, To: s.u.To, Cut: true}
	}
	done(withEmotion(u))
	if r == nil {
		got := <-result
		r = &got
	}
	return r.res, r.err
}

// appendWords sends one speak.more, once more if it is lost; it reports
// whether the device took it.
func (t *turn) appendWords(ctx context.Context, m protocol.SpeakMore) bool {
	var err error
	for range appendTries {
		var res protocol.SpeakMoreResult
		if res, err = query.Call(ctx, t.cfg.Queries, t.cfg.Device, query.SpeakMore, m, appendTimeout); err == nil {
			return res.Appended
		}
		if ctx.Err() != nil {
			return false
		}
	}
	t.log.Warn("speak.more failed; the device says what it has and no more", "body", t.cfg.Device, "seq", m.Seq, "err", err)
	return false
}

// emotionSoFar is the words' emotion once the model has written it, else
// "".
func emotionSoFar(s soFar) protocol.Emotion {
	if s.done {
		return withEmotion(s.u).Emotion
	}
	return s.emotion
}

func withEmotion(u brain.Utterance) brain.Utterance {
	if u.Emotion == "" || !u.Emotion.Valid() {
		u.Emotion = protocol.EmotionNeutral
	}
	return u
}
