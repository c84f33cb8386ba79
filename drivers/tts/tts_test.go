package tts_test

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/chorus-robotics/chorus/drivers/audio"
	"github.com/chorus-robotics/chorus/drivers/tts"
	"github.com/chorus-robotics/chorus/drivers/tts/espeak"
	"github.com/chorus-robotics/chorus/drivers/tts/openjtalk"
	"github.com/chorus-robotics/chorus/drivers/tts/tone"
)

// need skips when bin is missing, unless CHORUS_REQUIRE_TTS=1 (CI).
func need(t *testing.T, bin string) {
	t.Helper()
	if !tts.Available(bin) {
		if os.Getenv("CHORUS_REQUIRE_TTS") == "1" {
			t.Fatalf("%s not installed and CHORUS_REQUIRE_TTS=1", bin)
		}
		t.Skipf("%s not installed", bin)
	}
}

// rms is the loudness of p, 0 for silence.
func rms(p audio.PCM) float64 {
	var s float64
	for _, x := range p.Samples {
		s += float64(x) * float64(x)
	}
	if len(p.Samples) == 0 {
		return 0
	}
	return s / float64(len(p.Samples))
}

func check(t *testing.T, p audio.PCM, rate int, minDur, maxDur time.Duration) {
	t.Helper()
	if p.Rate != rate {
		t.Fatalf("rate %d, want %d", p.Rate, rate)
	}
	if d := p.Duration(); d < minDur || d > maxDur {
		t.Fatalf("duration %v, want %v..%v", d, minDur, maxDur)
	}
	if rms(p) < 1000 {
		t.Fatalf("audio is (nearly) silent: mean square %.0f", rms(p))
	}
}

func TestEspeakEnglishAndJapanese(t *testing.T) {
	need(t, "espeak-ng")
	e := &espeak.Engine{Voice: "en-us"}
	p, err := e.Synthesize(context.Background(), "Hello, I am Kyoko. Nice to meet you.", "happy")
	if err != nil {
		t.Fatal(err)
	}
	check(t, p, 22050, time.Second, 6*time.Second)
	ja := &espeak.Engine{Voice: "ja"}
	p, err = ja.Synthesize(context.Background(), "こんにちは", "")
	if err != nil {
		t.Fatal(err)
	}
	check(t, p, 22050, 200*time.Millisecond, 5*time.Second)
}

func TestEspeakEmotionChangesSpeed(t *testing.T) {
	need(t, "espeak-ng")
	e := &espeak.Engine{}
	text := "The weather is lovely today, shall we go for a walk?"
	sad, err := e.Synthesize(context.Background(), text, "sad")
	if err != nil {
		t.Fatal(err)
	}
	angry, err := e.Synthesize(context.Background(), text, "angry")
	if err != nil {
		t.Fatal(err)
	}
	if sad.Duration() <= angry.Duration() {
		t.Fatalf("sad %v is not slower than angry %v", sad.Duration(), angry.Duration())
	}
}

func TestOpenJTalkJapanese(t *testing.T) {
	need(t, "open_jtalk")
	if _, err := os.Stat(openjtalk.DefaultVoice); err != nil {
		if os.Getenv("CHORUS_REQUIRE_TTS") == "1" {
			t.Fatalf("HTS voice missing: %v", err)
		}
		t.Skip("HTS voice not installed")
	}
	e := &openjtalk.Engine{}
	p, err := e.Synthesize(context.Background(), "こんにちは、今日はいい天気ですね。", "neutral")
	if err != nil {
		t.Fatal(err)
	}
	check(t, p, 48000, time.Second, 8*time.Second)
}

func TestBadInput(t *testing.T) {
	ctx := context.Background()
	engines := []tts.Engine{tone.Engine{}, &espeak.Engine{Binary: "/nonexistent/espeak-ng"}, &openjtalk.Engine{Binary: "/nonexistent/open_jtalk"}}
	for _, e := range engines {
		if _, err := e.Synthesize(ctx, "   ", ""); !errors.Is(err, tts.ErrEmpty) {
			t.Errorf("%s: empty text: %v", e.Name(), err)
		}
		if _, err := e.Synthesize(ctx, "hi", "ecstatic"); err == nil || !strings.Contains(err.Error(), "unknown emotion") {
			t.Errorf("%s: unknown emotion: %v", e.Name(), err)
		}
	}
	_, err := (&espeak.Engine{Binary: "/nonexistent/espeak-ng"}).Synthesize(ctx, "hi", "")
	if err == nil || !strings.Contains(err.Error(), "not found") {
		t.Fatalf("missing binary: %v", err)
	}
	// A binary that crashes: false exits 1 with no output.
	_, err = (&espeak.Engine{Binary: "false"}).Synthesize(ctx, "hi", "")
	if err == nil || !strings.Contains(err.Error(), "failed") {
		t.Fatalf("crashing binary: %v", err)
	}
}

func TestTone(t *testing.T) {
	p, err := tone.Engine{}.Synthesize(context.Background(), "hello there", "")
	if err != nil {
		t.Fatal(err)
	}
	check(t, p, tone.Rate, 500*time.Millisecond, time.Second)
}
