//go:build portaudio

package portaudio

import (
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/chorus-robotics/chorus/drivers/mic"
)

// ALSA's file plugin stands in for a sound card: capture reads in.raw
// (its infile), as `arecord` does with the same config. ALSA reads its
// config when PortAudio initializes, so TestMain writes it first.
//
// Unlike a sound card, that device has no clock: its slave, the null
// PCM, always has a whole buffer ready, so it delivers the file as fast
// as it is read, and past the file's end the plugin reads nothing into
// its buffer and hands out the last one (960 samples here) again and
// again. A test reads it through realTime, which paces it as a
// microphone is paced.
//
// The file is a chirp (200 Hz to 3 kHz in one second), not a steady tone:
// no stretch of it repeats, so a capture that lost or repeated audio
// cannot line up with it by chance (a 440 Hz tone at 16 kHz repeats
// every 400 samples).
var want []int16

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "chorus-alsa-in-")
	if err != nil {
		panic(err)
	}
	in := filepath.Join(dir, "in.raw")
	want = make([]int16, 16000) // one second
	b := make([]byte, 2*len(want))
	const f0, f1 = 200.0, 3000.0
	for i := range want {
		x := float64(i) / 16000
		want[i] = int16(10000 * math.Sin(2*math.Pi*(f0*x+(f1-f0)*x*x/2)))
		binary.LittleEndian.PutUint16(b[2*i:], uint16(want[i]))
	}
	os.WriteFile(in, b, 0o644)
	os.MkdirAll(filepath.Join(dir, "alsa"), 0o755)
	conf := `pcm.!default { type file slave.pcm "null" file "/dev/null" infile "` + in + `" format "raw" }` + "\n"
	os.WriteFile(filepath.Join(dir, "alsa", "asoundrc"), []byte(conf), 0o644)
	os.Setenv("XDG_CONFIG_HOME", dir)
	code := m.Run()
	if err := goleak.Find(); code == 0 && err != nil { // no goroutine outlives the tests
		fmt.Fprintln(os.Stderr, err)
		code = 1
	}
	os.RemoveAll(dir)
	os.Exit(code)
}

// realTime delivers a Source's samples no sooner than a device with a
// clock at its rate would.
type realTime struct {
	mic.Source
	start time.Time
	n     int // samples delivered since Open
}

func (r *realTime) Open(ctx context.Context) error {
	r.start, r.n = time.Now(), 0
	return r.Source.Open(ctx)
}

func (r *realTime) Read(ctx context.Context, buf []int16) (int, error) {
	n, err := r.Source.Read(ctx, buf)
	r.n += n
	t := time.NewTimer(time.Until(r.start.Add(time.Duration(r.n) * time.Second / time.Duration(r.Rate()))))
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
	return n, err
}

// The device's first half second arrives whole and in order through
// mic.Capture. On the unpaced device a test that fell a few milliseconds
// behind under load found the ring's oldest frames, the file's start,
// dropped for the stale end ("sample 0 (from 0) is -5877, want 0": the
// 440 Hz tone at sample 15,040; issue 27). Paced, the test would have to
// fall the ring's 5 s behind, and a drop is reported as such.
func TestCapturesFromALSA(t *testing.T) {
	c := &mic.Capture{Source: &realTime{Source: &Source{Device: "default"}}}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); c.Run(ctx) }()
	defer func() { cancel(); <-done }()
	var got []int16
	for len(got) < 8000 {
		nctx, ncancel := context.WithTimeout(ctx, 5*time.Second)
		f, err := c.Next(nctx)
		ncancel()
		if err != nil {
			t.Fatalf("next: %v (capture: %v)", err, c.Err())
		}
		if f.Dropped > 0 {
			t.Fatalf("the ring dropped %d frames before frame %d: the test fell %v behind a real-time device", f.Dropped, f.Seq, mic.DefaultBuffer)
		}
		got = append(got, f.Samples...)
	}
	// The file's samples, from its start (PortAudio may prepend silence).
	start := 0
	for start < len(got) && got[start] == 0 && start < 4000 {
		start++
	}
	if start > 0 {
		start-- // want[0] is 0 too
	}
	for i := range 4000 {
		if d := int(got[start+i]) - int(want[i]); d > 1 || d < -1 {
			t.Fatalf("sample %d (from %d) is %d, want %d", i, start, got[start+i], want[i])
		}
	}
}

func TestUnknownDeviceIsAClearError(t *testing.T) {
	s := &Source{Device: "no-such-microphone"}
	err := s.Open(context.Background())
	if err == nil {
		s.Close()
		t.Fatal("opened a device that does not exist")
	}
	s.Close()
	t.Log(err)
}
