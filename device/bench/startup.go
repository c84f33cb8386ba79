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
)

// Startup runs chorusd with config as systemd would (a notify socket),
// and returns the time from exec to READY=1, and the resident memory after
// idle of settle.
func Startup(ctx context.Context, chorusd, config string, settle time.Duration) (ready time.Duration, rssKB int, err error) {
	dir, err := os.MkdirTemp("", "chorus-startup-")
	if err != nil {
		return 0, 0, err
	}
	defer os.RemoveAll(dir)
	sock := filepath.Join(dir, "notify")
	conn, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: sock, Net: "unixgram"})
	if err != nil {
		return 0, 0, err
	}
	defer conn.Close()
	cmd := exec.CommandContext(ctx, chorusd, "--config", config)
	cmd.Env = append(os.Environ(), "NOTIFY_SOCKET="+sock)
	var logs strings.Builder
	cmd.Stderr = &logs
	start := time.Now()
	if err := cmd.Start(); err != nil {
		return 0, 0, err
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
			return 0, 0, fmt.Errorf("no READY from chorusd: %w\n%s", err, logs.String())
		}
		if strings.Contains(string(buf[:n]), "READY=1") {
			ready = time.Since(start)
			break
		}
	}
	time.Sleep(settle)
	rssKB, err = rss(cmd.Process.Pid)
	return ready, rssKB, err
}

func rss(pid int) (int, error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "VmRSS:"); ok {
			return strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(v), " kB"))
		}
	}
	return 0, fmt.Errorf("no VmRSS for pid %d", pid)
}
