package program

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// A program outlives nothing: when chorusd is killed with -9 mid-action,
// the kernel ends the program it ran (the test kills a copy of itself
// that runs one).
func TestProgramDiesWithChorusd(t *testing.T) {
	if os.Getenv("CHORUS_PROGRAM_CHILD") != "" {
		Run(context.Background(), []string{"sh", "-c", "echo $$ > " + os.Getenv("CHORUS_PROGRAM_CHILD") + "; exec sleep 60"}, []byte("{}"), time.Minute)
		return
	}
	pidFile := filepath.Join(t.TempDir(), "pid")
	child := exec.Command(os.Args[0], "-test.run=^TestProgramDiesWithChorusd$")
	child.Env = append(os.Environ(), "CHORUS_PROGRAM_CHILD="+pidFile)
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	var pid int
	for deadline := time.Now().Add(10 * time.Second); pid == 0; time.Sleep(20 * time.Millisecond) {
		if b, err := os.ReadFile(pidFile); err == nil {
			pid, _ = strconv.Atoi(strings.TrimSpace(string(b)))
		}
		if time.Now().After(deadline) {
			child.Process.Kill()
			t.Fatal("the program never started")
		}
	}
	child.Process.Kill()
	child.Wait()
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if err := syscall.Kill(pid, 0); err != nil {
			return // gone
		}
		if time.Now().After(deadline) {
			syscall.Kill(pid, syscall.SIGKILL)
			t.Fatalf("program %d outlived the chorusd killed with -9", pid)
		}
	}
}
