package audio

import (
	"bytes"
	"encoding/binary"
	"math"
	"testing"
	"time"
)

func tone(rate, n int) PCM {
	s := make([]int16, n)
	for i := range s {
		s[i] = int16(8000 * math.Sin(2*math.Pi*440*float64(i)/float64(rate)))
	}
	return PCM{Rate: rate, Samples: s}
}

func TestWAVRoundTrip(t *testing.T) {
	p := tone(22050, 2205)
	got, err := DecodeWAV(EncodeWAV(p))
	if err != nil {
		t.Fatal(err)
	}
	if got.Rate != 22050 || len(got.Samples) != 2205 || got.Samples[100] != p.Samples[100] {
		t.Fatalf("got rate %d, %d samples", got.Rate, len(got.Samples))
	}
	if d := got.Duration(); d != 100*time.Millisecond {
		t.Fatalf("duration %v", d)
	}
}

func TestDecodeWAVStreamedAndStereo(t *testing.T) {
	b := EncodeWAV(tone(16000, 100))
	binary.LittleEndian.PutUint32(b[40:], 0xFFFFFFFF) // espeak-ng --stdout writes this
	if p, err := DecodeWAV(b); err != nil || len(p.Samples) != 100 {
		t.Fatalf("streamed: %v, %d samples", err, len(p.Samples))
	}
	st := EncodeWAV(PCM{Rate: 8000, Samples: []int16{100, 300, -100, -300}})
	binary.LittleEndian.PutUint16(st[22:], 2) // 2 channels: the 4 samples are 2 frames
	binary.LittleEndian.PutUint16(st[32:], 4)
	p, err := DecodeWAV(st)
	if err != nil || len(p.Samples) != 2 || p.Samples[0] != 200 || p.Samples[1] != -200 {
		t.Fatalf("stereo: %v %v", err, p.Samples)
	}
}

func TestDecodeWAVRejects(t *testing.T) {
	good := EncodeWAV(tone(8000, 10))
	eightBit := bytes.Clone(good)
	binary.LittleEndian.PutUint16(eightBit[34:], 8)
	float := bytes.Clone(good)
	binary.LittleEndian.PutUint16(float[20:], 3)
	for name, b := range map[string][]byte{
		"empty": nil, "not riff": []byte("hello world, not a wav file"), "8-bit": eightBit, "float": float,
		"no data": good[:36],
	} {
		if _, err := DecodeWAV(b); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

func TestResample(t *testing.T) {
	p := Resample(tone(22050, 22050), 48000)
	if p.Rate != 48000 || len(p.Samples) != 48000 {
		t.Fatalf("rate %d, %d samples", p.Rate, len(p.Samples))
	}
}

func FuzzDecodeWAV(f *testing.F) {
	f.Add(EncodeWAV(tone(22050, 64)))
	f.Add([]byte("RIFF\x00\x00\x00\x00WAVEfmt \x10\x00\x00\x00"))
	f.Fuzz(func(t *testing.T, b []byte) {
		p, err := DecodeWAV(b)
		if err == nil && (p.Rate < 1000 || p.Rate > 384000) {
			t.Fatalf("accepted rate %d", p.Rate)
		}
	})
}

// Going down in rate, sound above the new rate's half is filtered out,
// not folded back into the speech band (a 10 kHz tone at 22050 Hz would
// come back as a 6 kHz one at 16 kHz); sound below it keeps its level.
func TestResampleDoesNotAlias(t *testing.T) {
	tone := func(freq float64) PCM {
		p := PCM{Rate: 22050, Samples: make([]int16, 22050)}
		for i := range p.Samples {
			p.Samples[i] = int16(10000 * math.Sin(2*math.Pi*freq*float64(i)/22050))
		}
		return p
	}
	rms := func(s []int16) float64 {
		sum := 0.0
		for _, v := range s[200 : len(s)-200] {
			sum += float64(v) * float64(v)
		}
		return math.Sqrt(sum / float64(len(s)-400))
	}
	in := rms(tone(1000).Samples)
	if kept := rms(Resample(tone(1000), 16000).Samples); math.Abs(kept/in-1) > 0.05 {
		t.Errorf("a 1 kHz tone kept %.2f of its level, want 1", kept/in)
	}
	if folded := rms(Resample(tone(10000), 16000).Samples); folded/in > 0.03 {
		t.Errorf("a 10 kHz tone came back at %.3f of its level (aliased), want under 0.03", folded/in)
	}
	if up := Resample(tone(1000), 48000); len(up.Samples) != 48000 || math.Abs(rms(up.Samples)/in-1) > 0.05 {
		t.Errorf("up to 48 kHz: %d samples, level %.2f", len(up.Samples), rms(up.Samples)/in)
	}
}
