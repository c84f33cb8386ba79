package speak

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chorus-robotics/chorus/drivers/audio"
	"github.com/chorus-robotics/chorus/runtime/protocol"
)

// events is a TTS and an audio output that record what happens, in order:
// "synth X" as sentence X is synthesized, "play X" as its audio is written;
// a test adds its own ("append 2"). A test waits for an event instead of
// sleeping.
//
// A sentence in block never finishes playing: its Write records "wait X"
// and blocks until its context ends (a device whose buffer is full until
// the utterance is stopped or cut off).
type events struct {
	mu    sync.Mutex
	log   []string
	texts []string
	seen  chan string     // every event, for waitFor
	block map[string]bool // set before use
}

func newEvents() *events { return &events{seen: make(chan string, 1024)} }

func (e *events) add(ev string) {
	e.mu.Lock()
	e.log = append(e.log, ev)
	e.mu.Unlock()
	e.seen <- ev
}

// waitFor reads events until ev; a test that never sees it fails (the
// bound is a safety net, not a measurement).
func (e *events) waitFor(t *testing.T, ev string) {
	t.Helper()
	deadline := time.After(20 * time.Second)
	for {
		select {
		case got := <-e.seen:
			if got == ev {
				return
			}
		case <-deadline:
			t.Fatalf("no %q; events %q", ev, e.events())
		}
	}
}

func (e *events) events() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return slices.Clone(e.log)
}

// played is the sentences whose audio was written, in order.
func (e *events) played() []string {
	var p []string
	for _, ev := range e.events() {
		if t, ok := strings.CutPrefix(ev, "play "); ok {
			p = append(p, t)
		}
	}
	return p
}

func (e *events) index(ev string) int { return slices.Index(e.events(), ev) }

func (e *events) Name() string { return "events" }

// Synthesize returns 10 ms of audio whose first sample names the text.
func (e *events) Synthesize(ctx context.Context, text, emotion string) (audio.PCM, error) {
	if err := ctx.Err(); err != nil {
		return audio.PCM{}, err
	}
	e.mu.Lock()
	i := len(e.texts)
	e.texts = append(e.texts, text)
	e.mu.Unlock()
	e.add("synth " + text)
	e.add("tone " + text + " " + emotion)
	p := audio.PCM{Rate: 16000, Samples: make([]int16, 160)}
	p.Samples[0] = int16(i)
	return p, nil
}

func (e *events) Begin(context.Context, string) (audio.Stream, error) { return &eventStream{e: e}, nil }
func (e *events) Close() error                                        { return nil }

type eventStream struct {
	e *events
	d time.Duration
}

func (s *eventStream) Write(ctx context.Context, c audio.PCM) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.e.mu.Lock()
	text := s.e.texts[c.Samples[0]]
	s.e.mu.Unlock()
	if s.e.block[text] {
		s.e.add("wait " + text)
		<-ctx.Done()
		return ctx.Err()
	}
	s.e.add("play " + text)
	s.d += c.Duration()
	return nil
}

func (s *eventStream) Drain(context.Context) (time.Duration, error) { return s.d, nil }
func (s *eventStream) Abort()                                       {}

type said struct {
	res protocol.SpeakResult
	err error
}

func sayAsync(s *Speaker, r protocol.SpeakRequest) <-chan said {
	c := make(chan said, 1)
	go func() {
		res, err := s.SayRequest(context.Background(), r)
		c <- said{res, err}
	}()
	return c
}

// more sends an append through the query handler and returns Appended.
func more(t *testing.T, s *Speaker, e *events, id string, seq int, text string, more bool) bool {
	t.Helper()
	b, _ := json.Marshal(protocol.SpeakMore{MessageID: id, Seq: seq, Message: text, More: more})
	got, err := s.HandleMore(context.Background(), "kyoko", b)
	if err != nil {
		t.Fatalf("append %d: %v", seq, err)
	}
	if e != nil {
		e.add(fmt.Sprint("append ", seq))
	}
	return got.(protocol.SpeakMoreResult).Appended
}

// waitHeld waits until a speak is held with token.
func waitHeld(t *testing.T, s *Speaker, token string) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		s.mu.Lock()
		_, ok := s.holds[token]
		s.mu.Unlock()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("no speak held with %q", token)
		}
		time.Sleep(time.Millisecond)
	}
}

func waitSaid(t *testing.T, c <-chan said) said {
	t.Helper()
	select {
	case r := <-c:
		return r
	case <-time.After(20 * time.Second):
		t.Fatal("the speak never ended")
		return said{}
	}
}

// Appends that come early (before their speak), late (after its first
// audio), out of order and twice are each said once, in seq order; the
// first words sound before the last append has come, and the end mark
// completes the result.
func TestMoreSaysEveryAppendOnceInOrder(t *testing.T) {
	e := newEvents()
	s := &Speaker{TTS: e, Out: e}
	if !more(t, s, e, "m1", 2, "Five. Six.", true) {
		t.Fatal("an append before its speak was not taken")
	}
	done := sayAsync(s, protocol.SpeakRequest{Message: "One. Two.", MessageID: "m1", More: true})
	e.waitFor(t, "play Two.")
	if !more(t, s, e, "m1", 1, "Three. Four.", true) {
		t.Fatal("append 1 not taken")
	}
	if !more(t, s, e, "m1", 2, "Five. Six.", true) || !more(t, s, e, "m1", 1, "Three. Four.", true) {
		t.Fatal("a duplicate append refused")
	}
	e.waitFor(t, "play Six.")
	if !more(t, s, e, "m1", 4, "Nine.", false) { // the end mark before the seq it follows
		t.Fatal("append 4 not taken")
	}
	select {
	case r := <-done:
		t.Fatalf("the speak ended with seq 3 missing: %+v", r)
	default:
	}
	if !more(t, s, e, "m1", 3, "Seven. Eight.", true) {
		t.Fatal("append 3 not taken")
	}
	r := waitSaid(t, done)
	if r.err != nil {
		t.Fatal(r.err)
	}
	want := []string{"One.", "Two.", "Three.", "Four.", "Five.", "Six.", "Seven.", "Eight.", "Nine."}
	if got := e.played(); !slices.Equal(got, want) {
		t.Fatalf("played %q, want %q", got, want)
	}
	if r.res.Sentences != 9 || r.res.DurationMs != 90 || r.res.Stopped {
		t.Fatalf("result %+v", r.res)
	}
	if first, last := e.index("play One."), e.index("append 3"); first < 0 || first > last {
		t.Fatalf("first audio at event %d, last append at %d: %q", first, last, e.events())
	}
	if more(t, s, nil, "m1", 5, "Ten.", false) || more(t, s, nil, "m1", 3, "Seven. Eight.", true) {
		t.Fatal("an append to a speak past its end mark was taken")
	}
	// A speak without More never waits for appends.
	r2 := waitSaid(t, sayAsync(s, protocol.SpeakRequest{Message: "Alone.", MessageID: "m2"}))
	if r2.err != nil || r2.res.Sentences != 1 {
		t.Fatalf("a speak without more: %+v", r2)
	}
}

// A model writes the emotion after its words (issue 40): the speak starts
// with none, and an append's emotion shows on the body from there on — at
// once, even on the end mark with no words — and the sentences after it
// are synthesized with it.
func TestMoreEmotionKnownLate(t *testing.T) {
	e := newEvents()
	s := &Speaker{TTS: e, Out: e}
	s.OnVoice = func(id string, em protocol.Emotion, speaking bool) {
		e.add(fmt.Sprintf("voice %s %s %v", id, em, speaking))
	}
	send := func(m protocol.SpeakMore) {
		t.Helper()
		b, _ := json.Marshal(m)
		if got, err := s.HandleMore(context.Background(), "kyoko", b); err != nil || !got.(protocol.SpeakMoreResult).Appended {
			t.Fatalf("append %+v: %v %v", m, got, err)
		}
	}
	done := sayAsync(s, protocol.SpeakRequest{Message: "Oh,", MessageID: "m1", More: true})
	e.waitFor(t, "play Oh,")
	send(protocol.SpeakMore{MessageID: "m1", Seq: 1, Message: "that is sad. Very.", More: true, Emotion: protocol.EmotionSad})
	e.waitFor(t, "play Very.")
	send(protocol.SpeakMore{MessageID: "m1", Seq: 2, Emotion: protocol.EmotionHappy})
	if r := waitSaid(t, done); r.err != nil || r.res.Sentences != 3 {
		t.Fatalf("said %+v", r)
	}
	var voice, tones []string
	for _, ev := range e.events() {
		switch {
		case strings.HasPrefix(ev, "voice "), strings.HasPrefix(ev, "play "):
			voice = append(voice, ev)
		case strings.HasPrefix(ev, "tone "):
			tones = append(tones, ev)
		}
	}
	want := []string{"voice m1  true", "play Oh,", "voice m1 sad true", "play that is sad.", "play Very.", "voice m1 happy true", "voice m1 happy false"}
	if !slices.Equal(voice, want) {
		t.Fatalf("the face and the audio: %q, want %q", voice, want)
	}
	if want := []string{"tone Oh, ", "tone that is sad. sad", "tone Very. sad"}; !slices.Equal(tones, want) {
		t.Fatalf("synthesized %q, want %q", tones, want)
	}
}

// With no append for MoreWait, once it has said what it had, the speak
// ends with that, never before MoreWait, and takes no more.
func TestMoreWaitEndsWithWhatItHad(t *testing.T) {
	e := newEvents()
	s := &Speaker{TTS: e, Out: e, MoreWait: 50 * time.Millisecond}
	at := time.Now()
	// The append comes first, so that no wait of the test's own can
	// outlast MoreWait before it.
	if !more(t, s, e, "m1", 1, "Two.", true) {
		t.Fatal("append refused")
	}
	r := waitSaid(t, sayAsync(s, protocol.SpeakRequest{Message: "One.", MessageID: "m1", More: true}))
	if waited := time.Since(at); waited < s.MoreWait {
		t.Fatalf("ended %v after the last append, MoreWait is %v", waited, s.MoreWait)
	}
	if r.err != nil || r.res.Sentences != 2 || !slices.Equal(e.played(), []string{"One.", "Two."}) {
		t.Fatalf("result %+v, played %q", r, e.played())
	}
	if more(t, s, nil, "m1", 2, "Three.", false) {
		t.Fatal("an append after MoreWait was taken")
	}
}

// MaxChars bounds the whole utterance: an append past it is refused,
// naming the cap, and what was taken is said.
func TestMoreCapRefusesAnOverlongAppend(t *testing.T) {
	e := newEvents()
	s := &Speaker{TTS: e, Out: e, MaxChars: 20}
	done := sayAsync(s, protocol.SpeakRequest{Message: "One.", MessageID: "m1", More: true})
	e.waitFor(t, "synth One.")
	if !more(t, s, e, "m1", 1, "Two.", true) {
		t.Fatal("append refused")
	}
	b, _ := json.Marshal(protocol.SpeakMore{MessageID: "m1", Seq: 2, Message: "Three is far too long.", More: true})
	if _, err := s.HandleMore(context.Background(), "kyoko", b); err == nil || !strings.Contains(err.Error(), "cap is 20") {
		t.Fatalf("an overlong append: %v, want the cap named", err)
	}
	r := waitSaid(t, done)
	if r.err != nil || r.res.Sentences != 2 || !slices.Equal(e.played(), []string{"One.", "Two."}) {
		t.Fatalf("result %+v, played %q", r, e.played())
	}
	if more(t, s, nil, "m1", 3, "Four.", false) {
		t.Fatal("an append after the cap was taken")
	}

	// The same before the speak: its appends are held to the cap, and the
	// speak says what was taken and ends (it waits for no MoreWait).
	s.MoreWait = time.Hour
	if !more(t, s, nil, "m9", 1, "Two.", true) {
		t.Fatal("an early append refused")
	}
	if _, err := s.More(protocol.SpeakMore{MessageID: "m9", Seq: 2, Message: strings.Repeat("x", 20), More: true}); err == nil || !strings.Contains(err.Error(), "cap is 20") {
		t.Fatalf("an overlong append before its speak: %v", err)
	}
	r = waitSaid(t, sayAsync(s, protocol.SpeakRequest{Message: "One.", MessageID: "m9", More: true}))
	if r.err != nil || r.res.Sentences != 2 {
		t.Fatalf("a speak whose early appends hit the cap: %+v", r)
	}
}

// A held speak with More prepares its first words, takes appends and goes
// on synthesizing them while held; nothing plays before its start.
func TestHeldMoreSpeakTakesAppends(t *testing.T) {
	e := newEvents()
	s := &Speaker{TTS: e, Out: e}
	done := sayAsync(s, protocol.SpeakRequest{Message: "One.", MessageID: "m1", More: true, Hold: "t1"})
	e.waitFor(t, "synth One.")
	if !more(t, s, e, "m1", 1, "Two.", true) {
		t.Fatal("an append to a held speak refused")
	}
	e.waitFor(t, "synth Two.")
	waitHeld(t, s, "t1")
	if p := e.played(); len(p) != 0 {
		t.Fatalf("played %q before its start", p)
	}
	if !s.Start("t1") {
		t.Fatal("the held speak was not waiting")
	}
	e.waitFor(t, "play Two.")
	if !more(t, s, e, "m1", 2, "Three.", false) {
		t.Fatal("append after the start refused")
	}
	r := waitSaid(t, done)
	if r.err != nil || r.res.Sentences != 3 || !slices.Equal(e.played(), []string{"One.", "Two.", "Three."}) {
		t.Fatalf("result %+v, played %q", r, e.played())
	}
}

// A speak.stop, at the sentence or at once, or a newer speak ends a speak
// still being written; appends to it are refused after.
func TestStopEndsASpeakStillBeingWritten(t *testing.T) {
	for _, at := range []string{"sentence", "immediate", "newer speak"} {
		t.Run(at, func(t *testing.T) {
			e := newEvents()
			s := &Speaker{TTS: e, Out: e}
			done := sayAsync(s, protocol.SpeakRequest{Message: "One.", MessageID: "m1", More: true})
			e.waitFor(t, "play One.")
			switch at {
			case "newer speak":
				if _, err := s.Say(context.Background(), "Other.", ""); err != nil {
					t.Fatal(err)
				}
			default:
				got, err := s.HandleStop(context.Background(), "user", json.RawMessage(`{"at":"`+at+`"}`))
				if err != nil || !got.(protocol.SpeakStopResult).Stopped {
					t.Fatalf("stop: %v %v", got, err)
				}
			}
			r := waitSaid(t, done)
			switch at {
			case "sentence":
				if r.err != nil || !r.res.Stopped {
					t.Fatalf("stopped at the sentence: %+v", r)
				}
			case "immediate":
				if r.err == nil {
					t.Fatalf("stopped at once: %+v, want an error", r)
				}
			case "newer speak":
				if !errors.Is(r.err, ErrCutOff) {
					t.Fatalf("cut off: %v, want ErrCutOff", r.err)
				}
			}
			if more(t, s, nil, "m1", 1, "Two.", false) {
				t.Fatal("an append after the stop was taken")
			}
			if slices.Contains(e.played(), "Two.") {
				t.Fatalf("played %q", e.played())
			}
		})
	}
}

// The appends kept ahead of their speak, or of a gap, are bounded; a bad
// body is refused naming the field.
func TestMoreBounds(t *testing.T) {
	s := &Speaker{TTS: newEvents(), Out: newEvents()}
	for seq := 1; seq <= maxAppends; seq++ {
		if ok, err := s.More(protocol.SpeakMore{MessageID: "m1", Seq: seq, Message: "x.", More: true}); !ok || err != nil {
			t.Fatalf("append %d: %v %v", seq, ok, err)
		}
	}
	if _, err := s.More(protocol.SpeakMore{MessageID: "m1", Seq: maxAppends + 1, Message: "x.", More: true}); err == nil {
		t.Fatal("an append past the bound of those kept was taken")
	}
	for i := range maxEarlyMore + 4 {
		s.More(protocol.SpeakMore{MessageID: fmt.Sprint("other", i), Seq: 1, Message: "x."})
	}
	s.mu.Lock()
	n := len(s.earlyMore)
	s.mu.Unlock()
	if n > maxEarlyMore {
		t.Fatalf("%d speaks' appends kept, bound is %d", n, maxEarlyMore)
	}
	for _, bad := range []string{`{}`, `{"messageId":"m1","seq":0,"message":"x"}`, `{"messageId":"m1","seq":1,"more":true}`, `{"messageId":"m1","seq":1,"x":1}`} {
		if _, err := s.HandleMore(context.Background(), "kyoko", json.RawMessage(bad)); err == nil {
			t.Errorf("speak.more %s accepted", bad)
		}
	}
}
