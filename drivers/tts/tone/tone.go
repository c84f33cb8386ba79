// Package tone is a TTS stand-in that needs nothing installed: it "speaks"
// a soft beep per character (pitch from the character, 60 ms each, quieter
// for pauses), so timing and audio plumbing work on any machine. The demo
// uses it when espeak-ng is missing, and says so in the log.
package tone

import (
	"context"
	"math"
	"unicode"

	"github.com/chorus-robotics/chorus/drivers/audio"
	"github.com/chorus-robotics/chorus/drivers/tts"
)

// Rate is the sample rate of the tones.
const Rate = 16000

// Engine is the tone generator.
type Engine struct{}

var _ tts.Engine = Engine{}

func (Engine) Name() string { return "tone" }

// Synthesize implements tts.Engine.
func (Engine) Synthesize(ctx context.Context, text, emotion string) (audio.PCM, error) {
	p, err := tts.Check(text, emotion)
	if err != nil {
		return audio.PCM{}, err
	}
	per := int(float64(Rate) * 0.06 / p.Speed)
	var out []int16
	for _, r := range text {
		if err := ctx.Err(); err != nil {
			return audio.PCM{}, err
		}
		if unicode.IsSpace(r) || unicode.IsPunct(r) {
			out = append(out, make([]int16, per/2)...)
			continue
		}
		f := 300 + float64(int(r)%24)*25 + float64(p.Pitch)*4
		for i := range per {
			env := math.Sin(math.Pi * float64(i) / float64(per)) // no clicks
			out = append(out, int16(3000*env*math.Sin(2*math.Pi*f*float64(i)/Rate)))
		}
	}
	return audio.PCM{Rate: Rate, Samples: out}, nil
}
