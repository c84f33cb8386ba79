package robot

import (
	"net"
	"net/netip"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// The example room of firmware-configs/livingroom is one room on one
// broker, as flashed: the same room and members, one floor, one robot
// hosting the broker on the LAN, and every other robot connecting to that
// robot's .local name at its port (they once pointed at three brokers).
func TestTheExampleRoomIsOneRoomOnOneBroker(t *testing.T) {
	files, _ := filepath.Glob("../../firmware-configs/livingroom/*.yaml")
	if len(files) != 3 {
		t.Fatalf("%d configs in firmware-configs/livingroom", len(files))
	}
	var cfgs []*Config
	var host *Config
	floors := 0
	for _, f := range files {
		c, err := Load(f)
		if err != nil {
			t.Fatal(err)
		}
		cfgs = append(cfgs, c)
		if c.Room.Floor {
			floors++
		}
		if c.MQTT.Embedded.Enabled {
			if host != nil {
				t.Fatalf("two robots host a broker: %s and %s", host.Device.ID, c.Device.ID)
			}
			host = c
		}
	}
	if host == nil || floors != 1 {
		t.Fatalf("want one robot hosting the broker and one floor; host %v, %d floors", host != nil, floors)
	}
	_, port, err := net.SplitHostPort(host.MQTT.Embedded.Listen)
	if err != nil || !strings.HasPrefix(host.MQTT.Embedded.Listen, "0.0.0.0:") {
		t.Fatalf("the host's broker listens on %q: the others cannot reach it", host.MQTT.Embedded.Listen)
	}
	for _, c := range cfgs {
		if c.Room.Name != host.Room.Name || strings.Join(c.Room.Members, ",") != strings.Join(host.Room.Members, ",") {
			t.Errorf("%s: room %s %v; the host's is %s %v", c.Device.ID, c.Room.Name, c.Room.Members, host.Room.Name, host.Room.Members)
		}
		u, err := url.Parse(c.MQTT.Broker)
		if err != nil {
			t.Fatal(err)
		}
		want := host.Device.ID + ".local"
		if c == host {
			want = "127.0.0.1"
		}
		if u.Hostname() != want || u.Port() != port {
			t.Errorf("%s connects to %s; want %s:%s, the room's broker", c.Device.ID, c.MQTT.Broker, want, port)
		}
	}
}

var ipv4 = regexp.MustCompile(`\b\d{1,3}\.\d{1,3}\.\d{1,3}\.\d{1,3}\b`)

// No shipped config names a private address: flashed unchanged, or
// checked with --doctor, it would reach whatever machine has that address
// on the user's LAN. Examples use .local names or the documentation range
// (192.0.2.0/24), which the doctor never probes.
func TestShippedConfigsNameNoPrivateAddress(t *testing.T) {
	var files []string
	for _, g := range []string{"*.yaml", "*/*.yaml"} {
		f, _ := filepath.Glob(filepath.Join("../../firmware-configs", g))
		files = append(files, f...)
	}
	if len(files) < 10 {
		t.Fatalf("%d configs", len(files))
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range ipv4.FindAllString(string(b), -1) {
			if a, err := netip.ParseAddr(m); err == nil && a.IsPrivate() {
				t.Errorf("%s names the private address %s", f, m)
			}
		}
	}
}
