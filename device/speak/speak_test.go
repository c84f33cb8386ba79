package speak

import (
	"context"
	"encoding/json"
	"errors"
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

// slowTTS takes d per sentence and records when each call starts.
type slowTTS struct {
	d     time.Duration
	mu    sync.Mutex
	calls []string
	fail  string
}

func (s *slowTTS) Name() string { return "slow" }
func (s *slowTTS) Synthesize(ctx context.Context, text, emotion string) (audio.PCM, error) {
	s.mu.Lock()
	s.calls = append(s.calls, text)
	s.mu.Unlock()
	if text == s.fail {
		return audio.PCM{}, errors.New("tts crashed")
	}
	select {
	case <-time.After(s.d):
	case <-ctx.Done():
		return audio.PCM{}, ctx.Err()
	}
	return audio.PCM{Rate: 16000, Samples: make([]int16, 1600)}, nil
}

func TestFirstAudioBeforeLastSentence(t *testing.T) {
	tt := &slowTTS{d: 30 * time.Millisecond}
	out := &null.Output{}
	var first time.Duration
	s := &Speaker{TTS: tt, Out: out, OnFirstAudio: func(d time.Duration) { first = d }}
	res, err := s.Say(context.Background(), "One. Two. Three.", "")
	if err != nil {
		t.Fatal(err)
	}
	if res.Sentences != 3 || res.DurationMs != 300 || out.Samples() != 4800 {
		t.Fatalf("result %+v, %d samples", res, out.Samples())
	}
	if first >= 80*time.Millisecond {
		t.Fatalf("first audio after %v: it waited for more than the first sentence", first)
	}
}

func TestNewerSpeakCutsOff(t *testing.T) {
	tt := &slowTTS{d: 200 * time.Millisecond}
	s := &Speaker{TTS: tt, Out: &null.Output{}}
	errc := make(chan error, 1)
	go func() { _, err := s.Say(context.Background(), "A long one. With two sentences.", ""); errc <- err }()
	time.Sleep(20 * time.Millisecond)
	if _, err := s.Say(context.Background(), "Stop.", ""); err != nil {
		t.Fatal(err)
	}
	if err := <-errc; !errors.Is(err, ErrCutOff) {
		t.Fatalf("old speak: %v, want ErrCutOff", err)
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
	out := &null.Output{Paced: true}
	s := &Speaker{TTS: tone.Engine{}, Out: out}
	ctx := context.Background()
	playing := make(chan error, 1)
	go func() { _, err := s.Say(ctx, "This one is playing now.", ""); playing <- err }()
	time.Sleep(50 * time.Millisecond)
	held := make(chan protocol.SpeakResult, 1)
	go func() {
		r, err := s.SayRequest(ctx, protocol.SpeakRequest{Message: "Next.", Hold: "t1"})
		if err != nil {
			t.Error(err)
		}
		held <- r
	}()
	time.Sleep(100 * time.Millisecond)
	select {
	case err := <-playing:
		t.Fatalf("the held speak cut the playing one off before its start: %v", err)
	case <-held:
		t.Fatal("the held speak played without a start")
	default:
	}
	if got, err := s.HandleStart(ctx, "kyoko", json.RawMessage(`{"hold":"t1"}`)); err != nil || !got.(protocol.SpeakStartResult).Started {
		t.Fatalf("start: %v %v", got, err)
	}
	if err := <-playing; !errors.Is(err, ErrCutOff) {
		t.Fatalf("the playing one: %v, want cut off once the held one started", err)
	}
	if r := <-held; r.DurationMs <= 0 || r.StartedAt.IsZero() {
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
	three := "First sentence is here. Second sentence is here. Third sentence is here."
	one, err := (&Speaker{TTS: tone.Engine{}, Out: &null.Output{}}).Say(ctx, "First sentence is here.", "")
	if err != nil {
		t.Fatal(err)
	}
	for _, at := range []string{"sentence", "immediate"} {
		s := &Speaker{TTS: tone.Engine{}, Out: &null.Output{Paced: true}}
		done := make(chan protocol.SpeakResult, 1)
		go func() {
			r, err := s.Say(ctx, three, "")
			if err != nil && at == "sentence" {
				t.Error(err)
			}
			done <- r
		}()
		time.Sleep(time.Duration(one.DurationMs/3) * time.Millisecond)
		if got, err := s.HandleStop(ctx, "user", json.RawMessage(`{"at":"`+at+`"}`)); err != nil || !got.(protocol.SpeakStopResult).Stopped {
			t.Fatalf("stop %s: %v %v", at, got, err)
		}
		r := <-done
		switch at {
		case "sentence":
			if !r.Stopped || r.DurationMs < one.DurationMs-5 || r.DurationMs > one.DurationMs+5 {
				t.Fatalf("stopped at the sentence: played %d ms, the first sentence is %d ms (%+v)", r.DurationMs, one.DurationMs, r)
			}
		case "immediate":
			if r.DurationMs >= one.DurationMs {
				t.Fatalf("stopped at once: played %d ms", r.DurationMs)
			}
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
