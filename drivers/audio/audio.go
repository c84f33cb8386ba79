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
// enough for a TTS rate that differs from the device's).
func Resample(p PCM, rate int) PCM {
	if p.Rate == rate || p.Rate <= 0 || rate <= 0 || len(p.Samples) == 0 {
		return PCM{Rate: rate, Samples: p.Samples}
	}
	n := int(int64(len(p.Samples)) * int64(rate) / int64(p.Rate))
	out := make([]int16, n)
	step := float64(p.Rate) / float64(rate)
	last := len(p.Samples) - 1
	for i := range out {
		x := float64(i) * step
		j := int(x)
		if j >= last {
			out[i] = p.Samples[last]
			continue
		}
		f := x - float64(j)
		out[i] = int16(float64(p.Samples[j])*(1-f) + float64(p.Samples[j+1])*f)
	}
	return PCM{Rate: rate, Samples: out}
}
