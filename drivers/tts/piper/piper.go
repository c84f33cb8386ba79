// Package piper speaks with piper (the neural TTS), an external binary the
// robot builder installs; its path and voice model come from config
// (Debian's "piper" package is an unrelated tool).
package piper

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/chorus-robotics/chorus/drivers/audio"
	"github.com/chorus-robotics/chorus/drivers/tts"
)

// Engine runs piper.
type Engine struct {
	Binary string // path to piper
	Model  string // path to the .onnx voice
	Speed  float64
}

var _ tts.Engine = (*Engine)(nil)

func (e *Engine) Name() string { return "piper" }

// Synthesize implements tts.Engine: text on stdin, a WAV file out.
func (e *Engine) Synthesize(ctx context.Context, text, emotion string) (audio.PCM, error) {
	p, err := tts.Check(text, emotion)
	if err != nil {
		return audio.PCM{}, err
	}
	if e.Binary == "" || e.Model == "" {
		return audio.PCM{}, fmt.Errorf("tts piper: binary and model must be configured")
	}
	dir, err := os.MkdirTemp("", "chorus-piper-")
	if err != nil {
		return audio.PCM{}, fmt.Errorf("tts piper: %w", err)
	}
	defer os.RemoveAll(dir)
	out := filepath.Join(dir, "out.wav")
	speed := e.Speed
	if speed <= 0 {
		speed = 1
	}
	// piper's length scale is the inverse of speed.
	ls := strconv.FormatFloat(1/(speed*p.Speed), 'f', 2, 64)
	line := strings.Join(strings.Fields(text), " ")
	if _, err := tts.Run(ctx, e.Name(), line+"\n", e.Binary, "--model", e.Model, "--output_file", out, "--length_scale", ls); err != nil {
		return audio.PCM{}, err
	}
	b, err := os.ReadFile(out)
	if err != nil {
		return audio.PCM{}, fmt.Errorf("tts piper: no output: %w", err)
	}
	return audio.DecodeWAV(b)
}
