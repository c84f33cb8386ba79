package voiceidtest

import (
	"math"
	"math/cmplx"
	"sort"
)

// Spectral is a speaker embedding computed from the sound itself, as the
// fake service's model: the shape of the voice's long-term spectrum
// (log energy in 24 bands from 100 Hz to 6 kHz over the voiced frames,
// its mean taken out) and its pitch (the median of the voiced frames'
// autocorrelation pitch, as a soft place on a log scale from 60 to 400
// Hz). It separates espeak-ng's voices, whose pitch and formants differ,
// while the words said change it little: not a real speaker model, but
// computed from the audio it receives, never from a label.
func Spectral(pcm []int16, rate int) []float32 {
	const (
		frame = 512
		bands = 16
		bins  = 16
	)
	if rate <= 0 || len(pcm) < frame {
		return nil
	}
	hop := frame / 2
	edges := make([]float64, bands+1)
	for i := range edges { // log-spaced band edges
		edges[i] = 250 * math.Pow(6000.0/250, float64(i)/bands)
	}
	var energies []float64
	type fr struct {
		bands []float64
		e     float64
		start int
	}
	var frames []fr
	win := make([]float64, frame)
	for i := range win {
		win[i] = 0.5 - 0.5*math.Cos(2*math.Pi*float64(i)/frame)
	}
	buf := make([]complex128, frame)
	for start := 0; start+frame <= len(pcm); start += hop {
		var e float64
		for i := range frame {
			x := float64(pcm[start+i]) / 32768
			e += x * x
			buf[i] = complex(x*win[i], 0)
		}
		fft(buf)
		b := make([]float64, bands)
		for k := 1; k < frame/2; k++ {
			f := float64(k) * float64(rate) / frame
			for j := range bands {
				if f >= edges[j] && f < edges[j+1] {
					b[j] += real(buf[k])*real(buf[k]) + imag(buf[k])*imag(buf[k])
					break
				}
			}
		}
		frames = append(frames, fr{bands: b, e: e, start: start})
		energies = append(energies, e)
	}
	// Voiced: the loudest frames (above a third of the 90th percentile's
	// level): noise between words does not count.
	sorted := append([]float64(nil), energies...)
	sort.Float64s(sorted)
	floor := sorted[len(sorted)*9/10] / 30
	mean := make([]float64, bands)
	var pitches []float64
	n := 0
	for _, f := range frames {
		if f.e < floor || f.e == 0 {
			continue
		}
		n++
		for j, x := range f.bands {
			mean[j] += math.Log(x + 1e-9)
		}
		if p := pitch(pcm[f.start:f.start+frame], rate); p > 0 {
			pitches = append(pitches, p)
		}
	}
	if n == 0 {
		return nil
	}
	// The spectrum's tilt (a straight line through the bands' levels) is
	// every voice's: what is left is the voice's formants.
	var sx, sy, sxx, sxy float64
	for j := range mean {
		mean[j] /= float64(n)
		x := float64(j)
		sx, sy, sxx, sxy = sx+x, sy+mean[j], sxx+x*x, sxy+x*mean[j]
	}
	slope := (bands*sxy - sx*sy) / (bands*sxx - sx*sx)
	icept := (sy - slope*sx) / bands
	out := make([]float32, 0, bands+bins)
	for j, x := range mean {
		out = append(out, float32((x-icept-slope*float64(j))/5))
	}
	p := 0.0
	if len(pitches) > 0 {
		sort.Float64s(pitches)
		p = pitches[len(pitches)/2]
	}
	for i := range bins {
		c := math.Log(60) + (math.Log(400)-math.Log(60))*float64(i)/(bins-1)
		v := 0.0
		if p > 0 {
			d := (math.Log(p) - c) / 0.25
			v = 1.5 * math.Exp(-d*d/2)
		}
		out = append(out, float32(v))
	}
	return out
}

// pitch is the frame's fundamental by autocorrelation, 60 to 400 Hz, or 0
// when it is not voiced.
func pitch(x []int16, rate int) float64 {
	lo, hi := rate/400, rate/60
	if hi >= len(x) {
		return 0
	}
	var r0 float64
	for _, s := range x {
		r0 += float64(s) * float64(s)
	}
	if r0 == 0 {
		return 0
	}
	best, bestLag := 0.0, 0
	for lag := lo; lag <= hi; lag++ {
		var r float64
		for i := 0; i+lag < len(x); i++ {
			r += float64(x[i]) * float64(x[i+lag])
		}
		r /= r0
		if r > best {
			best, bestLag = r, lag
		}
	}
	if best < 0.4 {
		return 0
	}
	return float64(rate) / float64(bestLag)
}

// fft is an in-place radix-2 FFT (len(a) a power of two).
func fft(a []complex128) {
	n := len(a)
	for i, j := 1, 0; i < n; i++ {
		bit := n >> 1
		for ; j&bit != 0; bit >>= 1 {
			j ^= bit
		}
		j ^= bit
		if i < j {
			a[i], a[j] = a[j], a[i]
		}
	}
	for size := 2; size <= n; size <<= 1 {
		w := cmplx.Exp(complex(0, -2*math.Pi/float64(size)))
		for start := 0; start < n; start += size {
			wk := complex(1, 0)
			for k := range size / 2 {
				u, v := a[start+k], a[start+k+size/2]*wk
				a[start+k], a[start+k+size/2] = u+v, u-v
				wk *= w
			}
		}
	}
}
