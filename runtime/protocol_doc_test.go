package runtime_test

import (
	"bufio"
	"bytes"
	"fmt"
	"go/constant"
	"go/importer"
	"go/token"
	"go/types"
	"io"
	"os"
	"os/exec"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chorus-robotics/chorus/runtime/topic"
)

// protocolDoc is the project's wire protocol, which the code must match.
const protocolDoc = "../docs/protocol.md"

// wirePackages are the packages whose exported constants are wire values,
// limits or timings of the protocol: every one must be in protocolDoc.
// The exported structs of runtime/protocol are its payloads.
var wirePackages = []string{"protocol", "topic", "floor", "realtime", "election", "hearing"}

// TestProtocolDocCoversTheCode holds docs/protocol.md to the code: every
// topic the scheme builds, every constant of the wire packages (methods,
// query types, enum values, metadata keys as `value`; limits and timings
// as a line naming the constant with its value), every JSON field of
// every payload type (in the section whose heading names the type), and
// the Mosquitto ACL the scheme renders for the document's example room.
// The lists come from the compiled packages (their export data: constant
// values, struct tags, parameter names), not from a copy here.
func TestProtocolDocCoversTheCode(t *testing.T) {
	doc, err := os.ReadFile(protocolDoc)
	if err != nil {
		t.Fatal(err)
	}
	pkgs := exportedPackages(t, wirePackages)
	var missing []string
	for _, short := range wirePackages {
		missing = append(missing, constantsMissing(string(doc), pkgs[short])...)
	}
	missing = append(missing, fieldsMissing(string(doc), pkgs["protocol"])...)
	missing = append(missing, topicsMissing(string(doc), pkgs["topic"])...)
	missing = append(missing, aclMissing(string(doc))...)
	if len(missing) > 0 {
		t.Errorf("docs/protocol.md does not match the code; %d missing:\n  %s", len(missing), strings.Join(missing, "\n  "))
	}
}

// TestProtocolDocCheckFindsWhatIsMissing proves the checks fail on a
// document that lacks a row, a field or a topic.
func TestProtocolDocCheckFindsWhatIsMissing(t *testing.T) {
	doc, err := os.ReadFile(protocolDoc)
	if err != nil {
		t.Fatal(err)
	}
	pkgs := exportedPackages(t, []string{"protocol", "topic"})
	for _, tc := range []struct {
		name, cut string
		check     func(string) []string
		want      string
	}{
		{"a reason", "`rest`", func(d string) []string { return constantsMissing(d, pkgs["protocol"]) }, "ReasonRest"},
		{"a limit", "`DefaultMaxBytes`", func(d string) []string { return constantsMissing(d, pkgs["protocol"]) }, "DefaultMaxBytes"},
		{"a field", "`decidedBy`", func(d string) []string { return fieldsMissing(d, pkgs["protocol"]) }, "TurnGrant.decidedBy"},
		{"a topic", "`chorus/rooms/{room}/turns`", func(d string) []string { return topicsMissing(d, pkgs["topic"]) }, "Turns"},
		{"the ACL", "pattern write chorus/devices/%u/probe\n", aclMissing, "MosquittoACL"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cut := strings.ReplaceAll(string(doc), tc.cut, "")
			if cut == string(doc) {
				t.Fatalf("the document has no %q to cut", tc.cut)
			}
			if got := tc.check(string(doc)); len(got) > 0 {
				t.Fatalf("the whole document already misses %v", got)
			}
			got := tc.check(cut)
			if !slices.ContainsFunc(got, func(s string) bool { return strings.Contains(s, tc.want) }) {
				t.Errorf("without %q the check reports %v, nothing about %s", tc.cut, got, tc.want)
			}
		})
	}
}

// exportedPackages loads runtime/<short> for each short name from the
// compiler's export data (built by go list -export).
func exportedPackages(t *testing.T, shorts []string) map[string]*types.Package {
	t.Helper()
	args := []string{"list", "-export", "-deps", "-f", "{{.ImportPath}}\t{{.Export}}"}
	for _, s := range shorts {
		args = append(args, module+"/runtime/"+s)
	}
	out, err := exec.Command("go", args...).Output()
	if err != nil {
		t.Fatalf("go list -export: %v", err)
	}
	exports := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		if path, file, ok := strings.Cut(sc.Text(), "\t"); ok && file != "" {
			exports[path] = file
		}
	}
	imp := importer.ForCompiler(token.NewFileSet(), "gc", func(path string) (io.ReadCloser, error) {
		f, ok := exports[path]
		if !ok {
			return nil, fmt.Errorf("no export data for %s", path)
		}
		return os.Open(f)
	})
	pkgs := map[string]*types.Package{}
	for _, s := range shorts {
		p, err := imp.Import(module + "/runtime/" + s)
		if err != nil {
			t.Fatalf("import runtime/%s: %v", s, err)
		}
		pkgs[s] = p
	}
	return pkgs
}

// constantsMissing checks p's exported constants: a string is a wire
// value and must appear as `value`; a number is a limit or a timing and
// must appear on a line that names it as `Name` and gives its value (a
// duration as Go writes it: 1.5s, 10m0s).
func constantsMissing(doc string, p *types.Package) []string {
	var missing []string
	for _, name := range p.Scope().Names() {
		c, ok := p.Scope().Lookup(name).(*types.Const)
		if !ok || !c.Exported() {
			continue
		}
		v := c.Val()
		if v.Kind() == constant.String {
			if s := constant.StringVal(v); !strings.Contains(doc, "`"+s+"`") {
				missing = append(missing, fmt.Sprintf("%s.%s: the value `%s`", p.Name(), name, s))
			}
			continue
		}
		want := v.ExactString()
		if named, ok := c.Type().(*types.Named); ok {
			if named.Obj().Pkg() == nil || named.Obj().Pkg().Path() != "time" || named.Obj().Name() != "Duration" {
				continue // a number of a type of its own is a package's enum (election.Tick), not a limit
			}
			n, _ := constant.Int64Val(v)
			want = fmtDuration(n)
		}
		if !lineWith(doc, "`"+name+"`", want) {
			missing = append(missing, fmt.Sprintf("%s.%s: a line with `%s` and its value %s", p.Name(), name, name, want))
		}
	}
	return missing
}

func fmtDuration(ns int64) string { return time.Duration(ns).String() }

// lineWith reports whether a line of doc holds name and value, the value
// as a whole word.
func lineWith(doc, name, value string) bool {
	word := regexp.MustCompile(`(^|[^\w.-])` + regexp.QuoteMeta(value) + `($|[^\w.])`)
	for line := range strings.Lines(doc) {
		if strings.Contains(line, name) && word.MatchString(line) {
			return true
		}
	}
	return false
}

// fieldsMissing checks every JSON field of p's exported structs: it must
// appear as `field` in a section whose heading names the struct as `Type`.
func fieldsMissing(doc string, p *types.Package) []string {
	var missing []string
	for _, name := range p.Scope().Names() {
		tn, ok := p.Scope().Lookup(name).(*types.TypeName)
		if !ok || !tn.Exported() {
			continue
		}
		st, ok := tn.Type().Underlying().(*types.Struct)
		if !ok {
			continue
		}
		var fields []string
		for i := range st.NumFields() {
			tag, _, _ := strings.Cut(reflect.StructTag(st.Tag(i)).Get("json"), ",")
			if st.Field(i).Exported() && tag != "" && tag != "-" {
				fields = append(fields, tag)
			}
		}
		if len(fields) == 0 {
			continue
		}
		sec, ok := section(doc, "`"+name+"`")
		if !ok {
			missing = append(missing, fmt.Sprintf("%s: no heading names `%s`", name, name))
			continue
		}
		for _, f := range fields {
			if !strings.Contains(sec, "`"+f+"`") {
				missing = append(missing, fmt.Sprintf("%s.%s: `%s` in the section of `%s`", name, f, f, name))
			}
		}
	}
	return missing
}

// section returns the text under the first heading that contains mark, up
// to the next heading of the same or a higher level. A line in a fenced
// block (the ACL's comments) is never a heading.
func section(doc, mark string) (string, bool) {
	lines := strings.SplitAfter(doc, "\n")
	fenced := make([]bool, len(lines))
	in := false
	for i, l := range lines {
		if strings.HasPrefix(l, "```") {
			in = !in
		}
		fenced[i] = in
	}
	level := func(i int) int {
		l := lines[i]
		n := len(l) - len(strings.TrimLeft(l, "#"))
		if fenced[i] || n == 0 || !strings.HasPrefix(l[n:], " ") {
			return 0
		}
		return n
	}
	for i, l := range lines {
		lv := level(i)
		if lv == 0 || !strings.Contains(l, mark) {
			continue
		}
		var b strings.Builder
		for j := i + 1; j < len(lines); j++ {
			if n := level(j); n > 0 && n <= lv {
				break
			}
			b.WriteString(lines[j])
		}
		return b.String(), true
	}
	return "", false
}

// topicsMissing builds every topic the scheme builds, each argument the
// parameter's name in braces (Message(room, sender) is
// chorus/rooms/{room}/messages/{sender}); filters (+, #) are left out.
func topicsMissing(doc string, p *types.Package) []string {
	scheme := reflect.ValueOf(topic.New(topic.DefaultPrefix))
	named := p.Scope().Lookup("Scheme").Type().(*types.Named)
	var missing []string
	for i := range named.NumMethods() {
		m := named.Method(i)
		sig := m.Type().(*types.Signature)
		if !m.Exported() || sig.Results().Len() != 1 || !isString(sig.Results().At(0).Type()) {
			continue
		}
		var args []reflect.Value
		for j := range sig.Params().Len() {
			par := sig.Params().At(j)
			if !isString(par.Type()) {
				args = nil
				break
			}
			args = append(args, reflect.ValueOf("{"+par.Name()+"}"))
		}
		if len(args) != sig.Params().Len() {
			continue
		}
		got := scheme.MethodByName(m.Name()).Call(args)[0].String()
		if strings.ContainsAny(got, "+#\n") {
			continue
		}
		if !strings.Contains(doc, "`"+got+"`") {
			missing = append(missing, fmt.Sprintf("topic.Scheme.%s: the topic `%s`", m.Name(), got))
		}
	}
	return missing
}

func isString(t types.Type) bool {
	b, ok := t.(*types.Basic)
	return ok && b.Kind() == types.String
}

// exampleScheme is the room the document renders the ACL for: two robots,
// kyoko and hana, heard as the person "user".
func exampleScheme() topic.Scheme {
	return topic.New(topic.DefaultPrefix).WithRoster("livingroom", []string{"kyoko", "hana"}).WithVoice("livingroom", "user")
}

// aclMissing checks that the document holds the Mosquitto ACL the scheme
// renders for the example room, line for line.
func aclMissing(doc string) []string {
	if acl := exampleScheme().MosquittoACL("user"); !strings.Contains(doc, "```\n"+acl+"```\n") {
		return []string{"topic.Scheme.MosquittoACL: the example room's rendered ACL, as it is now:\n" + acl}
	}
	return nil
}
