// Package runtime_test guards the architecture: the conversation runtime
// never depends on hardware libraries, so it builds and runs anywhere.
package runtime_test

import (
	"os/exec"
	"strings"
	"testing"
)

// TestRuntimeImportsNoHardwareLibraries proves that no package under
// runtime/ imports gocv, portaudio or periph, with every build tag set.
func TestRuntimeImportsNoHardwareLibraries(t *testing.T) {
	for _, tags := range []string{"", "gocv portaudio"} {
		out, err := exec.Command("go", "list", "-tags", tags, "-deps", "github.com/chorus-robotics/chorus/runtime/...").CombinedOutput()
		if err != nil {
			t.Fatalf("go list: %v\n%s", err, out)
		}
		for _, dep := range strings.Fields(string(out)) {
			for _, banned := range []string{"gocv.io/", "github.com/gordonklaus/portaudio", "periph.io/"} {
				if strings.HasPrefix(dep, banned) {
					t.Errorf("runtime/... (tags %q) depends on %s", tags, dep)
				}
			}
		}
	}
}

// TestPureGoBuild proves the default build needs no C compiler.
func TestPureGoBuild(t *testing.T) {
	cmd := exec.Command("go", "build", "-o", t.TempDir(), "github.com/chorus-robotics/chorus/...")
	cmd.Env = append(cmd.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("CGO_ENABLED=0 go build ./...: %v\n%s", err, out)
	}
}
