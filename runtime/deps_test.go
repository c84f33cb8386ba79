// Package runtime_test guards the architecture: the conversation runtime
// never depends on hardware libraries, so it builds and runs anywhere, and
// every import rule of docs/architecture.md ("never") is checked on every build.
package runtime_test

import (
	"fmt"
	"go/parser"
	"go/token"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

const module = "github.com/chorus-robotics/chorus"

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

// TestToolRegistryIsALeaf holds the tool registry to what issue 42 asks
// of it: a leaf that imports no Chorus package but the protocol, so the
// brain, the query client, the companion and the MCP server may all
// register and run tools without importing one another.
func TestToolRegistryIsALeaf(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", module+"/runtime/tool").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	for _, dep := range strings.Fields(string(out)) {
		if strings.HasPrefix(dep, module+"/") && dep != module+"/runtime/tool" && dep != module+"/runtime/protocol" {
			t.Errorf("runtime/tool depends on %s", dep)
		}
	}
}

// TestRobotLinksNoTemplateExecution keeps text/template's executor out of
// chorusd: its method calls by a name known only at run time (evalField)
// make the linker keep every exported method of every linked type, 2.2 MB
// of the arm64 binary (BENCHMARKS.md, "Binary size"). A package may
// import the templates for their types alone (spf13/cast, under the MCP
// client, converts template.HTML): that links no executor.
func TestRobotLinksNoTemplateExecution(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "chorusd")
	if out, err := exec.Command("go", "build", "-o", bin, module+"/cmd/chorusd").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	out, err := exec.Command("go", "tool", "nm", bin).Output()
	if err != nil {
		t.Fatalf("go tool nm: %v", err)
	}
	for _, exec := range []string{"text/template.(*state).evalField", "text/template.(*state).evalCall"} {
		if strings.Contains(string(out), exec) {
			t.Errorf("chorusd links %s", exec)
		}
	}
}

// TestOperatorLinksNoTestFakes: the chorus a user installs holds what a
// user runs; the benchmarks and their fake servers are built with the tag
// bench only (issue 30, item 5).
func TestOperatorLinksNoTestFakes(t *testing.T) {
	for _, tc := range []struct {
		tags  string
		fakes bool
	}{{"", false}, {"bench", true}} {
		out, err := exec.Command("go", "list", "-tags", tc.tags, "-deps", module+"/cmd/chorus").CombinedOutput()
		if err != nil {
			t.Fatalf("go list: %v\n%s", err, out)
		}
		var fakes []string
		for _, dep := range strings.Fields(string(out)) {
			if strings.HasSuffix(dep, "test") && strings.HasPrefix(dep, module) || strings.HasSuffix(dep, "/i2cfake") || dep == "net/http/httptest" {
				fakes = append(fakes, dep)
			}
		}
		if tc.fakes != (len(fakes) > 0) {
			t.Errorf("chorus with tags %q links %v", tc.tags, fakes)
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

// A rule is one "never" of the architecture: no package matching From may
// depend, directly or through another package, on one matching Never.
// Patterns are paths inside the module: "runtime/brain/..." is that
// package and everything under it; "..." is every package of the module.
type rule struct {
	Name  string
	From  []string
	Never []string
}

// parts are the architecture's parts (docs/architecture.md, "Parts"),
// each the packages it holds.
var parts = map[string][]string{
	"Daemon":    {"cmd/chorusd/...", "device/daemon/...", "device/doctor/...", "device/panel/..."},
	"CLI":       {"cmd/chorus/...", "runtime/transcript/..."},
	"Parts":     {"device/parts/..."},
	"Web":       {"device/bridge/...", "device/console/...", "device/homeassistant/..."},
	"Body":      {"device/speak/...", "device/vision/...", "device/ear/...", "device/act/...", "device/led/...", "device/button/..."},
	"Realtime":  {"runtime/realtime/..."},
	"Floor":     {"runtime/floor/..."},
	"Companion": {"runtime/companion/..."},
	"Roles":     {"runtime/election/...", "runtime/hearing/..."},
	"Config":    {"runtime/config/..."},
	"Room":      {"runtime/room/..."},
	"Query":     {"runtime/query/..."},
	"Brain":     {"runtime/brain/..."},
	"Transport": {"runtime/bus/...", "runtime/broker/..."},
	"Drivers":   {"drivers/..."},
	"Ground": {"runtime/protocol/...", "runtime/topic/...", "runtime/schema/...", "runtime/seen/...", "runtime/clock/...",
		"runtime/loop/...", "runtime/sentence/...", "runtime/repetition/...", "runtime/metrics/...", "runtime/version/...",
		"runtime/tool/..."},
}

// nevers are docs/architecture.md's nevers, one line each as it writes them: no
// package of the first part depends, directly or not, on one of the
// others.
var nevers = []struct {
	From  string
	Never []string
	Added string // why, for a never this project adds beside docs/architecture.md's
}{
	{"Ground", []string{"Transport", "Drivers"}, ""},
	{"Drivers", []string{"Config", "Companion", "Floor", "Transport", "Ground"}, ""},
	{"Companion", []string{"Drivers", "Body"}, ""},
	{"Realtime", []string{"Drivers", "Companion", "Floor"}, ""},
	{"Brain", []string{"Drivers", "Transport"}, ""},
	{"Floor", []string{"Brain", "Companion"}, ""},
	{"Roles", []string{"Floor", "Companion"}, ""},
	{"Body", []string{"Brain", "Companion", "Floor"}, ""},
	{"Web", []string{"Companion", "Floor"}, ""},
	{"Room", []string{"Floor", "Companion"}, ""},
	{"Query", []string{"Room"}, ""},
	{"Config", []string{"Drivers"}, ""},
	{"Body", []string{"Room", "Transport"}, "the body reaches the room through the daemon's wiring and queries; " +
		"docs/architecture.md allows the ear alone to publish its heard reports to the room itself (allowed, below)"},
}

// allowed are the crossings docs/architecture.md allows on purpose. Each must exist
// (an allowance nobody uses any more is deleted, so the never holds).
var allowed = []violation{
	{"Body never imports Room", "device/ear", "runtime/room"},
	{"Body never imports Transport", "device/ear", "runtime/bus"},
}

// neverRules are nevers as rules, one per pair of parts.
func neverRules() []rule {
	var out []rule
	for _, n := range nevers {
		for _, to := range n.Never {
			out = append(out, rule{Name: n.From + " never imports " + to, From: parts[n.From], Never: parts[to]})
		}
	}
	return out
}

// conversation is what a driver never imports.
var conversation = []string{"runtime/floor/...", "runtime/companion/...", "runtime/brain/...", "runtime/room/...", "runtime/query/...", "runtime/realtime/..."}

// baseRules are the README's import rules (issue 20, item 7).
var baseRules = []rule{
	{"protocol and topic import no other Chorus package", []string{"runtime/protocol", "runtime/topic"}, []string{"..."}},
	{"the model exchange imports no other Chorus package", []string{"runtime/modelhttp"}, []string{"..."}},
	{"nothing in runtime/ imports device/, drivers/ or cmd/", []string{"runtime/..."}, []string{"device/...", "drivers/...", "cmd/...", "tests/..."}},
	{"drivers import nothing of the conversation", []string{"drivers/..."}, conversation},
	{"the floors import no brain", []string{"runtime/floor/..."}, []string{"runtime/brain/..."}},
	{"the brain imports no driver", []string{"runtime/brain/..."}, []string{"drivers/...", "device/..."}},
	{"device/led and device/vision import no companion or brain", []string{"device/led/...", "device/vision/..."}, []string{"runtime/companion/...", "runtime/brain/...", "runtime/realtime/..."}},
	{"the turn room imports neither the realtime room nor the companion", []string{"runtime/floor/..."}, []string{"runtime/realtime/...", "runtime/companion/..."}},
	{"the realtime room imports neither the turn room nor the companion", []string{"runtime/realtime/..."}, []string{"runtime/floor/...", "runtime/companion/..."}},
	{"the memory imports nothing of the conversation", []string{"runtime/memory"}, append(slices.Clone(conversation), "runtime/bus/...", "runtime/hearing/...")},
	{"the room's hearing arbiter imports no floor, companion or brain", []string{"runtime/hearing/..."}, []string{"runtime/floor/...", "runtime/realtime/...", "runtime/companion/...", "runtime/brain/..."}},
}

// rules are the README's import rules and docs/architecture.md's nevers (issue 30,
// item 4).
var rules = append(slices.Clone(baseRules), neverRules()...)

// fileRules hold a part of a package that its package rule cannot: the
// realtime floor lives in one package with the realtime agent, which
// thinks with a brain; none of that package's files but the agent's
// (agent*.go) may depend on a brain.
var fileRules = []struct {
	Name   string
	Pkg    string
	Exempt func(file string) bool
	Never  []string
}{
	{"the realtime floor imports no brain", "runtime/realtime", func(f string) bool { return strings.HasPrefix(f, "agent") }, []string{"runtime/brain/..."}},
}

// knownExceptions are sideways imports tolerated while they are being
// removed: each must be exactly a violation that still exists, so when one
// is fixed TestImportRules fails until its line is deleted here, and the
// rule holds from then on. None remain (issue 20 removed the last two:
// realtime→companion and realtime→floor).
var knownExceptions = []violation{}

type violation struct{ Rule, From, Dep string }

func (v violation) String() string {
	return fmt.Sprintf("%s depends on %s (rule: %s)", v.From, v.Dep, v.Rule)
}

// match reports whether pkg (a path inside the module) matches pattern.
func match(pattern, pkg string) bool {
	if pattern == "..." {
		return true
	}
	if base, ok := strings.CutSuffix(pattern, "/..."); ok {
		return pkg == base || strings.HasPrefix(pkg, base+"/")
	}
	return pkg == pattern
}

func matchAny(patterns []string, pkg string) bool {
	return slices.ContainsFunc(patterns, func(p string) bool { return match(p, pkg) })
}

// violations checks the rules against deps: each package of the module
// (a path inside it) and every package of the module it depends on,
// directly or not.
func violations(deps map[string][]string, rules []rule) []violation {
	var out []violation
	for _, r := range rules {
		for pkg, ds := range deps {
			if !matchAny(r.From, pkg) {
				continue
			}
			for _, d := range ds {
				if d != pkg && matchAny(r.Never, d) {
					out = append(out, violation{Rule: r.Name, From: pkg, Dep: d})
				}
			}
		}
	}
	slices.SortFunc(out, func(a, b violation) int { return strings.Compare(a.String(), b.String()) })
	return slices.Compact(out)
}

// moduleDeps lists every package of the module with the module's packages
// it depends on (directly or not), and each package's directory.
func moduleDeps(t *testing.T, tags string) (deps map[string][]string, dirs map[string]string) {
	t.Helper()
	out, err := exec.Command("go", "list", "-tags", tags, "-f", "{{.ImportPath}} {{.Dir}} {{join .Deps \" \"}}", module+"/...").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	deps, dirs = map[string][]string{}, map[string]string{}
	for line := range strings.Lines(string(out)) {
		f := strings.Fields(line)
		if len(f) < 2 {
			continue
		}
		pkg, ok := inModule(f[0])
		if !ok {
			continue
		}
		dirs[pkg] = f[1]
		deps[pkg] = []string{}
		for _, d := range f[2:] {
			if d, ok := inModule(d); ok {
				deps[pkg] = append(deps[pkg], d)
			}
		}
	}
	if len(deps) < 20 {
		t.Fatalf("go list found %d packages of %s: %s", len(deps), module, out)
	}
	return deps, dirs
}

func inModule(path string) (string, bool) {
	if path == module {
		return "", false
	}
	return strings.CutPrefix(path, module+"/")
}

// TestImportRules holds every "never" of the architecture on the real
// import graph, with every build tag set: a broken rule fails the build,
// naming the package, what it depends on and the rule.
func TestImportRules(t *testing.T) {
	for _, tags := range []string{"", "gocv portaudio"} {
		deps, dirs := moduleDeps(t, tags)
		for _, r := range rules {
			for _, from := range r.From {
				if !slices.ContainsFunc(keys(deps), func(p string) bool { return match(from, p) }) {
					t.Errorf("rule %q: no package matches %s (moved? update the rule)", r.Name, from)
				}
			}
		}
		got := violations(deps, rules)
		got = append(got, fileViolations(t, deps, dirs)...)
		for _, v := range got {
			if !slices.Contains(knownExceptions, v) && !slices.Contains(allowed, v) {
				t.Errorf("tags %q: %v", tags, v)
			}
		}
		for _, a := range allowed {
			if !slices.Contains(got, a) {
				t.Errorf("tags %q: the allowed crossing %v is no longer made: delete it from allowed so the never holds", tags, a)
			}
		}
		for _, k := range knownExceptions {
			if !slices.Contains(got, k) {
				t.Errorf("tags %q: known exception %v is fixed: delete it from knownExceptions so the rule holds", tags, k)
			}
		}
	}
}

// fileViolations checks fileRules: each file's imports of the module, and
// everything those depend on.
func fileViolations(t *testing.T, deps map[string][]string, dirs map[string]string) []violation {
	t.Helper()
	var out []violation
	for _, r := range fileRules {
		dir, ok := dirs[r.Pkg]
		if !ok {
			t.Errorf("file rule %q: no package %s (moved? update the rule)", r.Name, r.Pkg)
			continue
		}
		files, err := filepath.Glob(filepath.Join(dir, "*.go"))
		if err != nil || len(files) == 0 {
			t.Fatalf("file rule %q: no Go files in %s: %v", r.Name, dir, err)
		}
		for _, file := range files {
			name := filepath.Base(file)
			if strings.HasSuffix(name, "_test.go") || r.Exempt(name) {
				continue
			}
			f, err := parser.ParseFile(token.NewFileSet(), file, nil, parser.ImportsOnly)
			if err != nil {
				t.Fatalf("file rule %q: %v", r.Name, err)
			}
			for _, spec := range f.Imports {
				path, _ := strconv.Unquote(spec.Path.Value)
				imp, ok := inModule(path)
				if !ok {
					continue
				}
				for _, d := range append([]string{imp}, deps[imp]...) {
					if matchAny(r.Never, d) {
						out = append(out, violation{Rule: r.Name, From: r.Pkg + "/" + name, Dep: d})
					}
				}
			}
		}
	}
	return out
}

func keys(m map[string][]string) []string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	return ks
}

// TestViolationsFindsWhatBreaksARule: the checker itself, on a made-up
// graph, finds a direct and an indirect dependency that breaks a rule,
// ignores what no rule forbids, and reads "..." patterns right.
func TestViolationsFindsWhatBreaksARule(t *testing.T) {
	deps := map[string][]string{
		"device/led":          {"runtime/companion", "runtime/brain", "runtime/protocol"}, // companion brings the brain along
		"device/ledger":       {"runtime/companion"},                                      // not device/led/...
		"device/vision":       {"drivers/camera"},
		"runtime/protocol":    {},
		"runtime/topic":       {"runtime/protocol"},
		"runtime/floor":       {"runtime/protocol", "runtime/floor/internal/x"},
		"runtime/floor/inner": {"runtime/brain/llm"},
		"drivers/tts":         {"runtime/metrics"},
	}
	got := violations(deps, baseRules)
	want := []violation{
		{"device/led and device/vision import no companion or brain", "device/led", "runtime/brain"},
		{"device/led and device/vision import no companion or brain", "device/led", "runtime/companion"},
		{"the floors import no brain", "runtime/floor/inner", "runtime/brain/llm"},
		{"protocol and topic import no other Chorus package", "runtime/topic", "runtime/protocol"},
	}
	slices.SortFunc(want, func(a, b violation) int { return strings.Compare(a.String(), b.String()) })
	if !slices.Equal(got, want) {
		t.Errorf("violations:\n got %v\nwant %v", got, want)
	}
	for _, tc := range []struct {
		pattern, pkg string
		want         bool
	}{
		{"...", "cmd/chorus", true},
		{"runtime/...", "runtime", true},
		{"runtime/...", "runtime/brain/llm", true},
		{"runtime/...", "runtimex", false},
		{"device/led/...", "device/ledger", false},
		{"runtime/protocol", "runtime/protocol/x", false},
	} {
		if got := match(tc.pattern, tc.pkg); got != tc.want {
			t.Errorf("match(%q, %q) = %v", tc.pattern, tc.pkg, got)
		}
	}
}

// TestArchitectureListsEveryPackage: the package table of
// docs/architecture.md (its Packages section) names every package of the
// module, with every build tag set — a row of its own, or a subpackage
// named in its parent's row (`bustest` in `runtime/bus`'s).
func TestArchitectureListsEveryPackage(t *testing.T) {
	doc, err := os.ReadFile("../docs/architecture.md")
	if err != nil {
		t.Fatal(err)
	}
	rows := packageTable(string(doc))
	if len(rows) < 20 {
		t.Fatalf("docs/architecture.md's package table has %d rows", len(rows))
	}
	for _, tags := range []string{"", "gocv portaudio"} {
		deps, _ := moduleDeps(t, tags)
		for _, pkg := range slices.Sorted(maps.Keys(deps)) {
			if pkg == "" {
				continue
			}
			if !listed(rows, pkg) {
				t.Errorf("tags %q: docs/architecture.md's package table does not name %s", tags, pkg)
			}
		}
	}
}

// tableRow is one row of the package table: the packages of its first
// cell, and the whole row.
type tableRow struct {
	pkgs []string
	text string
}

var backticked = regexp.MustCompile("`([^`]+)`")

// packageTable reads the rows of the table in the Packages section of
// docs/architecture.md.
func packageTable(doc string) []tableRow {
	_, section, _ := strings.Cut(doc, "\n## Packages\n")
	section, _, _ = strings.Cut(section, "\n## ")
	var rows []tableRow
	for line := range strings.Lines(section) {
		cells := strings.Split(line, "|")
		if !strings.HasPrefix(line, "| `") || len(cells) < 3 {
			continue
		}
		r := tableRow{text: line}
		for _, m := range backticked.FindAllStringSubmatch(cells[1], -1) {
			r.pkgs = append(r.pkgs, strings.TrimSuffix(m[1], "/"))
		}
		rows = append(rows, r)
	}
	return rows
}

// listed reports whether pkg has a row, or is named in the row of its
// nearest listed parent (by its path below the parent, or its last
// element).
func listed(rows []tableRow, pkg string) bool {
	best, parent := -1, ""
	for i, r := range rows {
		for _, p := range r.pkgs {
			if p == pkg {
				return true
			}
			if strings.HasPrefix(pkg, p+"/") && len(p) > len(parent) {
				best, parent = i, p
			}
		}
	}
	if best < 0 {
		return false
	}
	rel := strings.TrimPrefix(pkg, parent+"/")
	last := rel[strings.LastIndex(rel, "/")+1:]
	return strings.Contains(rows[best].text, "`"+rel+"`") || strings.Contains(rows[best].text, "`"+last+"`")
}

func TestListedReadsTheTable(t *testing.T) {
	rows := packageTable("# x\n## Packages\n| package | what |\n|---|---|\n" +
		"| `runtime/bus` | the bus; `bustest` starts brokers |\n| `a/b`, `c/` | two |\n## Next\n| `late` | after the section |\n")
	for pkg, want := range map[string]bool{
		"runtime/bus": true, "runtime/bus/bustest": true, "runtime/bus/other": false,
		"a/b": true, "c": true, "c/d": false, "late": false, "runtime": false,
	} {
		if got := listed(rows, pkg); got != want {
			t.Errorf("listed(%s) = %v; want %v", pkg, got, want)
		}
	}
}

// TestNeversMirrorTheArchitecture: the nevers table is
// docs/architecture.md's, line for line ("Never: Ground → Transport or
// Drivers; …"), and its parts are that page's parts table.
func TestNeversMirrorTheArchitecture(t *testing.T) {
	design, err := os.ReadFile("../docs/architecture.md")
	if err != nil {
		t.Fatal(err)
	}
	_, text, ok := strings.Cut(string(design), "\nNever: ")
	if !ok {
		t.Fatal("docs/architecture.md has no \"Never: \" line")
	}
	text, _, _ = strings.Cut(text, "\nAllowed on purpose")
	text = strings.Join(strings.Fields(text), " ")
	want := map[string][]string{}
	for _, clause := range strings.Split(strings.TrimSuffix(text, "."), ";") {
		from, to, ok := strings.Cut(clause, "→")
		if !ok {
			t.Fatalf("docs/architecture.md's never %q has no arrow", clause)
		}
		to, _, _ = strings.Cut(to, "(") // "(drivers take plain fields and interfaces)"
		var names []string
		for _, n := range strings.FieldsFunc(strings.ReplaceAll(to, " or ", ","), func(r rune) bool { return r == ',' }) {
			names = append(names, strings.TrimSpace(n))
		}
		want[strings.TrimSpace(from)] = append(want[strings.TrimSpace(from)], names...)
	}
	got := map[string][]string{}
	for _, n := range nevers {
		if n.Added == "" {
			got[n.From] = append(got[n.From], n.Never...)
		}
		for _, p := range append([]string{n.From}, n.Never...) {
			if _, ok := parts[p]; !ok {
				t.Errorf("the nevers name %s, which is no part", p)
			}
		}
	}
	for from, ws := range want {
		if !slices.Equal(slices.Sorted(slices.Values(ws)), slices.Sorted(slices.Values(got[from]))) {
			t.Errorf("%s never imports %v in docs/architecture.md, %v in the table", from, ws, got[from])
		}
	}
	for from := range got {
		if _, ok := want[from]; !ok {
			t.Errorf("the table has nevers of %s that docs/architecture.md does not", from)
		}
	}
	// The parts table: "| Daemon | `cmd/chorusd`, `device/daemon`, … |"
	// (Ground's row names `runtime/protocol` and then `topic`, `schema` …).
	for name, pkgs := range parts {
		named := map[string]bool{}
		for line := range strings.Lines(string(design)) {
			if strings.HasPrefix(line, "| ") && strings.Contains(line, name) {
				for _, m := range backticked.FindAllStringSubmatch(line, -1) {
					named[strings.TrimSuffix(m[1], "/")] = true
				}
			}
		}
		for _, p := range pkgs {
			p = strings.TrimSuffix(p, "/...")
			if !named[p] && !named[strings.TrimPrefix(p, "runtime/")] {
				t.Errorf("part %s: docs/architecture.md's parts table does not name %s", name, p)
			}
		}
	}
}
