package proc

import (
	"os"
	"runtime"
	"strings"
	"testing"
	"time"
)

func TestTailKeepsTheLastLine(t *testing.T) {
	for _, c := range []struct {
		name   string
		writes []string
		want   string
	}{
		{"nothing", nil, ""},
		{"one line", []string{"ERROR: no cameras available\n"}, "ERROR: no cameras available"},
		{"the last of several, blank ones skipped", []string{"a\nb\n", "\n  \n"}, "b"},
		{"split across writes", []string{"aplay: main:8", "31: audio open error\n"}, "aplay: main:831: audio open error"},
		{"an unfinished line wins", []string{"done\nfail"}, "fail"},
		{"progress with carriage returns", []string{"frame= 1\rframe= 2\r"}, "frame= 2"},
		{"capped", []string{strings.Repeat("x", 2000) + "\n"}, strings.Repeat("x", 512)},
	} {
		t.Run(c.name, func(t *testing.T) {
			var tl Tail
			for _, w := range c.writes {
				if n, err := tl.Write([]byte(w)); n != len(w) || err != nil {
					t.Fatalf("write %d, %v", n, err)
				}
			}
			if got := tl.String(); got != c.want {
				t.Fatalf("%q, want %q", got, c.want)
			}
		})
	}
	if (*Tail)(nil).Suffix() != "" {
		t.Fatal("a nil tail has a suffix")
	}
}

func TestGrowPipe(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	got := GrowPipe(w, 1<<20)
	if runtime.GOOS == "linux" && got < 64<<10 {
		t.Fatalf("pipe of %d bytes", got)
	}
	// The writer really holds that much without a reader.
	w.SetWriteDeadline(time.Now().Add(time.Second))
	if n, err := w.Write(make([]byte, got)); n != got || err != nil {
		t.Fatalf("wrote %d of %d: %v", n, got, err)
	}
}

func TestAwaitExitLeavesTheProcessToWait(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("linux only")
	}
	cmd, _ := Command([]string{"/bin/sh", "-c", "exit 7"})
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	if !AwaitExit(cmd) {
		t.Fatal("AwaitExit could not wait")
	}
	Kill(cmd) // on an exited, unreaped process: harmless
	err := cmd.Wait()
	if cmd.ProcessState == nil || cmd.ProcessState.ExitCode() != 7 {
		t.Fatalf("Wait after AwaitExit: %v", err)
	}
}
