//go:build unix

package command_test

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/chorus-robotics/chorus/device/speak"
	"github.com/chorus-robotics/chorus/drivers/audio"
	"github.com/chorus-robotics/chorus/drivers/audio/command"
	"github.com/chorus-robotics/chorus/drivers/tts/tone"
)

func sine(rate int, d time.Duration) audio.PCM {
	n := int(int64(rate) * int64(d) / int64(time.Second))
	p := audio.PCM{Rate: rate, Samples: make([]int16, n)}
	for i := range p.Samples {
		p.Samples[i] = int16(8000 * math.Sin(2*math.Pi*440*float64(i)/float64(rate)))
	}
	return p
}

func catInto(file string) []string { return []string{"sh", "-c", "cat > " + file} }

func needs(t *testing.T, bin string) {
	if _, err := exec.LookPath(bin); err != nil {
		if os.Getenv("CHORUS_REQUIRE_TOOLS") != "" {
			t.Fatalf("%s is required: %v", bin, err)
		}
		t.Skipf("%s not installed", bin)
	}
}

func TestArgv(t *testing.T) {
	got := command.Argv([]string{"aplay", "-q", "-t", "raw", "-f", "S16_LE", "-r", "{rate}", "-c", "1", "--rate={rate}"}, 22050)
	if strings.Join(got, " ") != "aplay -q -t raw -f S16_LE -r 22050 -c 1 --rate=22050" {
		t.Fatal(got)
	}
}

// The program gets every sample, little-endian, at the rate of the first
// chunk; Drain takes as long as the audio plays and reports it.
func TestPipesPCMAndDrainsInRealTime(t *testing.T) {
	dir := t.TempDir()
	file, rateFile := filepath.Join(dir, "out.raw"), filepath.Join(dir, "rate")
	o := &command.Output{Command: []string{"sh", "-c", `echo "$0" > ` + rateFile + `; cat > ` + file, "{rate}"}}
	defer o.Close()
	ctx := context.Background()
	st, err := o.Begin(ctx, "hello")
	if err != nil {
		t.Fatal(err)
	}
	a, b := sine(16000, 300*time.Millisecond), sine(16000, 200*time.Millisecond)
	start := time.Now()
	for _, c := range []audio.PCM{a, b} {
		if err := st.Write(ctx, c); err != nil {
			t.Fatal(err)
		}
	}
	d, err := st.Drain(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if elapsed := time.Since(start); d != 500*time.Millisecond || elapsed < 500*time.Millisecond {
		t.Fatalf("drained after %v reporting %v, want 500ms both", elapsed, d)
	}
	raw, _ := os.ReadFile(file)
	want := append(a.Samples, b.Samples...)
	if len(raw) != 2*len(want) {
		t.Fatalf("%d bytes, want %d", len(raw), 2*len(want))
	}
	for i, x := range want {
		if got := int16(binary.LittleEndian.Uint16(raw[2*i:])); got != x {
			t.Fatalf("sample %d: %d, want %d", i, got, x)
		}
	}
	if r, _ := os.ReadFile(rateFile); strings.TrimSpace(string(r)) != "16000" {
		t.Fatalf("{rate} became %q", r)
	}
}

// A real converter: sox reads the raw PCM as aplay would and writes a WAV
// of the same length, resampled to the configured rate.
func TestSoxAtAFixedRate(t *testing.T) {
	needs(t, "sox")
	wav := filepath.Join(t.TempDir(), "out.wav")
	o := &command.Output{Rate: 8000, Command: []string{"sox", "-q", "-t", "raw", "-r", "{rate}", "-e", "signed", "-b", "16", "-c", "1", "-", wav}}
	defer o.Close()
	ctx := context.Background()
	st, err := o.Begin(ctx, "x")
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Write(ctx, sine(22050, time.Second)); err != nil {
		t.Fatal(err)
	}
	d, err := st.Drain(ctx)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(wav)
	p, err := audio.DecodeWAV(b)
	if err != nil {
		t.Fatal(err)
	}
	if p.Rate != 8000 || len(p.Samples) != 8000 || d != time.Second {
		t.Fatalf("WAV at %d Hz with %d samples, reported %v", p.Rate, len(p.Samples), d)
	}
}

// The Bad input list: a program that exits mid-utterance, fails at the
// end, stops taking audio, or is missing is an error that names it and
// says why, in bounded time, and leaves no process behind.
func TestBadPrograms(t *testing.T) {
	ctx := context.Background()
	for _, c := range []struct {
		name     string
		out      *command.Output
		audio    time.Duration
		want     []string
		notFound bool
		within   time.Duration
	}{
		{"exits mid-utterance", &command.Output{Command: []string{"sh", "-c", "head -c 1000 >/dev/null; echo 'aplay: device busy' >&2; exit 1"}},
			3 * time.Second, []string{"sh: exited mid-utterance", "exit status 1", "aplay: device busy"}, false, 3 * time.Second},
		{"fails at the end", &command.Output{Command: []string{"sh", "-c", "cat >/dev/null; echo 'underrun!!!' >&2; exit 2"}},
			200 * time.Millisecond, []string{"audio command sh", "exit status 2", "underrun!!!"}, false, 3 * time.Second},
		{"stops taking audio", &command.Output{Margin: 200 * time.Millisecond, Command: []string{"sh", "-c", "echo stuck >&2; sleep 1000"}},
			3 * time.Second, []string{"sh: still playing 200ms after the end of the audio", "stuck"}, false, 6 * time.Second},
		// A program that exits 0 without playing: a short utterance fits
		// the pipe, so only what it left unread tells (as every real speak).
		{"exits at once, status 0", &command.Output{Command: []string{"true"}},
			100 * time.Millisecond, []string{"true: exited mid-utterance", "exit status 0"}, false, 3 * time.Second},
		{"takes a little, exits 0", &command.Output{Command: []string{"sh", "-c", "head -c 100 >/dev/null"}},
			100 * time.Millisecond, []string{"sh: exited mid-utterance", "exit status 0"}, false, 3 * time.Second},
		{"takes a little, exits 0, slowly", &command.Output{Command: []string{"sh", "-c", "head -c 100 >/dev/null; sleep 0.3"}},
			100 * time.Millisecond, []string{"sh: exited mid-utterance: exit status 0, leaving ", "ms of the audio unread"}, false, 3 * time.Second},
		{"missing", &command.Output{Command: []string{"aplay-not-installed", "-r", "{rate}"}},
			time.Second, []string{"start aplay-not-installed"}, true, time.Second},
		{"missing, at a fixed rate", &command.Output{Rate: 16000, Command: []string{"aplay-not-installed"}},
			time.Second, []string{"start aplay-not-installed"}, true, time.Second},
	} {
		t.Run(c.name, func(t *testing.T) {
			start := time.Now()
			err := play(ctx, c.out, sine(16000, c.audio))
			c.out.Close()
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
			if c.notFound != errors.Is(err, exec.ErrNotFound) {
				t.Errorf("error %v: not found %v, want %v", err, errors.Is(err, exec.ErrNotFound), c.notFound)
			}
			if d := time.Since(start); d > c.within {
				t.Errorf("took %v, want at most %v", d, c.within)
			}
		})
	}
}

func play(ctx context.Context, o audio.Output, p audio.PCM) error {
	st, err := o.Begin(ctx, "x")
	if err != nil {
		return err
	}
	// In ten chunks, as sentences come.
	n := len(p.Samples) / 10
	for i := range 10 {
		if err := st.Write(ctx, audio.PCM{Rate: p.Rate, Samples: p.Samples[i*n : (i+1)*n]}); err != nil {
			st.Abort()
			return err
		}
	}
	_, err = st.Drain(ctx)
	return err
}

// Abort kills the program at once (a silent speaker) and reaps it; so
// does Close; a cancelled write returns at once.
func TestAbortAndCloseKillAndReap(t *testing.T) {
	ctx := context.Background()
	pidFile := filepath.Join(t.TempDir(), "pid")
	o := &command.Output{Command: []string{"sh", "-c", "echo $$ > " + pidFile + "; exec sleep 1000"}}
	st, err := o.Begin(ctx, "x")
	if err != nil {
		t.Fatal(err)
	}
	// The first sentence goes into the pipe; the next waits, as on a
	// sound card, until the first has nearly played, or its context ends.
	first := time.Now()
	if err := st.Write(ctx, sine(48000, 2*time.Second)); err != nil || time.Since(first) > 500*time.Millisecond {
		t.Fatalf("the first 2 s (192 kB, more than a default pipe) took %v: %v", time.Since(first), err)
	}
	wctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	defer cancel()
	start := time.Now()
	err = st.Write(wctx, sine(48000, time.Second))
	if !errors.Is(err, context.DeadlineExceeded) || time.Since(start) > time.Second {
		t.Fatalf("write: %v after %v", err, time.Since(start))
	}
	pid := readPID(t, pidFile)
	st.Abort()
	if syscall.Kill(pid, 0) != syscall.ESRCH {
		t.Fatalf("the program %d is still there after Abort", pid)
	}
	st.Abort() // idempotent
	if err := st.Write(ctx, sine(16000, time.Millisecond)); !errors.Is(err, command.ErrEnded) {
		t.Fatalf("write after abort: %v", err)
	}

	st, err = o.Begin(ctx, "y")
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Write(ctx, sine(16000, 100*time.Millisecond)); err != nil {
		t.Fatal(err)
	}
	pid = readPID(t, pidFile)
	o.Close()
	if syscall.Kill(pid, 0) != syscall.ESRCH {
		t.Fatalf("the program %d is still there after Close", pid)
	}
	if _, err := o.Begin(ctx, "z"); err == nil {
		t.Fatal("Begin after Close")
	}
}

func readPID(t *testing.T, file string) int {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		b, _ := os.ReadFile(file)
		var pid int
		if _, err := fmt.Sscan(strings.TrimSpace(string(b)), &pid); err == nil && pid > 0 {
			return pid
		}
	}
	t.Fatal("the program never wrote its pid")
	return 0
}

// Through the body's voice: the speak result has a real start, the
// duration played, and comes when the audio has played; an immediate
// stop silences the program within a moment.
func TestSpeakThroughACommand(t *testing.T) {
	file := filepath.Join(t.TempDir(), "out.raw")
	o := &command.Output{Command: catInto(file)}
	defer o.Close()
	s := &speak.Speaker{TTS: tone.Engine{}, Out: o}
	start := time.Now()
	res, err := s.Say(context.Background(), "Hello there. How are you today?", "")
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := os.ReadFile(file)
	played := time.Duration(len(raw)/2) * time.Second / tone.Rate
	if res.DurationMs != played.Milliseconds() || res.DurationMs < 100 || res.StartedAt.IsZero() || res.Sentences != 2 {
		t.Fatalf("result %+v, the program got %v of audio", res, played)
	}
	if elapsed := time.Since(start); elapsed < played {
		t.Fatalf("the result came after %v, before the %v of audio played", elapsed, played)
	}

	// A stop after the sentence: the next sentences never reach the
	// player, the result says stopped and how long was played.
	os.Remove(file)
	go func() {
		time.Sleep(200 * time.Millisecond)
		s.Stop(false)
	}()
	res, err = s.Say(context.Background(), "This is the first sentence of three. This is the second one. And the third.", "")
	if err != nil || !res.Stopped {
		t.Fatalf("stop after the sentence: %+v, %v", res, err)
	}
	one, _ := tone.Engine{}.Synthesize(context.Background(), "This is the first sentence of three.", "")
	raw, _ = os.ReadFile(file)
	if len(raw) != 2*len(one.Samples) || res.DurationMs != one.Duration().Milliseconds() {
		t.Fatalf("the player got %d bytes and the result says %d ms; the first sentence is %d bytes, %v", len(raw), res.DurationMs, 2*len(one.Samples), one.Duration())
	}

	done := make(chan error, 1)
	go func() {
		_, err := s.Say(context.Background(), strings.Repeat("A long sentence that goes on and on. ", 20), "")
		done <- err
	}()
	time.Sleep(300 * time.Millisecond)
	stopAt := time.Now()
	if !s.Stop(true) {
		t.Fatal("nothing was playing")
	}
	select {
	case <-done:
	case <-time.After(2 * time.Second):
		t.Fatal("an immediate stop did not end the speak")
	}
	if d := time.Since(stopAt); d > time.Second {
		t.Fatalf("stopped after %v", d)
	}
}
