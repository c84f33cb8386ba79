// Package proc runs the programs the command drivers talk to (a camera
// program writing MJPEG, a player reading PCM): each in a process group of
// its own, so Kill also ends the children of a `sh -c` wrapper that hold
// its pipes, and with the last line it wrote to stderr kept for the error
// that says why it failed.
package proc

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"time"
)

// Command is exec.Command for argv, in a new process group, with its
// stderr going to a fresh Tail.
func Command(argv []string) (*exec.Cmd, *Tail) {
	cmd := exec.Command(argv[0], argv[1:]...)
	t := &Tail{}
	cmd.Stderr = t
	ownGroup(cmd)
	cmd.WaitDelay = time.Second // a grandchild holding stderr open
	return cmd, t
}

// Name is a command driver's name: "command:" and argv's program, or
// "command" when argv is empty.
func Name(argv []string) string {
	if len(argv) == 0 {
		return "command"
	}
	return "command:" + argv[0]
}

// Startable is what a command driver checks before it starts argv: that
// ctx has not ended and that argv names a program. who begins the errors
// ("camera command").
func Startable(ctx context.Context, who string, argv []string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if len(argv) == 0 || argv[0] == "" {
		return fmt.Errorf("%s: no program given", who)
	}
	return nil
}

// StartReading starts argv (Command) with its stdout on a pipe, and
// returns the pipe's read end: it ends (EOF) when the program exits. who
// begins the errors ("camera command").
func StartReading(who string, argv []string) (*exec.Cmd, *Tail, *os.File, error) {
	r, w, err := os.Pipe()
	if err != nil {
		return nil, nil, nil, fmt.Errorf("%s: %w", who, err)
	}
	cmd, tail := Command(argv)
	cmd.Stdout = w
	if err := cmd.Start(); err != nil {
		r.Close()
		w.Close()
		return nil, nil, nil, fmt.Errorf("%s: start %s: %w", who, argv[0], err)
	}
	w.Close() // the program holds the write end
	return cmd, tail, r, nil
}

// Kill kills cmd and, where there are process groups, its group. The
// caller still Waits for it, and calls Kill only before that Wait
// returned (after it, the number may be another process's).
func Kill(cmd *exec.Cmd) {
	if cmd == nil || cmd.Process == nil {
		return
	}
	killGroup(cmd.Process.Pid)
	cmd.Process.Kill()
}

// Reap kills cmd (Kill) unless it has been reaped already, and waits
// until it is: exited is closed once its Wait returns.
func Reap(cmd *exec.Cmd, exited <-chan struct{}) {
	select {
	case <-exited: // reaped: its pid may belong to another process now
	default:
		Kill(cmd) // the whole group: a shell's children hold the pipe too
		<-exited
	}
}

// Ended says why a program that closed its output ended: its exit status
// (status, read once exited is closed) or, when it has not exited within
// 2 s, that it closed its output and runs on; then tail's last line. who
// begins the error ("camera command raspivid").
func Ended(who string, exited <-chan struct{}, status func() error, tail *Tail) error {
	t := time.NewTimer(2 * time.Second)
	defer t.Stop()
	select {
	case <-exited:
	case <-t.C: // closed its stdout but runs on: its Close kills it
		return fmt.Errorf("%s: closed its output%s", who, tail.Suffix())
	}
	if err := status(); err != nil {
		return fmt.Errorf("%s: %w%s", who, err, tail.Suffix())
	}
	return fmt.Errorf("%s: exited%s", who, tail.Suffix())
}

// Tail keeps the last non-empty line written to it (at most 512 bytes of
// it).
type Tail struct {
	mu   sync.Mutex
	cur  []byte
	last string
}

// Write implements io.Writer.
func (t *Tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, b := range p {
		if b == '\n' || b == '\r' {
			if line := strings.TrimSpace(string(t.cur)); line != "" {
				t.last = line
			}
			t.cur = t.cur[:0]
			continue
		}
		if len(t.cur) < 512 {
			t.cur = append(t.cur, b)
		}
	}
	return len(p), nil
}

// String is the last line, or the unfinished one after it.
func (t *Tail) String() string {
	if t == nil {
		return ""
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if line := strings.TrimSpace(string(t.cur)); line != "" {
		return line
	}
	return t.last
}

// Suffix is ` (stderr: "…")` for an error message, or empty.
func (t *Tail) Suffix() string {
	if s := t.String(); s != "" {
		return fmt.Sprintf(" (stderr: %q)", s)
	}
	return ""
}
