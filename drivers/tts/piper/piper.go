// Package piper speaks with piper (the neural TTS), an external binary the
// robot builder installs; its path and voice model come from config
// (Debian's "piper" package is an unrelated tool).
package piper

import (
	"context"
	"fmt"
	"strconv"

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
	speed := e.Speed
	if speed <= 0 {
		speed = 1
	}
	// piper's length scale is the inverse of speed.
	ls := strconv.FormatFloat(1/(speed*p.Speed), 'f', 2, 64)
	return tts.RunToWAV(ctx, e.Name(), text, e.Binary, func(out string) []string {
		return []string{"--model", e.Model, "--output_file", out, "--length_scale", ls}
	})
}
