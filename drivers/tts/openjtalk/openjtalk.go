// Package openjtalk speaks Japanese with Open JTalk, run as a binary: text on
// stdin, a WAV file out (48000 Hz mono). The dictionary and the HTS voice
// default to the paths Debian's open-jtalk-mecab-naist-jdic and
// hts-voice-nitech-jp-atr503-m001 install.
package openjtalk

import (
	"context"
	"fmt"
	"os"
	"strconv"

	"github.com/chorus-robotics/chorus/drivers/audio"
	"github.com/chorus-robotics/chorus/drivers/tts"
)

// Debian's paths.
const (
	DefaultDict  = "/var/lib/mecab/dic/open-jtalk/naist-jdic"
	DefaultVoice = "/usr/share/hts-voice/nitech-jp-atr503-m001/nitech_jp_atr503_m001.htsvoice"
)

// Engine is Open JTalk.
type Engine struct {
	Binary string  // default "open_jtalk"
	Dict   string  // dictionary folder
	Voice  string  // .htsvoice file
	Speed  float64 // speech speed rate, default 1.0
	Pitch  float64 // additional half-tones, default 0
}

var _ tts.Engine = (*Engine)(nil)

func (e *Engine) Name() string { return "open_jtalk" }

// Synthesize implements tts.Engine.
func (e *Engine) Synthesize(ctx context.Context, text, emotion string) (audio.PCM, error) {
	p, err := tts.Check(text, emotion)
	if err != nil {
		return audio.PCM{}, err
	}
	bin, dict, voice, speed := e.Binary, e.Dict, e.Voice, e.Speed
	if bin == "" {
		bin = "open_jtalk"
	}
	if dict == "" {
		dict = DefaultDict
	}
	if voice == "" {
		voice = DefaultVoice
	}
	if speed <= 0 {
		speed = 1
	}
	if _, err := os.Stat(voice); err != nil {
		return audio.PCM{}, fmt.Errorf("tts open_jtalk: voice: %w", err)
	}
	half := e.Pitch + float64(p.Pitch)/5 // emotion pitch in half-tones
	return tts.RunToWAV(ctx, e.Name(), text, bin, func(out string) []string {
		return []string{"-x", dict, "-m", voice, "-ow", out,
			"-r", strconv.FormatFloat(speed*p.Speed, 'f', 2, 64), "-fm", strconv.FormatFloat(half, 'f', 1, 64)}
	})
}
