package system

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// chorus demo runs from any folder, as for anyone who installed the
// binary: the demo room is built into it, and the utterances go under
// ./out/demo/ of the current folder (issue 11). Before, it failed with "no
// *.yaml device configs in firmware-configs/demo".
func TestDemoRunsFromAnEmptyFolder(t *testing.T) {
	_, chorus := buildBinaries(t)
	dir := t.TempDir()
	cmd := exec.Command(chorus, "demo")
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("chorus demo in an empty folder: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "reached terminal") {
		t.Fatalf("the room did not reach terminal:\n%s", out)
	}
	wavs, _ := filepath.Glob(filepath.Join(dir, "out", "demo", "*", "*.wav"))
	if len(wavs) < 3 {
		t.Fatalf("%d utterances written under the current folder", len(wavs))
	}
	if _, err := os.Stat(filepath.Join(dir, "out", "demo", "room.wav")); err != nil || !strings.Contains(string(out), "silences between robots:") {
		t.Fatalf("no room.wav or no silences printed (%v):\n%s", err, out)
	}
}
