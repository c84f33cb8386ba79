// Package audio is the speaker side of the body: PCM in, sound out.
//
// An Output plays utterances. Begin starts one and returns a Stream that
// takes mono 16-bit PCM chunks in order (so the first sentence can play
// while the next is synthesized); Drain returns when every sample has been
// played — not when the last chunk was handed over — and Abort cuts the
// utterance off at once.
//
// Implementations: wav (one WAV file per utterance, pure Go), null
// (discards, counts), portaudio (build tag portaudio).
package audio

import (
	"context"
	"math"
	"time"
)

// PCM is mono signed 16-bit audio at Rate samples per second.
type PCM struct {
	Rate    int
	Samples []int16
}

// Duration is how long p plays.
func (p PCM) Duration() time.Duration {
	if p.Rate <= 0 {
		return 0
	}
	return time.Duration(len(p.Samples)) * time.Second / time.Duration(p.Rate)
}

// Output plays utterances.
type Output interface {
	// Begin starts an utterance; name is a hint for file-backed outputs.
	Begin(ctx context.Context, name string) (Stream, error)
	// Close releases the device; it is idempotent.
	Close() error
}

// Stream is one utterance being played.
type Stream interface {
	// Write queues chunk for playback; it may block while the device's
	// buffer is full, until ctx ends.
	Write(ctx context.Context, chunk PCM) error
	// Drain waits until everything written has played and ends the
	// utterance; it returns the duration played.
	Drain(ctx context.Context) (time.Duration, error)
	// Abort stops playback now and ends the utterance.
	Abort()
}

// Resample converts p to rate by linear interpolation (speech quality;
// enough for a TTS rate that differs from the device's). Going down, the
// sound above the new rate's half is filtered out first: folded back
// (aliased) it garbles speech enough that a recogniser no longer knows
// "what time is it" in espeak-ng's 22050 Hz speech brought to 16 kHz.
func Resample(p PCM, rate int) PCM {
	if p.Rate == rate || p.Rate <= 0 || rate <= 0 || len(p.Samples) == 0 {
		return PCM{Rate: rate, Samples: p.Samples}
	}
	src := p.Samples
	if rate < p.Rate {
		src = lowPass(src, 0.45*float64(rate)/float64(p.Rate))
	}
	n := int(int64(len(src)) * int64(rate) / int64(p.Rate))
	out := make([]int16, n)
	step := float64(p.Rate) / float64(rate)
	last := len(src) - 1
	for i := range out {
		x := float64(i) * step
		j := int(x)
		if j >= last {
			out[i] = src[last]
			continue
		}
		f := x - float64(j)
		out[i] = int16(float64(src[j])*(1-f) + float64(src[j+1])*f)
	}
	return PCM{Rate: rate, Samples: out}
}

// lowPassTaps is the length of lowPass's filter: 63 taps, a transition of
// about a tenth of the rate, ~60 multiplications a sample.
const lowPassTaps = 63

// lowPass filters s with a windowed-sinc (Blackman) low-pass whose cutoff
// is cut, a fraction of the sample rate (below 0.5).
func lowPass(s []int16, cut float64) []int16 {
	var h [lowPassTaps]float64
	m := float64(lowPassTaps - 1)
	sum := 0.0
	for i := range h {
		x := float64(i) - m/2
		v := 2 * cut
		if x != 0 {
			v = math.Sin(2*math.Pi*cut*x) / (math.Pi * x)
		}
		w := 0.42 - 0.5*math.Cos(2*math.Pi*float64(i)/m) + 0.08*math.Cos(4*math.Pi*float64(i)/m)
		h[i] = v * w
		sum += h[i]
	}
	out := make([]int16, len(s))
	half := lowPassTaps / 2
	for i := range s {
		acc := 0.0
		for k := range h {
			j := min(max(i+k-half, 0), len(s)-1) // the edges held, not zeros: a steady sound stays steady
			acc += h[k] * float64(s[j])
		}
		acc /= sum
		out[i] = int16(max(-32768, min(32767, math.Round(acc))))
	}
	return out
}
