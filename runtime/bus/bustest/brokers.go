// Package bustest starts real MQTT brokers for tests: the embedded mochi
// broker in-process, a real Mosquitto on a free loopback port, and a NATS
// cluster serving MQTT (nats.go). ForEach runs a test body against the
// first two.
//
// When the mosquitto binary is missing the Mosquitto cases are skipped,
// unless CHORUS_REQUIRE_MOSQUITTO=1 (set by .ci/run), when they fail.
package bustest

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/chorus-robotics/chorus/runtime/broker"
	"github.com/chorus-robotics/chorus/runtime/topic"
	"github.com/chorus-robotics/chorus/systemd"
)

// Broker is a running test broker.
type Broker interface {
	Name() string
	URL() string
	// Restart stops the broker and starts it again on the same address; all
	// connections drop and retained messages are forgotten.
	Restart(t testing.TB)
	// Stop stops the broker for good.
	Stop()
}

// Options configure a test broker.
type Options struct {
	// Users maps usernames to passwords; empty means anonymous access (each
	// client still gives a username, which the ACL holds it to).
	Users map[string]string
	// ACL enforces the topic scheme's publish rules.
	ACL bool
	// Scheme for the ACL; zero means topic.New("").
	Scheme topic.Scheme
	// Rosters gives rooms their members (room -> companion ids), for the
	// ACL: only members may publish presence and States.
	Rosters map[string][]string
	// People are the identities besides the scheme's and Users' that
	// Mosquitto's ACL lists (chorus acl -people): the persons and observers
	// a test dials, which read the rooms. The embedded broker needs no list.
	People []string
	// MosquittoConf adds lines to Mosquitto's config (queue limits, say).
	MosquittoConf []string
	// MosquittoACL replaces the ACL that Chorus renders (Mosquitto only),
	// to test a broker set up by hand.
	MosquittoACL string
	// PKI, when set, makes the broker listen with TLS only and require a
	// client certificate its CA signed; URL is then ssl://.
	PKI *PKI
}

func (o Options) scheme() topic.Scheme {
	s := o.Scheme
	if s.Prefix == "" {
		s = topic.New("")
	}
	for room, m := range o.Rosters {
		s = s.WithRoster(room, m)
	}
	return s
}

// ForEach runs fn as a subtest against the embedded broker and Mosquitto.
func ForEach(t *testing.T, o Options, fn func(t *testing.T, b Broker)) {
	t.Run("embedded", func(t *testing.T) { fn(t, StartEmbedded(t, o)) })
	t.Run("mosquitto", func(t *testing.T) { fn(t, StartMosquitto(t, o)) })
}

// FreePort returns a loopback TCP port that was free a moment ago.
//
// The port is below the kernel's ephemeral range: a port that range gave
// (as "127.0.0.1:0" does) may be taken, between its close here and the
// bind by the process it is meant for, as the local port of any outgoing
// connection — a chorusd once failed to start on "address already in
// use" that way in CI. No port is handed out twice by one test binary.
func FreePort(t testing.TB) int {
	t.Helper()
	lo := ephemeralLow()
	portsMu.Lock()
	defer portsMu.Unlock()
	for range 200 {
		port := 10000 + rand.IntN(max(lo-10000, 1))
		if handedOut[port] {
			continue
		}
		l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port))
		if err != nil {
			continue
		}
		l.Close()
		handedOut[port] = true
		return port
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("free port: %v", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

var (
	portsMu   sync.Mutex
	handedOut = map[int]bool{}
)

// ephemeralLow is the first port of the kernel's ephemeral range (Linux's
// default 32768 where it cannot be read).
func ephemeralLow() int {
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if f := strings.Fields(string(b)); err == nil && len(f) == 2 {
		if lo, err := strconv.Atoi(f[0]); err == nil && lo > 11000 {
			return lo
		}
	}
	return 32768
}

// Embedded is the in-process mochi broker.
type Embedded struct {
	o    Options
	addr string
	mu   sync.Mutex
	b    *broker.Broker
}

// StartEmbedded starts the embedded broker on a free loopback port.
func StartEmbedded(t testing.TB, o Options) *Embedded {
	t.Helper()
	e := &Embedded{o: o, addr: fmt.Sprintf("127.0.0.1:%d", FreePort(t))}
	e.start(t)
	t.Cleanup(e.Stop)
	return e
}

func (e *Embedded) start(t testing.TB) {
	t.Helper()
	cfg := broker.Config{Addr: e.addr, Users: e.o.Users, AllowAnonymous: len(e.o.Users) == 0, Scheme: e.o.scheme(), OpenACL: !e.o.ACL}
	if p := e.o.PKI; p != nil {
		cert, err := tls.LoadX509KeyPair(p.ServerCert, p.ServerKey)
		if err != nil {
			t.Fatal(err)
		}
		pool := x509.NewCertPool()
		b, _ := os.ReadFile(p.CA)
		pool.AppendCertsFromPEM(b)
		cfg.TLS = &tls.Config{Certificates: []tls.Certificate{cert}, ClientCAs: pool, ClientAuth: tls.RequireAndVerifyClientCert, MinVersion: tls.VersionTLS12}
	}
	var b *broker.Broker
	var err error
	for range 50 { // the port may linger for a moment after a restart
		if b, err = broker.Start(context.Background(), cfg); err == nil {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err != nil {
		t.Fatalf("embedded broker: %v", err)
	}
	e.mu.Lock()
	e.b = b
	e.mu.Unlock()
}

func (e *Embedded) Name() string { return "embedded" }
func (e *Embedded) URL() string {
	if e.o.PKI != nil {
		return "ssl://" + e.addr
	}
	return "tcp://" + e.addr
}

// Inner returns the running broker.
func (e *Embedded) Inner() *broker.Broker {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.b
}

func (e *Embedded) Restart(t testing.TB) {
	t.Helper()
	e.Stop()
	e.start(t)
}

func (e *Embedded) Stop() {
	e.mu.Lock()
	b := e.b
	e.b = nil
	e.mu.Unlock()
	if b != nil {
		b.Close()
	}
}

// Mosquitto is a real mosquitto process on loopback.
type Mosquitto struct {
	bin, dir string
	port     int
	tls      bool
	mu       sync.Mutex
	cmd      *exec.Cmd
	done     chan struct{}
}

// MosquittoBinary finds mosquitto, or skips (fails when
// CHORUS_REQUIRE_MOSQUITTO=1) the test.
func MosquittoBinary(t testing.TB) string {
	t.Helper()
	for _, p := range []string{"mosquitto", "/usr/sbin/mosquitto", "/usr/local/sbin/mosquitto"} {
		if path, err := exec.LookPath(p); err == nil {
			return path
		}
	}
	if os.Getenv("CHORUS_REQUIRE_MOSQUITTO") == "1" {
		t.Fatal("mosquitto not found and CHORUS_REQUIRE_MOSQUITTO=1 (apt-get install -y mosquitto)")
	}
	t.Skip("mosquitto not installed; set CHORUS_REQUIRE_MOSQUITTO=1 to make this a failure")
	return ""
}

// StartMosquitto starts mosquitto on a free loopback port with the options'
// users and ACL (the ACL file comes from topic.Scheme.MosquittoACL).
func StartMosquitto(t testing.TB, o Options) *Mosquitto {
	t.Helper()
	m := &Mosquitto{bin: MosquittoBinary(t), dir: t.TempDir(), port: FreePort(t), tls: o.PKI != nil}
	conf := []string{
		fmt.Sprintf("listener %d 127.0.0.1", m.port),
		"persistence false",
		"user " + currentUser(),
		"set_tcp_nodelay true",
		"log_dest stderr",
		"log_type error",
		"log_type warning",
	}
	if len(o.Users) > 0 {
		pw := filepath.Join(m.dir, "passwd")
		names := make([]string, 0, len(o.Users))
		for u := range o.Users {
			names = append(names, u)
		}
		sort.Strings(names)
		if err := os.WriteFile(pw, nil, 0o600); err != nil {
			t.Fatal(err)
		}
		for _, u := range names {
			out, err := exec.Command("mosquitto_passwd", "-b", pw, u, o.Users[u]).CombinedOutput()
			if err != nil {
				t.Fatalf("mosquitto_passwd (apt-get install -y mosquitto): %v: %s", err, out)
			}
		}
		conf = append(conf, "allow_anonymous false", "password_file "+pw)
	} else {
		conf = append(conf, "allow_anonymous true")
	}
	if o.ACL || o.MosquittoACL != "" {
		text := o.MosquittoACL
		if text == "" {
			people := slices.Clone(o.People)
			for u := range o.Users {
				people = append(people, u)
			}
			text = o.scheme().MosquittoACL(people...)
		}
		acl := filepath.Join(m.dir, "acl")
		if err := os.WriteFile(acl, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		conf = append(conf, "acl_file "+acl)
	}
	if p := o.PKI; p != nil {
		conf = append(conf, "cafile "+p.CA, "certfile "+p.ServerCert, "keyfile "+p.ServerKey, "require_certificate true")
	}
	conf = append(conf, RecommendedSettings()...)
	conf = append(conf, o.MosquittoConf...)
	if err := os.WriteFile(filepath.Join(m.dir, "mosquitto.conf"), []byte(strings.Join(conf, "\n")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	m.start(t)
	t.Cleanup(m.Stop)
	return m
}

func (m *Mosquitto) start(t testing.TB) {
	t.Helper()
	cmd := exec.Command(m.bin, "-c", filepath.Join(m.dir, "mosquitto.conf"))
	done := runLogged(t, cmd, filepath.Join(m.dir, "mosquitto.log"))
	m.mu.Lock()
	m.cmd, m.done = cmd, done
	m.mu.Unlock()
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		c, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", m.port), 100*time.Millisecond)
		if err == nil {
			c.Close()
			return
		}
		select {
		case <-done:
			log, _ := os.ReadFile(filepath.Join(m.dir, "mosquitto.log"))
			t.Fatalf("mosquitto exited at start: %s", log)
		case <-time.After(20 * time.Millisecond):
		}
	}
	m.Stop()
	t.Fatalf("mosquitto did not listen on port %d within 5 s", m.port)
}

// runLogged starts cmd with its output appended to logPath; done closes
// when it has exited.
func runLogged(t testing.TB, cmd *exec.Cmd, logPath string) (done chan struct{}) {
	t.Helper()
	logf, err := os.OpenFile(logPath, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		logf.Close()
		t.Fatalf("start %s: %v", cmd.Path, err)
	}
	done = make(chan struct{})
	go func() { cmd.Wait(); logf.Close(); close(done) }()
	return done
}

func (m *Mosquitto) Name() string { return "mosquitto" }

// PID is the running broker's process id.
func (m *Mosquitto) PID() int { return m.cmd.Process.Pid }

// Port is the loopback port Mosquitto listens on.
func (m *Mosquitto) Port() int { return m.port }

// Log is what Mosquitto wrote to its log so far.
func (m *Mosquitto) Log() string {
	b, _ := os.ReadFile(filepath.Join(m.dir, "mosquitto.log"))
	return string(b)
}
func (m *Mosquitto) URL() string {
	if m.tls {
		return fmt.Sprintf("ssl://127.0.0.1:%d", m.port)
	}
	return fmt.Sprintf("tcp://127.0.0.1:%d", m.port)
}

func (m *Mosquitto) Restart(t testing.TB) {
	t.Helper()
	m.Stop()
	m.start(t)
}

// Stop kills Mosquitto (SIGKILL): a broker that dies.
func (m *Mosquitto) Stop() { m.stop(os.Kill) }

// Terminate stops Mosquitto as systemd does (SIGTERM) and waits for it to exit.
func (m *Mosquitto) Terminate() { m.stop(syscall.SIGTERM) }

func (m *Mosquitto) stop(sig os.Signal) {
	m.mu.Lock()
	cmd, done := m.cmd, m.done
	m.cmd = nil
	m.mu.Unlock()
	if cmd == nil {
		return
	}
	cmd.Process.Signal(sig)
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		cmd.Process.Kill()
		<-done
	}
}

// RecommendedSettings are the settings of the shipped Mosquitto fragment
// (systemd/mosquitto-chorus.conf) but its listener, password file and ACL,
// which each test broker sets itself: the suite runs under what Chorus
// recommends.
func RecommendedSettings() []string {
	var out []string
	for _, line := range strings.Split(string(systemd.MosquittoConf), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		switch strings.Fields(line)[0] {
		case "listener", "allow_anonymous", "password_file", "acl_file":
			continue
		}
		out = append(out, line)
	}
	return out
}

// currentUser keeps mosquitto, when started as root, from dropping to the
// "mosquitto" user, which cannot read the test's private temp folder.
func currentUser() string {
	if u, err := user.Current(); err == nil {
		return u.Username
	}
	return "root"
}
