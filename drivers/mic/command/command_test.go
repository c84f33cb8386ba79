//go:build unix

package command

import (
	"context"
	"encoding/binary"
	"errors"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/chorus-robotics/chorus/drivers/internal/runtest"
	"github.com/chorus-robotics/chorus/drivers/mic"
)

func needs(t *testing.T, bin, env string) {
	if _, err := exec.LookPath(bin); err != nil {
		if os.Getenv(env) != "" {
			t.Fatalf("%s is required (%s): %v", bin, env, err)
		}
		t.Skipf("%s not installed", bin)
	}
}

// rawFile writes samples as s16le into a temporary file, plus extra bytes.
func rawFile(t *testing.T, samples []int16, extra ...byte) string {
	b := make([]byte, 2*len(samples))
	for i, s := range samples {
		binary.LittleEndian.PutUint16(b[2*i:], uint16(s))
	}
	p := filepath.Join(t.TempDir(), "in.raw")
	if err := os.WriteFile(p, append(b, extra...), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func ramp(n int) []int16 {
	s := make([]int16, n)
	for i := range s {
		s[i] = int16(i*7 - 3000)
	}
	return s
}

// readN reads until n samples or an error.
func readN(t *testing.T, s *Source, n int) ([]int16, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var out []int16
	buf := make([]int16, 320)
	for len(out) < n {
		k, err := s.Read(ctx, buf)
		out = append(out, buf[:k]...)
		if err != nil {
			return out, err
		}
	}
	return out, nil
}

func open(t *testing.T, s *Source) {
	t.Helper()
	if err := s.Open(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
}

func TestPrograms(t *testing.T) {
	want := ramp(5000)
	f := rawFile(t, want)
	// The same bytes, split inside a sample.
	split := "head -c 3 " + f + "; sleep 0.1; tail -c +4 " + f
	for _, c := range []struct {
		name    string
		script  string
		samples int      // read this many
		errHas  []string // then expect an error with these
	}{
		{"writes PCM and stays", "cat " + f + "; sleep 30", 5000, nil},
		{"splits a sample across writes", split + "; sleep 30", 5000, nil},
		{"exits mid-stream", "cat " + f + "; echo 'mic unplugged' >&2; exit 3", 5000, []string{"mic command sh: exit status 3", `(stderr: "mic unplugged")`}},
		{"exits cleanly", "cat " + f, 5000, []string{"mic command sh: exited"}},
		{"odd byte at the end", "cat " + f + "; printf x", 5000, []string{"exited"}},
		{"stops writing", "cat " + f + "; echo 'device busy' >&2; sleep 30", 5000, []string{"no audio for 300ms", "device busy"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := &Source{Command: []string{"sh", "-c", c.script}, ReadTimeout: 300 * time.Millisecond}
			open(t, s)
			got, err := readN(t, s, c.samples)
			if len(got) != c.samples || err != nil {
				t.Fatalf("%d samples, %v", len(got), err)
			}
			for i := range got {
				if got[i] != want[i] {
					t.Fatalf("sample %d is %d, want %d", i, got[i], want[i])
				}
			}
			if c.errHas == nil {
				return
			}
			_, err = readN(t, s, 1)
			if err == nil {
				t.Fatal("no error after the end")
			}
			for _, w := range c.errHas {
				if !strings.Contains(err.Error(), w) {
					t.Fatalf("error %q lacks %q", err, w)
				}
			}
		})
	}
}

func TestMissingProgram(t *testing.T) {
	s := &Source{Command: []string{"no-such-recorder", "-q"}}
	err := s.Open(context.Background())
	if err == nil || !strings.Contains(err.Error(), "no-such-recorder") {
		t.Fatalf("open: %v", err)
	}
	if err := (&Source{}).Open(context.Background()); err == nil {
		t.Fatal("opened no program")
	}
}

// "{rate}" becomes the rate; Close kills a shell's children too.
func TestRateAndClose(t *testing.T) {
	dir := t.TempDir()
	rate := filepath.Join(dir, "rate")
	s := &Source{Command: []string{"sh", "-c", `echo "$0" > ` + rate + `; cat /dev/zero | cat`, "-r{rate}"}, SampleRate: 8000}
	open(t, s)
	if _, err := readN(t, s, 8000); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(rate); strings.TrimSpace(string(b)) != "-r8000" {
		t.Fatalf("the program was given %q", b)
	}
	if s.Rate() != 8000 {
		t.Fatal(s.Rate())
	}
	done := make(chan struct{})
	go func() { s.Close(); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("close hangs on a shell's children")
	}
	s.Close() // idempotent
}

func TestReadHonoursItsContext(t *testing.T) {
	s := &Source{Command: []string{"sleep", "30"}}
	open(t, s)
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	start := time.Now()
	if _, err := s.Read(ctx, make([]int16, 320)); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("read: %v", err)
	}
	if d := time.Since(start); d > time.Second {
		t.Fatalf("returned after %v", d)
	}
}

func capture(t *testing.T, s *Source, buffer time.Duration) *mic.Capture {
	t.Helper()
	c := &mic.Capture{Source: s, Buffer: buffer, MaxBackoff: 200 * time.Millisecond}
	runtest.Loop(t, "capture", c.Run)
	return c
}

func next(t *testing.T, c *mic.Capture) mic.Frame {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	f, err := c.Next(ctx)
	if err != nil {
		t.Fatalf("next: %v (capture: %v)", err, c.Err())
	}
	return f
}

// A program that exits is restarted; Err says why it was lost.
func TestCaptureRestartsAProgramThatExits(t *testing.T) {
	f := rawFile(t, ramp(640))
	starts := filepath.Join(t.TempDir(), "starts")
	s := &Source{Command: []string{"sh", "-c", "echo x >> " + starts + "; cat " + f + "; echo 'usb mic gone' >&2; exit 2"}}
	c := capture(t, s, time.Second)
	for range 6 {
		next(t, c)
	}
	b, _ := os.ReadFile(starts)
	if n := strings.Count(string(b), "x"); n < 3 {
		t.Fatalf("started %d times", n)
	}
	if err := c.Err(); err != nil && !strings.Contains(err.Error(), "usb mic gone") {
		t.Fatalf("err %v", err)
	}
}

// A consumer that stalls while a program floods audio: the capture keeps
// reading, drops the oldest frames and counts them, and holds only its
// ring.
func TestCaptureWithAStalledConsumer(t *testing.T) {
	s := &Source{Command: []string{"cat", "/dev/zero"}}
	c := capture(t, s, 100*time.Millisecond)
	deadline := time.Now().Add(10 * time.Second)
	for c.Dropped() < 2000 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if c.Dropped() < 2000 {
		t.Fatalf("dropped %d frames (err %v)", c.Dropped(), c.Err())
	}
	if f := next(t, c); f.Dropped == 0 {
		t.Fatalf("the consumer was not told it missed frames: %+v", f.Seq)
	}
}

// sox synthesizes a second of 440 Hz as arecord would write it.
func TestSox(t *testing.T) {
	needs(t, "sox", "CHORUS_REQUIRE_TOOLS")
	s := &Source{Command: strings.Fields("sox -q -n -r {rate} -c 1 -b 16 -e signed-integer -t raw - synth 1 sine 440 vol 0.5")}
	open(t, s)
	got, err := readN(t, s, 16000)
	if err != nil || len(got) != 16000 {
		t.Fatalf("%d samples, %v", len(got), err)
	}
	crossings := 0
	for i := 1; i < len(got); i++ {
		if (got[i-1] < 0) != (got[i] < 0) {
			crossings++
		}
	}
	if crossings < 860 || crossings > 900 {
		t.Fatalf("%d zero crossings in a second, want ~880", crossings)
	}
	if _, err := readN(t, s, 1); err == nil || !strings.Contains(err.Error(), "exited") {
		t.Fatalf("after the end: %v", err)
	}
}

// espeak-ng speaks a sentence, resampled to 16 kHz by sox: loud audio
// arrives, as from a person at the microphone.
func TestEspeak(t *testing.T) {
	needs(t, "espeak-ng", "CHORUS_REQUIRE_TTS")
	needs(t, "sox", "CHORUS_REQUIRE_TOOLS")
	s := &Source{Command: []string{"sh", "-c", `espeak-ng --stdout "Hello robots, what is the weather like today?" | sox -q -t wav - -r {rate} -c 1 -b 16 -e signed-integer -t raw -`}}
	open(t, s)
	got, _ := readN(t, s, 16000*10)
	if len(got) < 16000 {
		t.Fatalf("%d samples of speech", len(got))
	}
	var sum float64
	for _, x := range got {
		sum += float64(x) * float64(x)
	}
	if rms := math.Sqrt(sum / float64(len(got))); rms < 300 {
		t.Fatalf("speech rms %.0f", rms)
	}
}

// A read whose context has ended, and the source closed at once
// (mic.Capture stopping): the context's wake-up runs later on its own
// goroutine and must not touch the fields Close clears (-race found it
// in CI). One P, and a program already reaped, so Read and Close run
// without yielding and the wake-up comes after them.
func TestCloseRightAfterACancelledRead(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	s := &Source{Command: []string{"head", "-c", "640", "/dev/zero"}}
	buf := make([]int16, 160)
	for range 20 {
		open(t, s)
		time.Sleep(20 * time.Millisecond) // the program writes, exits and is reaped
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		s.Read(ctx, buf)
		s.Close()
		time.Sleep(time.Millisecond) // the wake-up runs
	}
}
