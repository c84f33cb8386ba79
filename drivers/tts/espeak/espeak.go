// Package espeak speaks with espeak-ng, run as a binary: text on stdin, WAV
// on stdout (22050 Hz mono). Voice, speed (words per minute) and pitch
// (0-99) come from config; emotion shifts speed and pitch.
package espeak

import (
	"context"
	"strconv"

	"github.com/chorus-robotics/chorus/drivers/audio"
	"github.com/chorus-robotics/chorus/drivers/tts"
)

// Engine is espeak-ng.
type Engine struct {
	Binary string // default "espeak-ng"
	Voice  string // e.g. "en-us", "ja"; default "en"
	Speed  int    // words per minute, default 175
	Pitch  int    // 0..99, default 50
}

var _ tts.Engine = (*Engine)(nil)

// DefaultSpeed is espeak-ng's own speed, in words a minute.
const DefaultSpeed = 175

func (e *Engine) Name() string { return "espeak-ng" }

// Synthesize implements tts.Engine.
func (e *Engine) Synthesize(ctx context.Context, text, emotion string) (audio.PCM, error) {
	p, err := tts.Check(text, emotion)
	if err != nil {
		return audio.PCM{}, err
	}
	bin, voice, speed, pitch := e.Binary, e.Voice, e.Speed, e.Pitch
	if bin == "" {
		bin = "espeak-ng"
	}
	if voice == "" {
		voice = "en"
	}
	if speed <= 0 {
		speed = DefaultSpeed
	}
	if pitch <= 0 {
		pitch = 50
	}
	speed = int(float64(speed) * p.Speed)
	pitch = min(99, max(0, pitch+p.Pitch))
	out, err := tts.Run(ctx, e.Name(), text, bin, "--stdin", "--stdout", "-v", voice,
		"-s", strconv.Itoa(speed), "-p", strconv.Itoa(pitch))
	if err != nil {
		return audio.PCM{}, err
	}
	pcm, err := audio.DecodeWAV(out)
	if err != nil {
		return audio.PCM{}, err
	}
	return pcm, nil
}
