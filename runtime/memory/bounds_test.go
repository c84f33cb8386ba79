package memory

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestLoadRefusesWhatAddRefuses: a record Add or Touch would never write
// is skipped like a bad line, counted, and erased by the rewrite.
func TestLoadRefusesWhatAddRefuses(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "robot-a.facts")
	good := func(id, text string) string {
		return string(factLine(Fact{ID: id, Person: "p1", Text: text, Created: testTime}))
	}
	bad := []string{
		`{"op":"fact","id":"b1","person":"../../etc","text":"traversal secret"}`,
		`{"op":"fact","id":"b2","person":"a b","text":"spaced secret"}`,
		`{"op":"fact","id":"b3","person":"p1","text":"long secret ` + strings.Repeat("y", MaxText) + `"}`,
		`{"op":"fact","id":"b4","person":"p1","key":"` + strings.Repeat("k", MaxKey+1) + `","text":"keyed secret"}`,
		`{"op":"fact","id":"b5","person":"p1","text":"unknown secret","colour":"red"}`,
		`{"op":"fact","id":"b6","person":"p1","text":"timed secret","at":"2026-01-01T00:00:00Z"}`,
		`{"op":"met","person":"x/y","at":"2026-01-01T00:00:00Z"}`,
		`{"op":"met","person":"met-secret","at":"2026-01-01T00:00:00Z","text":"extra"}`,
		`{"op":"end","n":1,"extra":true}`,
	}
	os.WriteFile(path, []byte(good("a", "first fact")+strings.Join(bad, "\n")+"\n"+good("c", "last fact")), 0o600)
	s := open(t, dir, Limits{})
	if got := texts(s.Facts("")); !slices.Equal(got, []string{"first fact", "last fact"}) {
		t.Errorf("facts %q", got)
	}
	if s.Repaired() != len(bad) {
		t.Errorf("repaired %d, want %d", s.Repaired(), len(bad))
	}
	if !slices.Equal(s.People(), []string{"p1"}) {
		t.Errorf("people %q", s.People())
	}
	for _, secret := range []string{"secret", "../../etc", "x/y", "colour"} {
		if n := grep(t, dir, secret); n != 0 {
			t.Errorf("%q found %d times after the rewrite", secret, n)
		}
	}
	s.Close()
	s = open(t, dir, Limits{})
	if s.Repaired() != 0 || len(s.Facts("")) != 2 {
		t.Errorf("reopened: repaired %d, facts %q", s.Repaired(), texts(s.Facts("")))
	}
	// What Load refuses, Add and Touch refuse too.
	if got := add(t, s, Fact{Person: "../../etc", Text: "x"}, Fact{Person: "a#b", Text: "x"}); len(got) != 0 {
		t.Errorf("Add stored %+v", got)
	}
	if err := s.Touch("a/b"); err == nil {
		t.Error("Touch took a person with a '/'")
	}
}
