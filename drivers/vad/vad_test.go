package vad

import (
	"fmt"
	"testing"
	"time"
)

// speechShare is the share of frames of s called speech between from and
// to (from the start of s).
func speechShare(d Detector, s []int16, from, to time.Duration) float64 {
	n, yes := 0, 0
	for _, f := range frames(s) {
		sp := d.IsSpeech(f.Samples)
		if at := f.At.Sub(t0); at >= from && at < to {
			n++
			if sp {
				yes++
			}
		}
	}
	return float64(yes) / float64(max(n, 1))
}

func TestEnergyOnSyntheticSignals(t *testing.T) {
	sec := time.Second
	for _, c := range []struct {
		name     string
		signal   []int16
		from, to time.Duration
		min, max float64 // share of speech frames in [from, to)
	}{
		{"digital silence", silence(10 * sec), 0, 10 * sec, 0, 0},
		{"white noise at -60 dBFS", noise(10*sec, -60, 1), 0, 10 * sec, 0, 0},
		{"white noise at -50 dBFS after silence", cat(silence(sec), noise(9*sec, -50, 2)), 0, 10 * sec, 0, 0.01},
		{"loud white noise (hiss) after quiet", cat(noise(sec, -70, 3), noise(9*sec, -20, 4)), 0, 10 * sec, 0, 0.01},
		{"a steady tone from the start is background", tone(10*sec, 440, -20), 0, 10 * sec, 0, 0},
		{"a tone after silence is heard at first", cat(silence(sec), tone(10*sec, 440, -20)), sec, 2 * sec, 0.9, 1},
		{"then becomes background", cat(silence(sec), tone(20*sec, 440, -20)), 15 * sec, 21 * sec, 0, 0},
		{"speech-like AM noise after silence", cat(silence(sec), speechLike(9*sec, -25, 5)), sec, 10 * sec, 0.4, 1},
		{"speech-like AM noise in low noise", add(noise(10*sec, -60, 6), cat(silence(sec), speechLike(9*sec, -30, 7))), sec, 10 * sec, 0.4, 0.9},
		{"speech-like AM noise too quiet to be heard", cat(silence(sec), speechLike(9*sec, -75, 8)), sec, 10 * sec, 0, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := speechShare(NewEnergy(rate, LowBitrate), c.signal, c.from, c.to)
			if got < c.min || got > c.max {
				t.Fatalf("%.2f of frames are speech, want %.2f-%.2f", got, c.min, c.max)
			}
		})
	}
}

// Frames of 10, 20 and 30 ms at 8 and 16 kHz, as WebRTC's VAD takes.
func TestEnergyFrameSizes(t *testing.T) {
	s := cat(silence(time.Second), speechLike(3*time.Second, -25, 9))
	for _, r := range []int{8000, 16000} {
		for _, ms := range []int{10, 20, 30} {
			t.Run(fmt.Sprintf("%d Hz %d ms", r, ms), func(t *testing.T) {
				// decimate to 8 kHz by taking every other sample (the signal is below 2 kHz)
				in := s
				if r == 8000 {
					in = make([]int16, len(s)/2)
					for i := range in {
						in[i] = s[2*i]
					}
				}
				d := NewEnergy(r, LowBitrate)
				n := r * ms / 1000
				yes, total := 0, 0
				for i := 0; i+n <= len(in); i += n {
					sp := d.IsSpeech(in[i : i+n])
					if i >= r { // after the first second
						total++
						if sp {
							yes++
						}
					} else if sp && i+n <= r {
						t.Fatalf("speech in the silence at sample %d", i)
					}
				}
				if share := float64(yes) / float64(total); share < 0.4 {
					t.Fatalf("%.2f of speech frames heard", share)
				}
			})
		}
	}
}

// A higher mode calls less speech.
func TestModesAreOrdered(t *testing.T) {
	s := add(noise(10*time.Second, -55, 10), cat(silence(time.Second), speechLike(9*time.Second, -45, 11)))
	last := 2.0
	for m := Quality; m <= VeryAggressive; m++ {
		got := speechShare(NewEnergy(rate, m), s, time.Second, 10*time.Second)
		if got > last {
			t.Fatalf("mode %d calls %.2f speech, more than mode %d (%.2f)", m, got, m-1, last)
		}
		last = got
	}
}

// The cost per second of 16 kHz audio in 20 ms frames, and its ratio to
// real time (goal: at most 0.005, for a Pi Zero 2W's budget).
func BenchmarkEnergy(b *testing.B) {
	s := speechLike(time.Second, -25, 12)
	d := NewEnergy(rate, LowBitrate)
	b.ResetTimer()
	start := time.Now()
	for range b.N {
		for i := 0; i+320 <= len(s); i += 320 {
			d.IsSpeech(s[i : i+320])
		}
	}
	b.ReportMetric(float64(time.Since(start))/float64(b.N)/float64(time.Second), "x-realtime")
}
