//go:build unix

package command

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/chorus-robotics/chorus/drivers/camera"
	"github.com/chorus-robotics/chorus/drivers/internal/runtest"
	"github.com/chorus-robotics/chorus/runtime/logtest"
)

// counts is an OnBad that counts by kind.
type counts struct {
	mu sync.Mutex
	n  map[string]int
}

func (c *counts) bad(kind string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.n == nil {
		c.n = map[string]int{}
	}
	c.n[kind]++
}

func (c *counts) get(kind string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n[kind]
}

func writeFrame(t *testing.T, w, h int) string {
	p := filepath.Join(t.TempDir(), "frame.jpg")
	if err := os.WriteFile(p, frameJPEG(t, w, h, 0), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func needs(t *testing.T, bin string) {
	if _, err := exec.LookPath(bin); err != nil {
		if os.Getenv("CHORUS_REQUIRE_TOOLS") != "" {
			t.Fatalf("%s is required: %v", bin, err)
		}
		t.Skipf("%s not installed", bin)
	}
}

func capture(t *testing.T, s *Source) *camera.Capture {
	t.Helper()
	c := &camera.Capture{Source: s, MaxBackoff: 200 * time.Millisecond, Log: s.Log}
	runtest.Loop(t, "capture", c.Run)
	return c
}

func waitFrame(t *testing.T, c *camera.Capture, minSeq uint64, within time.Duration) camera.Frame {
	t.Helper()
	deadline := time.Now().Add(within)
	for time.Now().Before(deadline) {
		if f, err := c.Latest(0); err == nil && f.Seq >= minSeq {
			return f
		}
		time.Sleep(10 * time.Millisecond)
	}
	_, err := c.Latest(0)
	t.Fatalf("no frame with seq >= %d within %v: %v", minSeq, within, err)
	return camera.Frame{}
}

// ffmpeg's test source, the way a USB webcam line would run.
func TestFFmpegTestSource(t *testing.T) {
	needs(t, "ffmpeg")
	s := &Source{Command: strings.Fields("ffmpeg -hide_banner -loglevel error -re -f lavfi -i testsrc2=size=640x480:rate=10 -f mjpeg -")}
	c := capture(t, s)
	f := waitFrame(t, c, 3, 20*time.Second)
	if f.Width != 640 || f.Height != 480 || len(f.JPEG) < 1000 {
		t.Fatalf("frame %dx%d, %d bytes", f.Width, f.Height, len(f.JPEG))
	}
	if age := time.Since(f.CapturedAt); age > 2*time.Second {
		t.Fatalf("frame is %v old", age)
	}
}

// Each line of the Bad input list: a clear error or a logged, counted
// recovery, never a hang.
func TestBadPrograms(t *testing.T) {
	frame := writeFrame(t, 320, 240)
	big := filepath.Join(t.TempDir(), "big.jpg")
	bigJPEG := frameJPEG(t, 64, 48, 0)
	for range 4 { // 240 kB of APP1 segments (one holds at most 64 kB)
		bigJPEG = withApp(bigJPEG, make([]byte, 60000))
	}
	if err := os.WriteFile(big, bigJPEG, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Run("garbage then frames", func(t *testing.T) {
		var n counts
		s := &Source{Command: []string{"sh", "-c", "head -c 100000 /dev/urandom; while :; do cat " + frame + "; sleep 0.05; done"}, OnBad: n.bad}
		c := capture(t, s)
		f := waitFrame(t, c, 2, 10*time.Second)
		if f.Width != 320 || n.get("not_jpeg")+n.get("malformed") == 0 {
			t.Fatalf("frame %dx%d, dropped %v", f.Width, f.Height, n.n)
		}
	})
	t.Run("only garbage", func(t *testing.T) {
		var n counts
		s := &Source{Command: []string{"sh", "-c", "while :; do head -c 65536 /dev/urandom; sleep 0.01; done"}, OnBad: n.bad, FirstFrame: 500 * time.Millisecond}
		ctx := context.Background()
		if err := s.Open(ctx); err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		_, err := s.Read(ctx)
		if err == nil || !strings.Contains(err.Error(), "no frame for 500ms") {
			t.Fatalf("read: %v", err)
		}
		if n.get("not_jpeg")+n.get("malformed")+n.get("too_big") == 0 {
			t.Fatal("nothing counted")
		}
	})
	t.Run("floods frames over the cap", func(t *testing.T) {
		var n counts
		var log logtest.Buffer
		s := &Source{Command: []string{"sh", "-c", "while :; do cat " + big + " " + big + " " + frame + "; done"},
			MaxFrame: 100000, OnBad: n.bad, Log: slog.New(slog.NewTextHandler(&log, nil))}
		c := capture(t, s)
		f := waitFrame(t, c, 2, 10*time.Second)
		if f.Width != 320 || len(f.JPEG) > 100000 || n.get("too_big") == 0 {
			t.Fatalf("frame %dx%d %d bytes, dropped %v", f.Width, f.Height, len(f.JPEG), n.n)
		}
		if got := strings.Count(log.String(), "kind=too_big"); got != 1 {
			t.Fatalf("logged %d times, want once per start:\n%s", got, log.String())
		}
	})
	t.Run("one too_big per oversize frame", func(t *testing.T) {
		var n counts
		s := &Source{Command: []string{"sh", "-c", "cat " + big + " " + big + " " + frame + "; sleep 30"}, MaxFrame: 100000, OnBad: n.bad}
		c := capture(t, s)
		f := waitFrame(t, c, 1, 10*time.Second)
		if f.Width != 320 || n.get("too_big") != 2 || n.get("not_jpeg") != 0 || n.get("malformed") != 0 {
			t.Fatalf("frame %dx%d, dropped %v: want too_big twice and nothing else", f.Width, f.Height, n.n)
		}
	})
	t.Run("exits and is restarted", func(t *testing.T) {
		starts := filepath.Join(t.TempDir(), "starts")
		var log logtest.Buffer
		s := &Source{Command: []string{"sh", "-c", "echo x >> " + starts + "; cat " + frame + "; echo 'camera unplugged' >&2; exit 3"},
			Log: slog.New(slog.NewTextHandler(&log, nil))}
		c := capture(t, s)
		waitFrame(t, c, 3, 10*time.Second)
		b, _ := os.ReadFile(starts)
		if n := bytes.Count(b, []byte("x")); n < 3 {
			t.Fatalf("started %d times", n)
		}
		out := log.String()
		if !strings.Contains(out, "exit status 3") || !strings.Contains(out, "camera unplugged") {
			t.Fatalf("the log lacks the exit status and the stderr line:\n%s", out)
		}
	})
	t.Run("stops writing", func(t *testing.T) {
		s := &Source{Command: []string{"sh", "-c", "cat " + frame + "; sleep 1000"}, Stall: 300 * time.Millisecond}
		ctx := context.Background()
		if err := s.Open(ctx); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Read(ctx); err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		_, err := s.Read(ctx)
		if err == nil || !strings.Contains(err.Error(), "no frame for 300ms") {
			t.Fatalf("read: %v", err)
		}
		pid := s.cmd.Process.Pid
		s.Close()
		if d := time.Since(start); d > 3*time.Second {
			t.Fatalf("stall and close took %v", d)
		}
		if !reaped(pid) {
			t.Fatalf("process %d left behind", pid)
		}
	})
	t.Run("missing program", func(t *testing.T) {
		s := &Source{Command: []string{"rpicam-vid-not-installed", "-o", "-"}}
		err := s.Open(context.Background())
		if err == nil || !strings.Contains(err.Error(), "rpicam-vid-not-installed") || !errors.Is(err, exec.ErrNotFound) {
			t.Fatalf("open: %v", err)
		}
		s.Close()
	})
	t.Run("no program", func(t *testing.T) {
		if err := (&Source{}).Open(context.Background()); err == nil {
			t.Fatal("no error")
		}
	})
}

// Close kills the program and what it started, and reaps it: a shell
// whose child holds the pipe does not keep Close waiting.
func TestCloseKillsTheGroup(t *testing.T) {
	pidfile := filepath.Join(t.TempDir(), "pid")
	s := &Source{Command: []string{"sh", "-c", "sleep 1000 & echo $! > " + pidfile + "; wait"}}
	if err := s.Open(context.Background()); err != nil {
		t.Fatal(err)
	}
	var child int
	for deadline := time.Now().Add(5 * time.Second); child == 0 && time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		b, _ := os.ReadFile(pidfile)
		child, _ = strconv.Atoi(strings.TrimSpace(string(b)))
	}
	if child == 0 {
		t.Fatal("the shell never started its child")
	}
	pid := s.cmd.Process.Pid
	done := make(chan struct{})
	go func() { s.Close(); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("Close hangs")
	}
	if !reaped(pid) {
		t.Fatalf("the program %d is a zombie or runs on", pid)
	}
	deadline := time.Now().Add(5 * time.Second)
	for !stopped(child) {
		if time.Now().After(deadline) {
			t.Fatalf("the program's child %d runs on", child)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
}

// reaped: pid is gone (not even a zombie): our child, so nobody else
// reaps it.
func reaped(pid int) bool {
	return syscall.Kill(pid, 0) == syscall.ESRCH
}

// stopped: pid is gone or a zombie (a grandchild is reaped by init).
func stopped(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return true
	}
	f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
	return len(f) > 0 && f[0] == "Z"
}
