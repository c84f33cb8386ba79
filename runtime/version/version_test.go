package version

import (
	"runtime/debug"
	"strings"
	"testing"
)

func TestOf(t *testing.T) {
	vcs := func(rev, modified string) []debug.BuildSetting {
		return []debug.BuildSetting{{Key: "vcs", Value: "git"}, {Key: "vcs.revision", Value: rev}, {Key: "vcs.modified", Value: modified}}
	}
	for _, c := range []struct {
		name    string
		stamped string
		bi      *debug.BuildInfo
		want    string
	}{
		{"stamped wins", "v1.2.0", &debug.BuildInfo{Main: debug.Module{Version: "v1.1.0"}}, "v1.2.0"},
		{"go install @version", "dev", &debug.BuildInfo{Main: debug.Module{Version: "v1.1.0"}}, "v1.1.0"},
		{"pseudo-version", "", &debug.BuildInfo{Main: debug.Module{Version: "v0.0.0-20261128180000-3f9c2a1b7d4e"}}, "v0.0.0-20261128180000-3f9c2a1b7d4e"},
		{"built in a checkout", "dev", &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}, Settings: vcs("3f9c2a1b7d4e5f60718293a4b5c6d7e8f9012345", "false")}, "dev-3f9c2a1b7d4e"},
		{"built in a changed checkout", "dev", &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}, Settings: vcs("3f9c2a1b7d4e5f60718293a4b5c6d7e8f9012345", "true")}, "dev-3f9c2a1b7d4e+dirty"},
		{"a short revision", "", &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}, Settings: vcs("3f9c", "false")}, "dev-3f9c"},
		{"-buildvcs=false", "dev", &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}}, "dev"},
		{"no build info", "", nil, "dev"},
	} {
		if got := of(c.stamped, c.bi); got != c.want {
			t.Errorf("%s: of(%q) = %q; want %q", c.name, c.stamped, got, c.want)
		}
	}
}

func TestGo(t *testing.T) {
	if g := Go(); !strings.HasPrefix(g, "go") || !strings.Contains(g, "/") {
		t.Errorf("Go() = %q", g)
	}
}
