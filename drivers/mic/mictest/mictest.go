// Package mictest makes real speech for tests of hearing: espeak-ng says a
// sentence and sox makes it what a microphone gives (16 kHz mono s16), so a
// test hears a spoken sentence of real length and shape, not a tone; and it
// reads back the WAV files a test's audio was written to.
package mictest

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/chorus-robotics/chorus/drivers/audio"
)

// Need skips t when a program is missing, unless CHORUS_REQUIRE_TTS=1
// (CI), where it fails.
func Need(t testing.TB, bins ...string) {
	t.Helper()
	for _, bin := range bins {
		if _, err := exec.LookPath(bin); err != nil {
			if os.Getenv("CHORUS_REQUIRE_TTS") == "1" {
				t.Fatalf("%s not installed and CHORUS_REQUIRE_TTS=1", bin)
			}
			t.Skipf("%s not installed", bin)
		}
	}
}

// SpeechWAV writes text, spoken by espeak-ng (voice, "" for its default),
// as a 16 kHz mono 16-bit WAV in a temporary folder of t, and returns its
// path.
func SpeechWAV(t testing.TB, voice, text string) string {
	t.Helper()
	Need(t, "espeak-ng", "sox")
	dir := t.TempDir()
	raw, wav := filepath.Join(dir, "raw.wav"), filepath.Join(dir, "speech.wav")
	args := []string{"-w", raw}
	if voice != "" {
		args = append(args, "-v", voice)
	}
	if out, err := exec.Command("espeak-ng", append(args, text)...).CombinedOutput(); err != nil {
		t.Fatalf("espeak-ng: %v: %s", err, out)
	}
	if out, err := exec.Command("sox", raw, "-r", "16000", "-c", "1", "-b", "16", wav).CombinedOutput(); err != nil {
		t.Fatalf("sox: %v: %s", err, out)
	}
	return wav
}

// Speech is text spoken by espeak-ng as 16 kHz mono samples.
func Speech(t testing.TB, voice, text string) []int16 {
	t.Helper()
	pcm := ReadWAV(t, SpeechWAV(t, voice, text))
	if pcm.Rate != 16000 {
		t.Fatalf("spoken WAV is %d Hz, want 16000", pcm.Rate)
	}
	return pcm.Samples
}

// ReadWAV is the audio of a WAV file (spoken, played or recorded by the
// code under test); t fails if it cannot be read or decoded.
func ReadWAV(t testing.TB, path string) audio.PCM {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	pcm, err := audio.DecodeWAV(b)
	if err != nil {
		t.Fatalf("decode %s: %v", path, err)
	}
	return pcm
}
