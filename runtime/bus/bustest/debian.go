package bustest

import (
	"fmt"
	"os"
	"os/user"
	"path/filepath"
	"strings"
	"testing"
)

// StartMosquittoAsDebian starts Mosquitto as Debian's mosquitto.service
// does: as root and with no `user` line, so that it drops to the
// "mosquitto" user before it reads its password file and ACL — files
// only root can read make it refuse to start, which a broker run as the
// test's own user (StartMosquitto) never shows. conf is the config but
// its listener, which this adds on a free loopback port; dir (which the
// mosquitto user must be able to enter) gets the config and the log.
// Where this process is not root or there is no mosquitto user, the test
// skips (fails under CHORUS_REQUIRE_MOSQUITTO=1).
func StartMosquittoAsDebian(t testing.TB, dir string, conf []string) *Mosquitto {
	t.Helper()
	bin := MosquittoBinary(t)
	_, err := user.Lookup("mosquitto")
	if os.Geteuid() != 0 || err != nil {
		why := fmt.Sprintf("Debian's way needs root and a mosquitto user (euid %d, %v)", os.Geteuid(), err)
		if os.Getenv("CHORUS_REQUIRE_MOSQUITTO") == "1" {
			t.Fatal(why + " and CHORUS_REQUIRE_MOSQUITTO=1")
		}
		t.Skip(why)
	}
	m := &Mosquitto{bin: bin, dir: dir, port: FreePort(t)}
	for _, line := range conf {
		if f := strings.Fields(line); len(f) > 0 && (f[0] == "listener" || f[0] == "user") {
			t.Fatalf("StartMosquittoAsDebian: the config's %q line is the helper's to write", f[0])
		}
	}
	conf = append([]string{fmt.Sprintf("listener %d 127.0.0.1", m.port)}, conf...)
	if err := os.WriteFile(filepath.Join(dir, "mosquitto.conf"), []byte(strings.Join(conf, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	m.start(t)
	t.Cleanup(m.Stop)
	return m
}
