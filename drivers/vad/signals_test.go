package vad

import (
	"math"
	"math/rand/v2"
	"time"

	"github.com/chorus-robotics/chorus/drivers/mic"
)

const rate = 16000

func samples(d time.Duration) int { return int(int64(d) * rate / int64(time.Second)) }

func dbToAmp(db float64) float64 { return 32768 * math.Pow(10, db/20) }

func silence(d time.Duration) []int16 { return make([]int16, samples(d)) }

// noise is white noise at an RMS level in dBFS.
func noise(d time.Duration, db float64, seed uint64) []int16 {
	r := rand.New(rand.NewPCG(seed, 1))
	a := dbToAmp(db)
	out := make([]int16, samples(d))
	for i := range out {
		out[i] = int16(max(-32768, min(32767, r.NormFloat64()*a)))
	}
	return out
}

// tone is a sine of frequency hz at a peak level in dBFS.
func tone(d time.Duration, hz, db float64) []int16 {
	a := dbToAmp(db)
	out := make([]int16, samples(d))
	for i := range out {
		out[i] = int16(a * math.Sin(2*math.Pi*hz*float64(i)/rate))
	}
	return out
}

// speechLike is noise low-passed toward a voiced spectrum (centroid
// below 1 kHz), its envelope opening and closing four times a second like
// syllables, at a peak RMS level in dBFS.
func speechLike(d time.Duration, db float64, seed uint64) []int16 {
	r := rand.New(rand.NewPCG(seed, 2))
	out := make([]int16, samples(d))
	a := dbToAmp(db) * 3
	var y1, y2 float64
	for i := range out {
		// two one-pole low-passes at ~600 Hz
		y1 += 0.2 * (r.NormFloat64() - y1)
		y2 += 0.2 * (y1 - y2)
		env := math.Abs(math.Sin(2 * math.Pi * 2 * float64(i) / rate))
		out[i] = int16(max(-32768, min(32767, a*env*y2)))
	}
	return out
}

func cat(parts ...[]int16) []int16 {
	var out []int16
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}

func add(a, b []int16) []int16 {
	out := make([]int16, max(len(a), len(b)))
	for i := range out {
		var v int32
		if i < len(a) {
			v += int32(a[i])
		}
		if i < len(b) {
			v += int32(b[i])
		}
		out[i] = int16(max(-32768, min(32767, v)))
	}
	return out
}

var t0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

// frames cuts s into 20 ms frames from t0.
func frames(s []int16) []mic.Frame {
	const n = rate / 50
	var out []mic.Frame
	for i := 0; i+n <= len(s); i += n {
		out = append(out, mic.Frame{Samples: s[i : i+n], Rate: rate, At: t0.Add(time.Duration(i) * time.Second / rate), Seq: uint64(len(out) + 1)})
	}
	return out
}
