package file

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chorus-robotics/chorus/drivers/audio"
	"github.com/chorus-robotics/chorus/drivers/internal/runtest"
	"github.com/chorus-robotics/chorus/drivers/mic"
)

func ramp(n int) []int16 {
	s := make([]int16, n)
	for i := range s {
		s[i] = int16(i + 1)
	}
	return s
}

// readAll reads until EOF or max samples, in 20 ms reads.
func readAll(t *testing.T, s *Source, max int) ([]int16, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var out []int16
	buf := make([]int16, 320)
	for len(out) < max {
		n, err := s.Read(ctx, buf)
		out = append(out, buf[:n]...)
		if err != nil {
			return out, err
		}
	}
	return out, nil
}

func TestPlays(t *testing.T) {
	for _, c := range []struct {
		name    string
		src     *Source
		max     int
		want    func(i int) int16
		wantLen int
		eof     bool
	}{
		{"once, then EOF", FromSamples(16000, ramp(1000)), 5000,
			func(i int) int16 { return int16(i + 1) }, 1000, true},
		{"then silence, then EOF", &Source{Samples: ramp(1000), SamplesRate: 16000, Silence: 100 * time.Millisecond}, 5000,
			func(i int) int16 {
				if i < 1000 {
					return int16(i + 1)
				}
				return 0
			}, 2600, true},
		{"looped", &Source{Samples: ramp(1000), SamplesRate: 16000, Loop: true}, 3200,
			func(i int) int16 { return int16(i%1000 + 1) }, 3200, false},
		{"looped with silence between", &Source{Samples: ramp(100), SamplesRate: 16000, Loop: true, Silence: 10 * time.Millisecond}, 1000,
			func(i int) int16 {
				if i%260 < 100 {
					return int16(i%260 + 1)
				}
				return 0
			}, 1000, false},
		{"silence forever", &Source{Samples: ramp(100), Silence: Forever}, 1000,
			func(i int) int16 {
				if i < 100 {
					return int16(i + 1)
				}
				return 0
			}, 1000, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			if err := c.src.Open(context.Background()); err != nil {
				t.Fatal(err)
			}
			defer c.src.Close()
			got, err := readAll(t, c.src, c.max)
			if c.eof != errors.Is(err, io.EOF) || (!c.eof && err != nil) {
				t.Fatalf("err %v, want EOF %v", err, c.eof)
			}
			if len(got) < c.wantLen || len(got) > c.wantLen+320 || (c.eof && len(got) != c.wantLen) {
				t.Fatalf("%d samples, want %d", len(got), c.wantLen)
			}
			for i, s := range got[:c.wantLen] {
				if s != c.want(i) {
					t.Fatalf("sample %d is %d, want %d", i, s, c.want(i))
				}
			}
		})
	}
}

// Samples come when their time has come, from Open on.
func TestPacedInRealTime(t *testing.T) {
	s := &Source{Samples: ramp(16000 / 2), SamplesRate: 16000}
	start := time.Now()
	if err := s.Open(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	got, err := readAll(t, s, 1<<20)
	if !errors.Is(err, io.EOF) || len(got) != 8000 {
		t.Fatalf("%d samples, %v", len(got), err)
	}
	if d := time.Since(start); d < 490*time.Millisecond || d > 1500*time.Millisecond {
		t.Fatalf("half a second of audio took %v", d)
	}
}

func TestReadHonoursItsContext(t *testing.T) {
	s := &Source{Silence: Forever}
	if err := s.Open(context.Background()); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancel()
	if _, err := s.Read(ctx, make([]int16, 16000)); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("read a second of audio in 10 ms: %v", err)
	}
}

// A WAV file at another rate is resampled to the rate asked for; a file
// that is not one is a clear error naming it.
func TestWAVFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "a.wav")
	tone := make([]int16, 22050/10) // 100 ms at 22.05 kHz, as espeak-ng writes
	for i := range tone {
		tone[i] = 1000
	}
	if err := os.WriteFile(path, audio.EncodeWAV(audio.PCM{Rate: 22050, Samples: tone}), 0o644); err != nil {
		t.Fatal(err)
	}
	s := New(path)
	if err := s.Open(context.Background()); err != nil {
		t.Fatal(err)
	}
	got, err := readAll(t, s, 1<<20)
	s.Close()
	if !errors.Is(err, io.EOF) || len(got) != 1600 || got[0] != 1000 || got[1599] != 1000 {
		t.Fatalf("%d samples at 16 kHz (%v)", len(got), err)
	}

	bad := filepath.Join(dir, "bad.wav")
	os.WriteFile(bad, []byte("not a wav file at all"), 0o644)
	for _, p := range []string{bad, filepath.Join(dir, "missing.wav")} {
		err := New(p).Open(context.Background())
		if err == nil || !strings.Contains(err.Error(), p) {
			t.Fatalf("open %s: %v", p, err)
		}
	}
}

// Through a Capture: 20 ms frames at the time they were spoken.
func TestThroughCapture(t *testing.T) {
	src := &Source{Samples: ramp(3200), SamplesRate: 16000, Silence: Forever}
	c := &mic.Capture{Source: src}
	runtest.Loop(t, "capture", c.Run)
	start := time.Now()
	for i := range 15 {
		nctx, ncancel := context.WithTimeout(context.Background(), 5*time.Second)
		f, err := c.Next(nctx)
		ncancel()
		if err != nil {
			t.Fatal(err)
		}
		if i < 10 && f.Samples[0] != int16(i*320+1) || i >= 10 && f.Samples[0] != 0 {
			t.Fatalf("frame %d starts with %d", i, f.Samples[0])
		}
		if off := f.At.Sub(start) - time.Duration(i)*mic.FrameDuration; off < -30*time.Millisecond || off > 100*time.Millisecond {
			t.Fatalf("frame %d at +%v", i, f.At.Sub(start))
		}
	}
}
