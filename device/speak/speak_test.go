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
)

func TestDecodeRequest(t *testing.T) {
	for name, body := range map[string]string{
		"empty":           `{"message":"  "}`,
		"huge":            `{"message":"` + strings.Repeat("あ", 2001) + `"}`,
		"unknown emotion": `{"message":"hi","emotion":"ecstatic"}`,
		"unknown field":   `{"message":"hi","volume":11}`,
		"not json":        `hi`,
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
	if r := res.(Result); r.DurationMs <= 0 || r.Engine != "tone" {
		t.Fatalf("result %+v", r)
	}
}
