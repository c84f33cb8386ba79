package install

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

func chorusd(t *testing.T) string {
	t.Helper()
	out := filepath.Join(t.TempDir(), "chorusd")
	cmd := exec.Command("go", "build", "-o", out, "github.com/chorus-robotics/chorus/cmd/chorusd")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, b)
	}
	return out
}

const cfg = "../../../../firmware-configs/desktop-sim.yaml"

func TestInstallIsIdempotent(t *testing.T) {
	root, bin := t.TempDir(), chorusd(t)
	steps, err := Run(Options{Root: root, Config: cfg, Binary: bin})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range steps {
		if !s.Changed {
			t.Errorf("%s not written on a fresh root", s.Path)
		}
	}
	if st, _ := os.Stat(filepath.Join(root, EnvPath)); st.Mode().Perm() != 0o600 {
		t.Errorf("environment file mode %v, want 0600 (it holds secrets)", st.Mode().Perm())
	}
	os.WriteFile(filepath.Join(root, EnvPath), []byte("CHORUS_MQTT_PASSWORD=s3cret\n"), 0o600)
	steps, err = Run(Options{Root: root, Config: cfg, Binary: bin})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range steps {
		if s.Changed {
			t.Errorf("%s rewritten on the second run", s.Path)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(root, EnvPath)); string(b) != "CHORUS_MQTT_PASSWORD=s3cret\n" {
		t.Error("the environment file with secrets was overwritten")
	}
}

func TestRefusesAnInvalidConfigBeforeWriting(t *testing.T) {
	root := t.TempDir()
	bad := filepath.Join(t.TempDir(), "bad.yaml")
	os.WriteFile(bad, []byte("version: 1\ndevice: {id: x}\nroom: {name: lab, members: [x]}\nmqtt: {broker: nowhere}\n"), 0o644)
	_, err := Run(Options{Root: root, Config: bad, Binary: "/bin/true"})
	if err == nil || !strings.Contains(err.Error(), "mqtt.broker") {
		t.Fatalf("err = %v", err)
	}
	if ents, _ := os.ReadDir(root); len(ents) != 0 {
		t.Fatalf("wrote %d entries for an invalid config", len(ents))
	}
}

func analyze(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("systemd-analyze")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("systemd-analyze missing (apt-get install systemd)")
		}
		t.Skip("systemd-analyze not installed")
	}
	return p
}

// TestUnitVerifies runs systemd-analyze verify on the installed unit, with
// ExecStart pointed at a real chorusd (verify checks that it is executable
// on this machine; --root would need a whole systemd tree).
func TestUnitVerifies(t *testing.T) {
	sa := analyze(t)
	root := t.TempDir()
	bin := chorusd(t)
	if _, err := Run(Options{Root: root, Config: cfg, Binary: bin}); err != nil {
		t.Fatal(err)
	}
	unit, _ := os.ReadFile(filepath.Join(root, UnitPath))
	local := filepath.Join(t.TempDir(), "chorusd.service")
	os.WriteFile(local, []byte(strings.ReplaceAll(string(unit), "/usr/local/bin/chorusd", filepath.Join(root, BinaryPath))), 0o644)
	out, err := exec.Command(sa, "verify", "--man=no", local).CombinedOutput()
	if err != nil || len(strings.TrimSpace(string(out))) > 0 {
		t.Fatalf("systemd-analyze verify: %v\n%s", err, out)
	}
}

// TestUnitIsHardened fails above an exposure of 2.5 (an unhardened unit
// scores about 9.6).
func TestUnitIsHardened(t *testing.T) {
	sa := analyze(t)
	out, _ := exec.Command(sa, "security", "--offline=true", "--no-pager", "../../../../systemd/chorusd.service").CombinedOutput()
	m := regexp.MustCompile(`Overall exposure level for chorusd.service: ([0-9.]+)`).FindSubmatch(out)
	if m == nil {
		t.Fatalf("no exposure level in:\n%s", out)
	}
	level, _ := strconv.ParseFloat(string(m[1]), 64)
	t.Logf("exposure %.1f", level)
	if level > 2.5 {
		t.Fatalf("exposure %.1f > 2.5:\n%s", level, out)
	}
}
