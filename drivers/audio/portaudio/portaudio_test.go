//go:build portaudio

package portaudio

import (
	"context"
	"encoding/binary"
	"math"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/chorus-robotics/chorus/drivers/audio"
)

// The ALSA file plugin over null stands in for a sound card: every sample
// PortAudio writes lands in out.raw (NOTES.md). ALSA reads its config when
// PortAudio initializes, so TestMain sets it up first.
var rawPath string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "chorus-alsa-")
	if err != nil {
		panic(err)
	}
	rawPath = filepath.Join(dir, "out.raw")
	os.MkdirAll(filepath.Join(dir, "alsa"), 0o755)
	conf := `pcm.!default { type file slave.pcm "null" file "` + rawPath + `" format "raw" }` + "\n"
	os.WriteFile(filepath.Join(dir, "alsa", "asoundrc"), []byte(conf), 0o644)
	os.Setenv("XDG_CONFIG_HOME", dir)
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

func sine(rate, n int) audio.PCM {
	s := make([]int16, n)
	for i := range s {
		s[i] = int16(10000 * math.Sin(2*math.Pi*440*float64(i)/float64(rate)))
	}
	return audio.PCM{Rate: rate, Samples: s}
}

func readRaw(t *testing.T) []int16 {
	t.Helper()
	b, err := os.ReadFile(rawPath)
	if err != nil {
		t.Fatal(err)
	}
	out := make([]int16, len(b)/2)
	for i := range out {
		out[i] = int16(binary.LittleEndian.Uint16(b[i*2:]))
	}
	return out
}

func TestPlaysThroughALSAIntoAFile(t *testing.T) {
	o := &Output{Device: "default", Rate: 22050, FramesPerBuffer: 512, Prime: 50 * time.Millisecond}
	if err := o.Open(); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	s, err := o.Begin(ctx, "test")
	if err != nil {
		t.Fatal(err)
	}
	tone := sine(22050, 22050) // one second
	if err := s.Write(ctx, tone); err != nil {
		t.Fatal(err)
	}
	d, err := s.Drain(ctx)
	if err != nil {
		t.Fatal(err)
	}
	o.Close() // flush ALSA's file plugin
	prime := 22050 * 50 / 1000
	want := prime + 22050
	want += (512 - want%512) % 512 // the last buffer is padded with silence
	if d != time.Duration(want)*time.Second/22050 {
		t.Fatalf("drain reported %v for %d samples", d, want)
	}
	got := readRaw(t)
	if len(got) < want || len(got) > want+4*512 {
		t.Fatalf("%d samples in the file, want %d (+ at most the stream's own priming)", len(got), want)
	}
	// The tone is there, after the silence: loud, and at 440 Hz (zero crossings).
	var energy float64
	crossings := 0
	var start int
	for start = 0; start < len(got) && got[start] == 0; start++ {
	}
	body := got[start : start+22050-10]
	for i, x := range body {
		energy += float64(x) * float64(x)
		if i > 0 && (body[i-1] < 0) != (x < 0) {
			crossings++
		}
	}
	if rms := math.Sqrt(energy / float64(len(body))); rms < 5000 {
		t.Fatalf("audio is too quiet: rms %.0f", rms)
	}
	if crossings < 860 || crossings > 900 {
		t.Fatalf("%d zero crossings in a second, want ~880 (440 Hz)", crossings)
	}
}

func TestResamplesToTheDeviceRate(t *testing.T) {
	os.Remove(rawPath)
	o := &Output{Rate: 48000, FramesPerBuffer: 480, Prime: -1}
	ctx := context.Background()
	s, err := o.Begin(ctx, "x")
	if err != nil {
		t.Fatal(err)
	}
	s.Write(ctx, sine(16000, 16000)) // one second at 16 kHz
	if d, err := s.Drain(ctx); err != nil || d != time.Second {
		t.Fatalf("drain %v %v, want 1s at 48 kHz", d, err)
	}
	o.Close()
	if n := len(readRaw(t)); n < 48000 || n > 48000+4*480 {
		t.Fatalf("%d samples, want 48000", n)
	}
}

func TestUnknownDeviceIsAClearError(t *testing.T) {
	o := &Output{Device: "no-such-speaker"}
	err := o.Open()
	if err == nil {
		o.Close()
		t.Fatal("opened a device that does not exist")
	}
	t.Log(err)
}
