// Package tts turns text into speech PCM. Engines: espeak (espeak-ng),
// openjtalk (Open JTalk), voicevox (the VOICEVOX engine's HTTP API), piper
// (an external binary), and tone (pure Go beeps, for machines with no TTS).
package tts

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/chorus-robotics/chorus/drivers/audio"
)

// Engine synthesizes one piece of text.
type Engine interface {
	// Synthesize returns the speech for text, said with emotion (neutral,
	// happy, sad, angry; "" means neutral).
	Synthesize(ctx context.Context, text, emotion string) (audio.PCM, error)
	// Name names the engine in logs and errors.
	Name() string
}

// ErrEmpty is returned for text with nothing to say.
var ErrEmpty = errors.New("tts: nothing to say")

// Prosody is how an emotion changes speed and pitch, as factors and offsets
// applied to an engine's configured values.
type Prosody struct {
	Speed float64 // multiply the speaking rate
	Pitch int     // add to the pitch, in the engine's units scaled to 0..100
}

// ProsodyOf maps an emotion to prosody; an unknown emotion is an error.
func ProsodyOf(emotion string) (Prosody, error) {
	switch emotion {
	case "", "neutral":
		return Prosody{Speed: 1, Pitch: 0}, nil
	case "happy":
		return Prosody{Speed: 1.1, Pitch: 15}, nil
	case "sad":
		return Prosody{Speed: 0.85, Pitch: -15}, nil
	case "angry":
		return Prosody{Speed: 1.15, Pitch: 5}, nil
	}
	return Prosody{}, fmt.Errorf("tts: unknown emotion %q (neutral, happy, sad, angry)", emotion)
}

// Check is what every engine does first: text with something to say
// (ErrEmpty otherwise) and a known emotion, turned into prosody.
func Check(text, emotion string) (Prosody, error) {
	if strings.TrimSpace(text) == "" {
		return Prosody{}, ErrEmpty
	}
	return ProsodyOf(emotion)
}

// Run runs a TTS binary with text on stdin and returns its stdout. A missing
// binary, a crash or a non-zero exit is an error that says which and shows
// the end of stderr.
func Run(ctx context.Context, name string, stdin string, bin string, args ...string) ([]byte, error) {
	path, err := exec.LookPath(bin)
	if err != nil {
		return nil, fmt.Errorf("tts %s: binary %q not found: %w", name, bin, err)
	}
	cmd := exec.CommandContext(ctx, path, args...)
	cmd.Stdin = strings.NewReader(stdin)
	var stderr strings.Builder
	cmd.Stderr = &limitWriter{w: &stderr, n: 4096}
	out, err := cmd.Output()
	if err != nil {
		if ctx.Err() != nil {
			return nil, fmt.Errorf("tts %s: %w", name, ctx.Err())
		}
		msg := strings.TrimSpace(stderr.String())
		if len(msg) > 300 {
			msg = msg[len(msg)-300:]
		}
		return nil, fmt.Errorf("tts %s: %s failed: %w: %s", name, bin, err, msg)
	}
	return out, nil
}

type limitWriter struct {
	w interface{ WriteString(string) (int, error) }
	n int
}

func (l *limitWriter) Write(p []byte) (int, error) {
	if l.n > 0 {
		q := p
		if len(q) > l.n {
			q = q[:l.n]
		}
		l.w.WriteString(string(q))
		l.n -= len(q)
	}
	return len(p), nil
}

// RunToWAV runs a TTS binary that writes a WAV file (Open JTalk, piper):
// args gets the path the binary must write to; the text goes on stdin as one
// line. It returns the decoded speech and removes the file.
func RunToWAV(ctx context.Context, name, text, bin string, args func(out string) []string) (audio.PCM, error) {
	dir, err := os.MkdirTemp("", "chorus-"+name+"-")
	if err != nil {
		return audio.PCM{}, fmt.Errorf("tts %s: %w", name, err)
	}
	defer os.RemoveAll(dir)
	out := filepath.Join(dir, "out.wav")
	line := strings.Join(strings.Fields(text), " ") // one utterance per line
	if _, err := Run(ctx, name, line+"\n", bin, args(out)...); err != nil {
		return audio.PCM{}, err
	}
	b, err := os.ReadFile(out)
	if err != nil {
		return audio.PCM{}, fmt.Errorf("tts %s: no output: %w", name, err)
	}
	return audio.DecodeWAV(b)
}

// Available reports whether a binary is on PATH.
func Available(bin string) bool {
	_, err := exec.LookPath(bin)
	return err == nil
}
