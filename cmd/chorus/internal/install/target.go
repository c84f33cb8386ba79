package install

import (
	"debug/buildinfo"
	"fmt"
	"io"
	"runtime/debug"
	"strings"
)

// ChorusdPath is the import path of the daemon a target binary must be.
const ChorusdPath = "github.com/chorus-robotics/chorus/cmd/chorusd"

// Target is what the installer reads from a chorusd binary's build
// information (debug/buildinfo): what it is, for which machine, with which
// build tags.
type Target struct {
	Path     string   // the main package ("github.com/chorus-robotics/chorus/cmd/chorusd")
	GOOS     string   // "linux"
	GOARCH   string   // "arm64", "arm", "amd64"
	GOARM    string   // "6", "7" for GOARCH arm
	Tags     []string // -tags it was built with
	Revision string   // vcs.revision, when the build recorded it
}

// ReadTarget reads the build information of the binary in r; a file that
// is not a Go binary is an error saying so.
func ReadTarget(name string, r io.ReaderAt) (Target, error) {
	bi, err := buildinfo.Read(r)
	if err != nil {
		return Target{}, fmt.Errorf("%s is not a Go binary (%w): give the chorusd that make dist built", name, err)
	}
	t := targetOf(bi)
	if t.Path != ChorusdPath {
		return t, fmt.Errorf("%s is %s, not chorusd (%s)", name, t.Path, ChorusdPath)
	}
	return t, nil
}

func targetOf(bi *debug.BuildInfo) Target {
	t := Target{Path: bi.Path}
	for _, s := range bi.Settings {
		switch s.Key {
		case "GOOS":
			t.GOOS = s.Value
		case "GOARCH":
			t.GOARCH = s.Value
		case "GOARM":
			t.GOARM, _, _ = strings.Cut(s.Value, ",") // "7" or "7,softfloat"
		case "-tags":
			for _, tag := range strings.Split(s.Value, ",") {
				if tag = strings.TrimSpace(tag); tag != "" {
					t.Tags = append(t.Tags, tag)
				}
			}
		case "vcs.revision":
			t.Revision = s.Value
		}
	}
	return t
}

// Arch names the target's CPU as device.arch does: arm64, armv7, armv6,
// amd64 (other GOARCH values as they are).
func (t Target) Arch() string {
	if t.GOARCH == "arm" {
		return "armv" + t.GOARM
	}
	return t.GOARCH
}

// Fits reports whether the target runs on a board whose device.arch is
// arch ("" fits any). An armv6 build runs on an armv7 board, not the
// reverse.
func (t Target) Fits(arch string) bool {
	switch {
	case arch == "":
		return true
	case arch == "armv7" && t.GOARCH == "arm":
		return t.GOARM == "6" || t.GOARM == "7" || t.GOARM == "5"
	case arch == "armv6" && t.GOARCH == "arm":
		return t.GOARM == "6" || t.GOARM == "5"
	}
	return t.Arch() == arch
}

// selfRevision is the vcs.revision of this program's build ("" when it
// recorded none).
func selfRevision() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return ""
	}
	return targetOf(bi).Revision
}
