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
var want []int16

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "chorus-alsa-in-")
	if err != nil {
		panic(err)
	}
	in := filepath.Join(dir, "in.raw")
	want = make([]int16, 16000) // one second of 440 Hz
	b := make([]byte, 2*len(want))
	for i := range want {
		want[i] = int16(10000 * math.Sin(2*math.Pi*440*float64(i)/16000))
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

func TestCapturesFromALSA(t *testing.T) {
	c := &mic.Capture{Source: &Source{Device: "default"}}
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
