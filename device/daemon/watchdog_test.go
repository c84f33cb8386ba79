package daemon

import (
	"context"
	"net"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chorus-robotics/chorus/runtime/bus/bustest"
)

// stuck is a loop that stops answering until released.
type stuck struct{ release chan struct{} }

func (s stuck) Ping(ctx context.Context) error {
	select {
	case <-s.release:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// TestWatchdogStopsWhenALoopIsStuck feeds a fake systemd notify socket and
// checks that the pings stop while a loop is stuck, and resume after.
func TestWatchdogStopsWhenALoopIsStuck(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "notify")
	conn, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: sock, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	t.Setenv("NOTIFY_SOCKET", sock)
	t.Setenv("WATCHDOG_USEC", "200000") // 200 ms: pings every 100 ms

	br := bustest.StartEmbedded(t, bustest.Options{ACL: true, Rosters: map[string][]string{"lab": {"bot"}}})
	c := load(t, strings.Replace(cfgYAML(br.URL(), bustest.FreePort(t), "TEST_LED"), "gpio: {led: TEST_LED, button: TEST_BUTTON}", "gpio: {}", 1))
	d, cancel, errc := run(t, c)
	defer func() { cancel(); <-errc }()
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	go d.Watchdog(ctx)

	pings := make(chan string, 100)
	go func() {
		buf := make([]byte, 512)
		for {
			n, err := conn.Read(buf)
			if err != nil {
				return
			}
			pings <- string(buf[:n])
		}
	}()
	count := func(d time.Duration) int {
		n := 0
		end := time.After(d)
		for {
			select {
			case p := <-pings:
				if strings.Contains(p, "WATCHDOG=1") {
					n++
				}
			case <-end:
				return n
			}
		}
	}
	if n := count(500 * time.Millisecond); n < 2 {
		t.Fatalf("%d watchdog pings in 500 ms while healthy", n)
	}
	s := stuck{release: make(chan struct{})}
	d.mu.Lock()
	d.probes = append(d.probes, namedProbe{"stuck loop", s})
	d.mu.Unlock()
	count(150 * time.Millisecond) // drain pings already in flight
	if n := count(600 * time.Millisecond); n != 0 {
		t.Fatalf("%d watchdog pings while a loop is stuck", n)
	}
	close(s.release)
	if n := count(500 * time.Millisecond); n < 2 {
		t.Fatalf("%d pings after the loop recovered", n)
	}
}
