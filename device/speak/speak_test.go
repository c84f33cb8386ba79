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
	"github.com/chorus-robotics/chorus/drivers/audio/null"
	"github.com/chorus-robotics/chorus/drivers/tts"
	"github.com/chorus-robotics/chorus/drivers/tts/tone"
	"github.com/chorus-robotics/chorus/runtime/protocol"
)

func TestDecodeRequest(t *testing.T) {
	for name, body := range map[string]string{
		"empty":           `{"message":"  "}`,
		"huge":            `{"message":"` + strings.Repeat("あ", 2001) + `"}`,
		"unknown emotion": `{"message":"hi","emotion":"ecstatic"}`,
		"unknown field":   `{"message":"hi","volume":11}`,
		"not json":        `hi`,
		// encoding/json, which decoded the body before issue 20, folds the
		// case of names and stops after the first value: both were spoken.
		"field name in another case": `{"MESSAGE":"hi"}`,
		"trailing data":              `{"message":"hi"} {"message":"again"}`,
		"no body":                    ``,
	} {
		if _, err := DecodeRequest(json.RawMessage(body), 0); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	if _, err := DecodeRequest(json.RawMessage(`{"message":"hi","emotion":"sad"}`), 0); err != nil {
		t.Fatal(err)
	}
}

// slowTTS takes d per sentence and records when each call starts. A
// sentence in after is synthesized only once its channel is closed.
type slowTTS struct {
	d     time.Duration
	mu    sync.Mutex
	calls []string
	fail  string
	after map[string]<-chan struct{}
}

func (s *slowTTS) Name() string { return "slow" }
func (s *slowTTS) Synthesize(ctx context.Context, text, emotion string) (audio.PCM, error) {
	s.mu.Lock()
	s.calls = append(s.calls, text)
	s.mu.Unlock()
	if text == s.fail {
		return audio.PCM{}, errors.New("tts crashed")
	}
	if ch := s.after[text]; ch != nil {
		select {
		case <-ch:
		case <-time.After(20 * time.Second):
			return audio.PCM{}, fmt.Errorf("%q waited 20 s for what comes before it", text)
		case <-ctx.Done():
			return audio.PCM{}, ctx.Err()
		}
	}
	select {
	case <-time.After(s.d):
	case <-ctx.Done():
		return audio.PCM{}, ctx.Err()
	}
	return audio.PCM{Rate: 16000, Samples: make([]int16, 1600)}, nil
}

// The first sentence sounds before the last is synthesized: the last
// waits for the first audio, so a speaker that waited for every sentence
// would never play (an order, not a figure: that is BENCHMARKS.md's).
func TestFirstAudioBeforeLastSentence(t *testing.T) {
	firstAudio := make(chan struct{})
	tt := &slowTTS{d: 30 * time.Millisecond, after: map[string]<-chan struct{}{"Three.": firstAudio}}
	out := &null.Output{}
	s := &Speaker{TTS: tt, Out: out, OnFirstAudio: func(time.Duration) { close(firstAudio) }}
	res, err := s.Say(context.Background(), "One. Two. Three.", "")
	if err != nil {
		t.Fatalf("%v: it waited for more than the first sentence", err)
	}
	if res.Sentences != 3 || res.DurationMs != 300 || out.Samples() != 4800 {
		t.Fatalf("result %+v, %d samples", res, out.Samples())
	}
}

func TestNewerSpeakCutsOff(t *testing.T) {
	e := newEvents()
	e.block = map[string]bool{"With two sentences.": true}
	s := &Speaker{TTS: e, Out: e}
	old := sayAsync(s, protocol.SpeakRequest{Message: "A long one. With two sentences."})
	e.waitFor(t, "wait With two sentences.")
	if _, err := s.Say(context.Background(), "Stop.", ""); err != nil {
		t.Fatal(err)
	}
	if r := waitSaid(t, old); !errors.Is(r.err, ErrCutOff) {
		t.Fatalf("old speak: %v, want ErrCutOff", r.err)
	}
}

func TestTTSFailureIsAnErrorAndNextWorks(t *testing.T) {
	s := &Speaker{TTS: &slowTTS{fail: "Bad.", d: time.Millisecond}, Out: &null.Output{}}
	if _, err := s.Say(context.Background(), "Good. Bad.", ""); err == nil || !strings.Contains(err.Error(), "tts crashed") {
		t.Fatalf("err = %v", err)
	}
	if _, err := s.Say(context.Background(), "Good again.", ""); err != nil {
		t.Fatal(err)
	}
	_ = tts.ErrEmpty
}

func TestHandleWithTone(t *testing.T) {
	s := &Speaker{TTS: tone.Engine{}, Out: &null.Output{}}
	res, err := s.Handle(context.Background(), "kyoko", json.RawMessage(`{"message":"Hi. Bye.","emotion":"happy"}`))
	if err != nil {
		t.Fatal(err)
	}
	if r := res.(protocol.SpeakResult); r.DurationMs <= 0 || r.Engine != "tone" {
		t.Fatalf("result %+v", r)
	}
}

// A held speak prepares and waits: nothing plays before its start, the
// utterance that is playing goes on until then, and a start that comes
// before its speak (queries run concurrently) still starts it.
func TestHeldSpeakWaitsForItsStart(t *testing.T) {
	e := newEvents()
	e.block = map[string]bool{"This one is playing now.": true} // until it is cut off
	s := &Speaker{TTS: e, Out: e}
	ctx := context.Background()
	playing := sayAsync(s, protocol.SpeakRequest{Message: "This one is playing now."})
	e.waitFor(t, "wait This one is playing now.")
	held := sayAsync(s, protocol.SpeakRequest{Message: "Next.", Hold: "t1"})
	e.waitFor(t, "synth Next.")
	waitHeld(t, s, "t1")
	select {
	case r := <-playing:
		t.Fatalf("the held speak cut the playing one off before its start: %v", r.err)
	case r := <-held:
		t.Fatalf("the held speak played without a start: %+v", r)
	default:
	}
	if got, err := s.HandleStart(ctx, "kyoko", json.RawMessage(`{"hold":"t1"}`)); err != nil || !got.(protocol.SpeakStartResult).Started {
		t.Fatalf("start: %v %v", got, err)
	}
	if r := waitSaid(t, playing); !errors.Is(r.err, ErrCutOff) {
		t.Fatalf("the playing one: %v, want cut off once the held one started", r.err)
	}
	if r := waitSaid(t, held); r.err != nil || r.res.DurationMs <= 0 || r.res.StartedAt.IsZero() {
		t.Fatalf("held result %+v", r)
	}

	if got, _ := s.HandleStart(ctx, "kyoko", json.RawMessage(`{"hold":"t2"}`)); got.(protocol.SpeakStartResult).Started {
		t.Fatal("a start for a speak not yet there said it started one")
	}
	if _, err := s.SayRequest(ctx, protocol.SpeakRequest{Message: "Early.", Hold: "t2"}); err != nil {
		t.Fatalf("a speak whose start came first: %v", err)
	}
	s.MaxHold = 30 * time.Millisecond
	if _, err := s.SayRequest(ctx, protocol.SpeakRequest{Message: "Never.", Hold: "t3"}); err == nil || !strings.Contains(err.Error(), "never started") {
		t.Fatalf("a speak never started: %v", err)
	}
	for _, bad := range []string{`{}`, `{"hold":""}`, `{"hold":"x","y":1}`, `[]`} {
		if _, err := s.HandleStart(ctx, "kyoko", json.RawMessage(bad)); err == nil {
			t.Errorf("speak.start %s accepted", bad)
		}
	}
}

// speak.stop at the sentence ends the utterance after the sentence that
// is playing (barge-in); immediate ends it at once.
func TestStopAtTheSentenceOrAtOnce(t *testing.T) {
	ctx := context.Background()
	for _, at := range []string{"sentence", "immediate"} {
		// The first sentence has played; the device's buffer takes the
		// second only once the first is out, which it never is here.
		e := newEvents()
		e.block = map[string]bool{"Second sentence is here.": true}
		s := &Speaker{TTS: e, Out: e}
		done := sayAsync(s, protocol.SpeakRequest{Message: "First sentence is here. Second sentence is here. Third sentence is here."})
		e.waitFor(t, "wait Second sentence is here.")
		if got, err := s.HandleStop(ctx, "user", json.RawMessage(`{"at":"`+at+`"}`)); err != nil || !got.(protocol.SpeakStopResult).Stopped {
			t.Fatalf("stop %s: %v %v", at, got, err)
		}
		r := waitSaid(t, done)
		switch at {
		case "sentence":
			if r.err != nil || !r.res.Stopped || r.res.DurationMs != 10 {
				t.Fatalf("stopped at the sentence: %+v, want the first sentence's 10 ms played", r)
			}
		case "immediate":
			if r.err == nil || r.res.DurationMs != 0 {
				t.Fatalf("stopped at once: %+v, want an error and nothing drained", r)
			}
		}
		if p := e.played(); !slices.Equal(p, []string{"First sentence is here."}) {
			t.Fatalf("played %q", p)
		}
	}
	if _, err := (&Speaker{}).HandleStop(ctx, "user", json.RawMessage(`{"at":"later"}`)); err == nil {
		t.Fatal("speak.stop later accepted")
	}
}

// The body hears of the words as their first samples go out, and of their
// end once they have drained: its actions and face follow the audio.
func TestOnVoiceMarksTheAudio(t *testing.T) {
	tt := &slowTTS{d: 30 * time.Millisecond}
	out := &null.Output{}
	type ev struct {
		id      string
		e       protocol.Emotion
		on      bool
		samples int
	}
	var evs []ev
	s := &Speaker{TTS: tt, Out: out}
	s.OnVoice = func(id string, e protocol.Emotion, on bool) { evs = append(evs, ev{id, e, on, out.Samples()}) }
	if _, err := s.SayRequest(context.Background(), protocol.SpeakRequest{Message: "One. Two.", Emotion: protocol.EmotionHappy, MessageID: "m7"}); err != nil {
		t.Fatal(err)
	}
	if len(evs) != 2 || evs[0] != (ev{"m7", protocol.EmotionHappy, true, 0}) || evs[1].on || evs[1].id != "m7" || evs[1].samples != 3200 {
		t.Fatalf("events %+v", evs)
	}
}
