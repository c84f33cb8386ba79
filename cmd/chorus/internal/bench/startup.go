package bench

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/chorus-robotics/chorus/runtime/logtest"
)

// Resident is a process's resident set, in kB: anonymous (its heap and
// stacks) and file-backed (the pages of its binary it touched).
type Resident struct {
	RSS, Anon, File int
}

// Startup runs chorusd with config as systemd would (a notify socket),
// and returns the time from exec to READY=1, and its resident memory after
// idle of settle.
func Startup(ctx context.Context, chorusd, config string, settle time.Duration) (ready time.Duration, mem Resident, err error) {
	dir, err := os.MkdirTemp("", "chorus-startup-")
	if err != nil {
		return 0, Resident{}, err
	}
	defer os.RemoveAll(dir)
	sock := filepath.Join(dir, "notify")
	conn, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: sock, Net: "unixgram"})
	if err != nil {
		return 0, Resident{}, err
	}
	defer conn.Close()
	cmd := exec.CommandContext(ctx, chorusd, "--config", config)
	cmd.Env = append(os.Environ(), "NOTIFY_SOCKET="+sock)
	logs := &logtest.Buffer{}
	cmd.Stderr = logs
	start := time.Now()
	if err := cmd.Start(); err != nil {
		return 0, Resident{}, err
	}
	defer func() {
		cmd.Process.Signal(syscall.SIGTERM)
		done := make(chan struct{})
		go func() { cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			cmd.Process.Kill()
			<-done
		}
	}()
	conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	buf := make([]byte, 1024)
	for {
		n, err := conn.Read(buf)
		if err != nil {
			return 0, Resident{}, fmt.Errorf("no READY from chorusd: %w\n%s", err, logs.String())
		}
		if strings.Contains(string(buf[:n]), "READY=1") {
			ready = time.Since(start)
			break
		}
	}
	time.Sleep(settle)
	mem, err = residentOf(cmd.Process.Pid)
	return ready, mem, err
}

// residentOf reads a process's resident set from /proc/PID/status.
func residentOf(pid int) (Resident, error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return Resident{}, err
	}
	defer f.Close()
	var m Resident
	fields := map[string]*int{"VmRSS:": &m.RSS, "RssAnon:": &m.Anon, "RssFile:": &m.File}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		for prefix, dst := range fields {
			if v, ok := strings.CutPrefix(sc.Text(), prefix); ok {
				*dst, _ = strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(v), " kB"))
			}
		}
	}
	if m.RSS == 0 {
		return Resident{}, fmt.Errorf("no VmRSS for pid %d", pid)
	}
	return m, nil
}
