package voiceidtest

import (
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/chorus-robotics/chorus/drivers/audio"
	"github.com/chorus-robotics/chorus/drivers/mic/mictest"
)

// Voice is a person of the tests: an espeak-ng voice at a pitch.
type Voice struct {
	Name    string // the person's identity in the tests
	Variant string // espeak-ng's -v
	Pitch   int    // espeak-ng's -p, 0 to 99
}

// The tests' people: a deep voice, a higher one and a child's (never
// enrolled: the unknown voice).
var (
	Sam = Voice{Name: "sam", Variant: "en+m3", Pitch: 10}
	Mia = Voice{Name: "mia", Variant: "en+f5", Pitch: 50}
	Kid = Voice{Name: "kid", Variant: "en+f5", Pitch: 90}
)

// Sentences the voices say in the tests and the benchmark.
var Sentences = []string{
	"My name is Alice and I live here.",
	"I like green tea in the morning.",
	"What do you remember about me?",
	"The weather is nice today, isn't it?",
	"Please remember my voice.",
	"I have a cat called Momo.",
}

// Say is text in v's voice, 16 kHz mono, with room noise (Gaussian, about
// -36 dBFS) when seed is not 0.
func Say(t testing.TB, v Voice, text string, seed uint64) []int16 {
	t.Helper()
	pcm := mictest.ReadWAV(t, SayWAV(t, v, text, seed))
	return pcm.Samples
}

// SayWAV is Say as a WAV file in a temporary folder of t.
func SayWAV(t testing.TB, v Voice, text string, seed uint64) string {
	t.Helper()
	mictest.Need(t, "espeak-ng", "sox")
	dir := t.TempDir()
	raw, wav := filepath.Join(dir, "raw.wav"), filepath.Join(dir, v.Name+".wav")
	if out, err := exec.Command("espeak-ng", "-w", raw, "-v", v.Variant, "-p", strconv.Itoa(v.Pitch), text).CombinedOutput(); err != nil {
		t.Fatalf("espeak-ng: %v: %s", err, out)
	}
	if out, err := exec.Command("sox", raw, "-r", "16000", "-c", "1", "-b", "16", wav).CombinedOutput(); err != nil {
		t.Fatalf("sox: %v: %s", err, out)
	}
	if seed == 0 {
		return wav
	}
	pcm := mictest.ReadWAV(t, wav)
	pcm.Samples = Noisy(pcm.Samples, seed)
	if err := os.WriteFile(wav, audio.EncodeWAV(pcm), 0o644); err != nil {
		t.Fatal(err)
	}
	return wav
}

// Noisy is pcm with room noise added (Gaussian, about -36 dBFS: a quiet room with a fan).
func Noisy(pcm []int16, seed uint64) []int16 {
	r := rand.New(rand.NewPCG(seed, 7))
	out := make([]int16, len(pcm))
	for i, s := range pcm {
		out[i] = int16(max(-32768, min(32767, int(s)+int(r.NormFloat64()*500))))
	}
	return out
}

func t0() time.Time { return time.Date(2026, 11, 29, 8, 0, 0, 0, time.UTC) }
