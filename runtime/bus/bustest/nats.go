package bustest

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chorus-robotics/chorus/runtime/topic"
	"github.com/chorus-robotics/chorus/systemd"
)

// NATSBinary finds nats-server 2.10 or newer ($CHORUS_NATS_SERVER, then
// the PATH; .ci/install-deps installs one as /usr/local/bin/nats-server),
// or skips the test — fails it when CHORUS_REQUIRE_NATS=1.
func NATSBinary(t testing.TB) string {
	t.Helper()
	var found []string
	for _, p := range []string{os.Getenv("CHORUS_NATS_SERVER"), "/usr/local/bin/nats-server", "nats-server"} {
		if p == "" {
			continue
		}
		path, err := exec.LookPath(p)
		if err != nil {
			continue
		}
		out, _ := exec.Command(path, "--version").Output()
		if natsRecentEnough(string(out)) {
			return path
		}
		found = append(found, fmt.Sprintf("%s is %s", path, strings.TrimSpace(string(out))))
	}
	why := "nats-server 2.10 or newer not found (Debian's 2.9 lacks mqtt.js_api_timeout; .ci/install-deps builds one)"
	if len(found) > 0 {
		why += ": " + strings.Join(found, "; ")
	}
	if os.Getenv("CHORUS_REQUIRE_NATS") == "1" {
		t.Fatal(why + " and CHORUS_REQUIRE_NATS=1")
	}
	t.Skip(why + "; set CHORUS_REQUIRE_NATS=1 to make this a failure")
	return ""
}

var natsVersion = regexp.MustCompile(`v(\d+)\.(\d+)\.`)

func natsRecentEnough(version string) bool {
	m := natsVersion.FindStringSubmatch(version)
	if m == nil {
		return false
	}
	major, _ := strconv.Atoi(m[1])
	minor, _ := strconv.Atoi(m[2])
	return major > 2 || (major == 2 && minor >= 10)
}

// NATSCluster is nats-server nodes on loopback, clustered, serving MQTT
// with JetStream, configured from systemd/nats-chorus.conf.
type NATSCluster struct {
	bin, dir   string
	nodes      []*natsNode
	user, pass string // a login that must work before a node counts as up
}

type natsNode struct {
	name              string
	mqtt, client, mon int
	route             int
	conf              string
	mu                sync.Mutex
	cmd               *exec.Cmd
	done              chan struct{}
}

// StartNATSCluster starts n nodes (3 for a cluster that survives losing
// one; 1 for a single server) with the options' users and, when o.ACL,
// the permissions topic.Scheme.NATSUsers renders (every user in o.Users
// is listed, the people among them too). It returns once every node
// serves MQTT.
func StartNATSCluster(t testing.TB, n int, o Options) *NATSCluster {
	t.Helper()
	c := &NATSCluster{bin: NATSBinary(t), dir: t.TempDir()}
	for u, p := range o.Users {
		if !strings.ContainsAny(u, " \t") && (c.user == "" || u < c.user) {
			c.user, c.pass = u, p
		}
	}
	for i := range n {
		c.nodes = append(c.nodes, &natsNode{name: fmt.Sprintf("n%d", i+1), mqtt: FreePort(t), client: FreePort(t), mon: FreePort(t), route: FreePort(t)})
	}
	users := filepath.Join(c.dir, "chorus-users.conf")
	if err := os.WriteFile(users, []byte(natsUsers(t, o)), 0o600); err != nil {
		t.Fatal(err)
	}
	var routes []string
	for _, nd := range c.nodes {
		routes = append(routes, fmt.Sprintf("nats-route://127.0.0.1:%d", nd.route))
	}
	for _, nd := range c.nodes {
		nd.conf = filepath.Join(c.dir, nd.name+".conf")
		text := NATSNodeConf(t, nd.name, nd.client, nd.mon, nd.route, nd.mqtt, filepath.Join(c.dir, nd.name+"-js"), routes, n > 1)
		if err := os.WriteFile(nd.conf, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	for _, nd := range c.nodes {
		c.start(t, nd)
	}
	t.Cleanup(func() {
		for _, nd := range c.nodes {
			c.stop(nd)
		}
	})
	for _, nd := range c.nodes {
		c.waitMQTT(t, nd)
	}
	return c
}

// natsUsers is the users file: the scheme's permissions for each user
// with a password, or everyone allowed everything when o.ACL is off.
func natsUsers(t testing.TB, o Options) string {
	if len(o.Users) == 0 {
		return "# anonymous\n"
	}
	if !o.ACL {
		var b strings.Builder
		b.WriteString("authorization {\n  users = [\n")
		for u, p := range o.Users {
			fmt.Fprintf(&b, "    {user: %q, password: %q}\n", u, p)
		}
		b.WriteString("  ]\n}\n")
		return b.String()
	}
	names := make([]string, 0, len(o.Users))
	for u := range o.Users {
		if !strings.ContainsAny(u, " \t") { // not an identity: it gets no account on NATS
			names = append(names, u)
		}
	}
	sort.Strings(names)
	all, err := o.scheme().NATSUsers(names)
	if err != nil {
		t.Fatal(err)
	}
	var listed []topic.NATSUser // only those with a password can log in
	for _, u := range all {
		if _, ok := o.Users[u.Name]; ok {
			listed = append(listed, u)
		}
	}
	return topic.NATSAuthorization(listed, func(u string) string { return o.Users[u] })
}

// NATSNodeConf is systemd/nats-chorus.conf for one loopback node: its
// name, ports, store and routes set, everything else as shipped. It
// fails t when a line it sets is missing from the shipped file.
func NATSNodeConf(t testing.TB, name string, client, mon, route, mqtt int, store string, routes []string, clustered bool) string {
	t.Helper()
	text := string(systemd.NATSConf)
	set := func(re, repl string) {
		r := regexp.MustCompile(re)
		if !r.MatchString(text) {
			t.Fatalf("systemd/nats-chorus.conf has no line matching %s", re)
		}
		text = r.ReplaceAllLiteralString(text, repl)
	}
	set(`(?m)^server_name: .*$`, "server_name: "+name)
	set(`(?m)^listen: .*$`, fmt.Sprintf("listen: 127.0.0.1:%d", client))
	set(`(?m)^http: .*$`, fmt.Sprintf("http: 127.0.0.1:%d", mon))
	set(`(?m)^  store_dir: .*$`, "  store_dir: "+store)
	set(`(?m)^  listen: 0\.0\.0\.0:1883$`, fmt.Sprintf("  listen: 127.0.0.1:%d", mqtt))
	cluster := fmt.Sprintf("cluster {\n  name: chorus\n  listen: 127.0.0.1:%d\n  routes: [\n    %s\n  ]\n}", route, strings.Join(routes, "\n    "))
	if !clustered { // a single server: no cluster, and one replica
		cluster = ""
		set(`(?m)^  stream_replicas: 3$`, "  stream_replicas: 1")
	}
	set(`(?s)cluster \{.*?\n\}`, cluster)
	return text
}

func (c *NATSCluster) start(t testing.TB, nd *natsNode) {
	t.Helper()
	cmd := exec.Command(c.bin, "-c", nd.conf)
	done := runLogged(t, cmd, filepath.Join(c.dir, nd.name+".log"))
	nd.mu.Lock()
	nd.cmd, nd.done = cmd, done
	nd.mu.Unlock()
}

// waitMQTT waits until the node accepts an MQTT session (JetStream up,
// the MQTT streams created, a session stored): a listening port alone is
// not enough, and neither is a refused login's CONNACK.
func (c *NATSCluster) waitMQTT(t testing.TB, nd *natsNode) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		if mqttConnects(nd.mqtt, c.user, c.pass) {
			return
		}
		nd.mu.Lock()
		done := nd.done
		nd.mu.Unlock()
		select {
		case <-done:
			t.Fatalf("nats-server %s exited at start: %s", nd.name, c.Log(nd.name))
		case <-time.After(100 * time.Millisecond):
		}
	}
	t.Fatalf("nats-server %s did not serve MQTT within 30 s:\n%s", nd.name, c.Log(nd.name))
}

// mqttConnects sends a bare MQTT 3.1.1 CONNECT (with user and password
// when user is set) and reports whether it was accepted.
func mqttConnects(port int, user, pass string) bool {
	conn, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", port), 200*time.Millisecond)
	if err != nil {
		return false
	}
	defer conn.Close()
	str := func(s string) []byte { return append([]byte{byte(len(s) >> 8), byte(len(s))}, s...) }
	flags := byte(0x02) // clean session
	if user != "" {
		flags |= 0xc0
	}
	body := append([]byte{0, 4, 'M', 'Q', 'T', 'T', 4, flags, 0, 10}, str("probe-"+strconv.Itoa(port))...)
	if user != "" {
		body = append(append(body, str(user)...), str(pass)...)
	}
	if len(body) > 127 {
		return false // one length byte: tests' names are short
	}
	conn.SetDeadline(time.Now().Add(2 * time.Second))
	if _, err := conn.Write(append([]byte{0x10, byte(len(body))}, body...)); err != nil {
		return false
	}
	ack := make([]byte, 4)
	if _, err := conn.Read(ack); err != nil {
		return false
	}
	conn.Write([]byte{0xe0, 0}) // DISCONNECT
	return ack[0] == 0x20 && ack[3] == 0
}

func (c *NATSCluster) stop(nd *natsNode) {
	nd.mu.Lock()
	cmd, done := nd.cmd, nd.done
	nd.cmd = nil
	nd.mu.Unlock()
	if cmd == nil {
		return
	}
	cmd.Process.Kill()
	<-done
}

// URLs are the nodes' MQTT URLs, node 1 first.
func (c *NATSCluster) URLs() []string {
	var out []string
	for _, nd := range c.nodes {
		out = append(out, fmt.Sprintf("tcp://127.0.0.1:%d", nd.mqtt))
	}
	return out
}

// Port is node i's (0-based) MQTT port.
func (c *NATSCluster) Port(i int) int { return c.nodes[i].mqtt }

// Kill kills node i with SIGKILL: a machine that dies.
func (c *NATSCluster) Kill(i int) { c.stop(c.nodes[i]) }

// Restart starts node i again (after Kill) and waits until it serves MQTT.
func (c *NATSCluster) Restart(t testing.TB, i int) {
	t.Helper()
	c.start(t, c.nodes[i])
	c.waitMQTT(t, c.nodes[i])
}

// PID is node i's process id (0 when it is not running).
func (c *NATSCluster) PID(i int) int {
	nd := c.nodes[i]
	nd.mu.Lock()
	defer nd.mu.Unlock()
	if nd.cmd == nil {
		return 0
	}
	return nd.cmd.Process.Pid
}

// Log is what node name ("n1") wrote to its log so far.
func (c *NATSCluster) Log(name string) string {
	b, _ := os.ReadFile(filepath.Join(c.dir, name+".log"))
	return string(b)
}

// StreamLeader is the node (0-based) that leads the JetStream stream name
// ($MQTT_sess, the MQTT sessions; $MQTT_rmsgs, the retained messages), as
// the running nodes' monitoring reports it; -1 when none names a leader.
func (c *NATSCluster) StreamLeader(t testing.TB, stream string) int {
	t.Helper()
	var jsz struct {
		Accounts []struct {
			Streams []struct {
				Name    string `json:"name"`
				Cluster struct {
					Leader string `json:"leader"`
				} `json:"cluster"`
			} `json:"stream_detail"`
		} `json:"account_details"`
	}
	cl := http.Client{Timeout: 2 * time.Second}
	for _, nd := range c.nodes {
		resp, err := cl.Get(fmt.Sprintf("http://127.0.0.1:%d/jsz?accounts=true&streams=true", nd.mon))
		if err != nil {
			continue // not running
		}
		err = json.NewDecoder(resp.Body).Decode(&jsz)
		resp.Body.Close()
		if err != nil {
			t.Fatalf("nats-server %s: monitoring /jsz: %v", nd.name, err)
		}
		for _, a := range jsz.Accounts {
			for _, s := range a.Streams {
				if s.Name != stream || s.Cluster.Leader == "" {
					continue
				}
				for i, n := range c.nodes {
					if n.name == s.Cluster.Leader {
						return i
					}
				}
			}
		}
	}
	return -1
}

// Accepts reports whether node i (0-based) accepts an MQTT login now (a
// session stored: not while JetStream elects a new session leader).
func (c *NATSCluster) Accepts(i int) bool { return mqttConnects(c.nodes[i].mqtt, c.user, c.pass) }
