// Package program runs a program for an action: the action's arguments
// (JSON) on its stdin, a short text back on its stdout. The program runs
// in a process group of its own (drivers/internal/proc), and the whole
// group is killed when it takes longer than its timeout, when ctx ends or
// when it prints too much.
//
// # Contract
//
//   - stdin: the arguments, as given; then end of file.
//   - stdout: at most MaxOutput bytes of UTF-8 text without NULs; Run
//     returns it with surrounding white space trimmed.
//   - exit status 0 is success; otherwise the error carries the last line
//     the program wrote to stderr (at most 512 bytes).
package program

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os/exec"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/chorus-robotics/chorus/drivers/internal/proc"
)

// MaxOutput is the most a program may print.
const MaxOutput = 4096

// ErrNotFound is what the error for a missing program wraps.
var ErrNotFound = errors.New("program not found")

// Run runs argv with args on its stdin and returns what it printed,
// trimmed. It fails, naming the program, when the program is missing,
// exits non-zero (with the last line of its stderr), does not finish
// within timeout ("did not finish within …", wrapping
// context.DeadlineExceeded), prints more than MaxOutput bytes, or prints
// what is not UTF-8 text or contains NULs. Whatever the outcome, the
// program and what is left of its process group are killed before Run
// returns (a child that left the group is not followed).
func Run(ctx context.Context, argv []string, args []byte, timeout time.Duration) (string, error) {
	if len(argv) == 0 || argv[0] == "" {
		return "", errors.New("program: no program to run")
	}
	name := argv[0]
	if timeout <= 0 {
		return "", fmt.Errorf("program %s: timeout %v: must be more than 0", name, timeout)
	}
	if err := ctx.Err(); err != nil {
		return "", fmt.Errorf("program %s: %w", name, err)
	}
	cmd, stderr := proc.Command(argv)
	cmd.Stdin = bytes.NewReader(args)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return "", fmt.Errorf("program %s: %w", name, err)
	}
	if err := cmd.Start(); err != nil {
		if errors.Is(err, exec.ErrNotFound) || errors.Is(err, fs.ErrNotExist) {
			return "", fmt.Errorf("program %s: %w: %w", name, ErrNotFound, err)
		}
		return "", fmt.Errorf("program %s: start: %w", name, err)
	}

	// The killer kills the group when the timeout passes or ctx ends,
	// until the program has exited; Run waits for it to be gone.
	tctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	exited := make(chan struct{})
	killerDone := make(chan struct{})
	var killed bool
	go func() {
		defer close(killerDone)
		select {
		case <-tctx.Done():
			proc.Kill(cmd)
			killed = true
		case <-exited:
		}
	}()

	out, readErr := io.ReadAll(io.LimitReader(stdout, MaxOutput+1))
	tooMuch := len(out) > MaxOutput
	if tooMuch {
		proc.Kill(cmd) // not reaped yet: the pid is still ours
	}
	// Stop the killer only once the program has exited (unreaped, so a
	// kill cannot reach another process), then end what is left of its
	// group: children that outlived it.
	if proc.AwaitExit(cmd) {
		close(exited)
		<-killerDone
		proc.Kill(cmd)
	}
	waitErr := cmd.Wait()
	select {
	case <-killerDone:
	default: // where AwaitExit cannot wait
		close(exited)
		<-killerDone
	}

	switch {
	case killed && ctx.Err() != nil:
		return "", fmt.Errorf("program %s: %w", name, ctx.Err())
	case killed:
		return "", fmt.Errorf("program %s: did not finish within %v: %w", name, timeout, context.DeadlineExceeded)
	case tooMuch:
		return "", fmt.Errorf("program %s: printed more than %d bytes", name, MaxOutput)
	case waitErr != nil:
		var exit *exec.ExitError
		if errors.As(waitErr, &exit) && exit.Exited() {
			return "", fmt.Errorf("program %s: exit status %d%s", name, exit.ExitCode(), stderr.Suffix())
		}
		return "", fmt.Errorf("program %s: %w%s", name, waitErr, stderr.Suffix())
	case readErr != nil:
		return "", fmt.Errorf("program %s: read output: %w", name, readErr)
	case !utf8.Valid(out) || bytes.IndexByte(out, 0) >= 0:
		return "", fmt.Errorf("program %s: printed binary output, not UTF-8 text", name)
	}
	return strings.TrimSpace(string(out)), nil
}
