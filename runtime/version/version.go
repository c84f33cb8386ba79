// Package version says which build of Chorus is running.
//
// A release build is stamped (`make dist` passes -ldflags "-X
// main.version=…"). A build that was not stamped still tells what the Go
// toolchain recorded in it: the module version of `go install
// …/cmd/chorusd@v1.2.0`, or else the commit of the checkout it was built
// in (with "+dirty" when the work tree had changes), or else "dev".
//
// # Usage
//
//	v := version.Of(stamped) // "v1.2.0", "dev-3f9c2a1b7d4e+dirty", "dev"
package version

import (
	"runtime"
	"runtime/debug"
)

// Of returns stamped when the build was stamped (not "" or "dev"), or
// else the version the Go toolchain recorded in the running binary.
func Of(stamped string) string {
	bi, _ := debug.ReadBuildInfo()
	return of(stamped, bi)
}

// Go is the toolchain and platform of this build, e.g. "go1.26.8 linux/arm64".
func Go() string { return runtime.Version() + " " + runtime.GOOS + "/" + runtime.GOARCH }

func of(stamped string, bi *debug.BuildInfo) string {
	if stamped != "" && stamped != "dev" {
		return stamped
	}
	if bi == nil {
		return "dev"
	}
	if v := bi.Main.Version; v != "" && v != "(devel)" {
		return v
	}
	var rev, dirty string
	for _, s := range bi.Settings {
		switch {
		case s.Key == "vcs.revision":
			rev = s.Value
		case s.Key == "vcs.modified" && s.Value == "true":
			dirty = "+dirty"
		}
	}
	if rev == "" {
		return "dev"
	}
	return "dev-" + rev[:min(len(rev), 12)] + dirty
}
