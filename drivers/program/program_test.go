package program

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"
)

// TestMain fails the package's tests if any goroutine outlives them.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// script writes a /bin/sh script into a temporary folder and returns its
// path.
func script(t *testing.T, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "action.sh")
	if err := os.WriteFile(p, []byte("#!/bin/sh\n"+body+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

// gone waits until pid is no process (or a zombie no one reaped yet).
func gone(pid int) bool {
	for range 200 {
		if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
			return true
		}
		if b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat"); err == nil {
			if f := strings.Fields(string(b)); len(f) > 2 && f[2] == "Z" {
				return true
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
	return false
}

func TestRun(t *testing.T) {
	args := []byte(`{"colour":"orange","pattern":"pulse"}`)
	for _, c := range []struct {
		name    string
		body    string
		timeout time.Duration
		want    string
		wantErr []string
		within  time.Duration
	}{
		{"echoes its stdin", `cat`, 5 * time.Second, string(args), nil, 4 * time.Second},
		{"trimmed", `printf '  done: %s \n\n' "$(cat)"`, 5 * time.Second, "done: " + string(args), nil, 4 * time.Second},
		{"silent", `exit 0`, 5 * time.Second, "", nil, 4 * time.Second},
		{"unicode", `printf 'ça va — 良い 🙂\n'`, 5 * time.Second, "ça va — 良い 🙂", nil, 4 * time.Second},
		{"exactly 4096 bytes", `head -c 4096 /dev/zero | tr '\0' x`, 5 * time.Second, strings.Repeat("x", 4096), nil, 4 * time.Second},
		{"hangs", `sleep 60`, 300 * time.Millisecond, "", []string{"did not finish within 300ms"}, 2 * time.Second},
		{"binary garbage", `printf 'ok\000\001\377'`, 5 * time.Second, "", []string{"binary output", "action.sh"}, 4 * time.Second},
		{"invalid UTF-8", `printf 'caf\351\n'`, 5 * time.Second, "", []string{"not UTF-8 text"}, 4 * time.Second},
		{"prints 1 MB", `head -c 1048576 /dev/zero | tr '\0' a`, 5 * time.Second, "", []string{"printed more than 4096 bytes"}, 4 * time.Second},
		{"prints forever", `yes`, 30 * time.Second, "", []string{"printed more than 4096 bytes"}, 4 * time.Second},
		{"exit 3", "echo 'starting' >&2\necho 'the lamp is unplugged' >&2\nexit 3", 5 * time.Second, "", []string{"exit status 3", `"the lamp is unplugged"`, "action.sh"}, 4 * time.Second},
		{"killed by a signal", `kill -TERM $$`, 5 * time.Second, "", []string{"signal: terminated"}, 4 * time.Second},
		{"a child holds stdout", "sleep 60 &\necho hello", 300 * time.Millisecond, "", []string{"did not finish within 300ms"}, 2 * time.Second},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := script(t, c.body)
			start := time.Now()
			got, err := Run(context.Background(), []string{p}, args, c.timeout)
			if took := time.Since(start); took > c.within {
				t.Fatalf("took %v", took)
			}
			if c.wantErr == nil {
				if err != nil || got != c.want {
					t.Fatalf("Run = %.80q, %v; want %.80q", got, err, c.want)
				}
				return
			}
			if err == nil {
				t.Fatalf("Run = %.80q, no error", got)
			}
			for _, w := range c.wantErr {
				if !strings.Contains(err.Error(), w) {
					t.Fatalf("error %q does not say %q", err, w)
				}
			}
			if got != "" {
				t.Fatalf("output %.80q with an error", got)
			}
		})
	}
}

// The process group goes at the timeout: the script and its child.
func TestTimeoutKillsTheGroup(t *testing.T) {
	pids := filepath.Join(t.TempDir(), "pids")
	p := script(t, `sleep 60 & echo $$ $! > "$1"; wait`)
	_, err := Run(context.Background(), []string{p, pids}, nil, 300*time.Millisecond)
	if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "did not finish within 300ms") {
		t.Fatalf("Run: %v", err)
	}
	b, rerr := os.ReadFile(pids)
	if rerr != nil {
		t.Fatal(rerr)
	}
	for _, f := range strings.Fields(string(b)) {
		pid, _ := strconv.Atoi(f)
		if pid <= 0 || !gone(pid) {
			t.Fatalf("process %s outlived Run", f)
		}
	}
}

// A child that outlives a program that finished is ended too.
func TestFinishedProgramLeavesNoChild(t *testing.T) {
	pids := filepath.Join(t.TempDir(), "pids")
	p := script(t, `sleep 60 >/dev/null 2>&1 & echo $! > "$1"; echo started`)
	got, err := Run(context.Background(), []string{p, pids}, nil, 5*time.Second)
	if err != nil || got != "started" {
		t.Fatalf("Run = %q, %v", got, err)
	}
	b, _ := os.ReadFile(pids)
	pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	if pid <= 0 || !gone(pid) {
		t.Fatalf("child %q outlived Run", b)
	}
}

func TestRunRefuses(t *testing.T) {
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	for _, c := range []struct {
		name    string
		ctx     context.Context
		argv    []string
		timeout time.Duration
		want    string
	}{
		{"no argv", context.Background(), nil, time.Second, "no program"},
		{"empty name", context.Background(), []string{""}, time.Second, "no program"},
		{"missing path", context.Background(), []string{"/nonexistent/chorus-action"}, time.Second, "/nonexistent/chorus-action: program not found"},
		{"missing on PATH", context.Background(), []string{"chorus-no-such-action"}, time.Second, "chorus-no-such-action: program not found"},
		{"no timeout", context.Background(), []string{"/bin/true"}, 0, "timeout 0s"},
		{"cancelled", cancelled, []string{"/bin/true"}, time.Second, "context canceled"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := Run(c.ctx, c.argv, nil, c.timeout)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %v, want %q", err, c.want)
			}
		})
	}
	_, err := Run(context.Background(), []string{"/nonexistent/x"}, nil, time.Second)
	if !errors.Is(err, ErrNotFound) {
		t.Fatalf("missing program: %v does not wrap ErrNotFound", err)
	}
	// A program that is not executable.
	p := filepath.Join(t.TempDir(), "data.txt")
	os.WriteFile(p, []byte("hello"), 0o644)
	if _, err := Run(context.Background(), []string{p}, nil, time.Second); err == nil || !strings.Contains(err.Error(), p) {
		t.Fatalf("not executable: %v", err)
	}
}

func TestCtxCancelKills(t *testing.T) {
	p := script(t, `sleep 60`)
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(100*time.Millisecond, cancel)
	start := time.Now()
	_, err := Run(ctx, []string{p}, nil, time.Minute)
	if !errors.Is(err, context.Canceled) || time.Since(start) > 2*time.Second {
		t.Fatalf("Run: %v after %v", err, time.Since(start))
	}
}

// A program that never reads a large stdin still finishes.
func TestUnreadStdin(t *testing.T) {
	p := script(t, `echo ignored`)
	got, err := Run(context.Background(), []string{p}, make([]byte, 1<<20), 5*time.Second)
	if err != nil || got != "ignored" {
		t.Fatalf("Run = %q, %v", got, err)
	}
}
