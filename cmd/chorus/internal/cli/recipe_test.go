package cli

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chorus-robotics/chorus/runtime/bus"
	"github.com/chorus-robotics/chorus/runtime/bus/bustest"
	"github.com/chorus-robotics/chorus/runtime/topic"
	"github.com/chorus-robotics/chorus/systemd"
)

// The several-machines recipe as the README gives it, on Mosquitto as
// Debian's service runs it (as root, dropping to the mosquitto user before
// it reads its files): the shipped fragment, `chorus acl -acl -passwd`
// into the broker's folder, every CHANGE-ME set, `mosquitto_passwd -U`,
// a start. A password file written 0600 root made Mosquitto refuse to
// start ("Unable to open pwfile"), which a broker run as the test's own
// user never showed. A robot of the room then connects with its password,
// and a wrong password is refused.
func TestMosquittoRecipeAsDebianRunsIt(t *testing.T) {
	dir, err := os.MkdirTemp("", "chorus-recipe-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil { // as /etc/mosquitto
		t.Fatal(err)
	}
	aclFile, pw := filepath.Join(dir, "chorus.acl"), filepath.Join(dir, "chorus.passwd")
	cfgs, _ := filepath.Glob("../../../../firmware-configs/livingroom/*.yaml")
	var out, errOut bytes.Buffer
	if code := Main(context.Background(), append([]string{"acl", "-people", "sam", "-acl", aclFile, "-passwd", pw}, cfgs...), &out, &errOut); code != 0 {
		t.Fatalf("chorus acl: %d %s", code, errOut.String())
	}
	skel, err := os.ReadFile(pw)
	if err != nil {
		t.Fatal(err)
	}
	var filled []string
	for _, line := range strings.Split(strings.TrimSpace(string(skel)), "\n") {
		name, _, _ := strings.Cut(line, ":")
		filled = append(filled, name+":pw-"+name)
	}
	// sudoedit keeps the file's owner and mode, as this does.
	if err := os.WriteFile(pw, []byte(strings.Join(filled, "\n")+"\n"), 0); err != nil {
		t.Fatal(err)
	}
	if b, err := exec.Command("mosquitto_passwd", "-U", pw).CombinedOutput(); err != nil {
		t.Fatalf("mosquitto_passwd -U: %v\n%s", err, b)
	}
	var conf []string
	for _, line := range strings.Split(string(systemd.MosquittoConf), "\n") {
		f := strings.Fields(line)
		switch {
		case len(f) == 0 || strings.HasPrefix(f[0], "#") || f[0] == "listener":
		case f[0] == "password_file":
			conf = append(conf, "password_file "+pw)
		case f[0] == "acl_file":
			conf = append(conf, "acl_file "+aclFile)
		default:
			conf = append(conf, line)
		}
	}
	m := bustest.StartMosquittoAsDebian(t, dir, conf)
	if log := m.Log(); strings.Contains(log, "Error") || strings.Contains(log, "Warning") {
		t.Fatalf("mosquitto: %s", log)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	kyoko, err := bus.Dial(ctx, bus.Options{Broker: m.URL(), ClientID: "kyoko", Username: "kyoko", Password: "pw-kyoko"})
	if err != nil {
		t.Fatalf("kyoko with its password: %v\n%s", err, m.Log())
	}
	defer kyoko.Close()
	if _, err := bus.Dial(ctx, bus.Options{Broker: m.URL(), ClientID: "kyoko-2", Username: "kyoko", Password: "wrong"}); err == nil {
		t.Error("a wrong password was let in")
	}
	// A person named with -people has a password and reads the room.
	sam, err := bus.Dial(ctx, bus.Options{Broker: m.URL(), ClientID: "sam", Username: "sam", Password: "pw-sam"})
	if err != nil {
		t.Fatalf("sam with their password: %v\n%s", err, m.Log())
	}
	defer sam.Close()
	sc := topic.New("")
	got := make(chan string, 4)
	if err := sam.Subscribe(ctx, sc.Messages("livingroom"), func(tp string, _ []byte) { got <- tp }); err != nil {
		t.Fatal(err)
	}
	if err := sam.Publish(ctx, sc.Message("livingroom", "sam"), []byte(`{}`), false); err != nil {
		t.Fatal(err)
	}
	if err := kyoko.Publish(ctx, sc.Message("livingroom", "kyoko"), []byte(`{}`), false); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{sc.Message("livingroom", "sam"), sc.Message("livingroom", "kyoko")} {
		select {
		case tp := <-got:
			if tp != want {
				t.Errorf("sam read %s, want %s", tp, want)
			}
		case <-ctx.Done():
			t.Fatalf("sam never read %s", want)
		}
	}
}
