package memory

import (
	"bytes"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestBytesEvictsStrangersFirst: over Limits.Bytes, the met records of
// people without facts go before anyone's facts (the tester's case: a
// person's 3 facts, then 400 strangers, at 16 KiB).
func TestBytesEvictsStrangersFirst(t *testing.T) {
	dir := t.TempDir()
	lim := Limits{Bytes: 16 << 10}
	s := open(t, dir, lim)
	add(t, s, Fact{Person: "alice", Key: "name", Text: "name is Alice"},
		Fact{Person: "alice", Key: "like:green tea", Text: "likes green tea"},
		Fact{Person: "alice", Text: "has a cat called Mittens"})
	for i := range 400 {
		if err := s.Touch(fmt.Sprintf("stranger-%03d", i)); err != nil {
			t.Fatal(err)
		}
	}
	check := func() {
		t.Helper()
		if got := texts(s.Facts("alice")); len(got) != 3 {
			t.Errorf("alice's facts %q, want all 3", got)
		}
		st := s.cur()
		if st.bytes > lim.Bytes {
			t.Errorf("live bytes %d over %d", st.bytes, lim.Bytes)
		}
		if n := len(st.met); n >= 400 || n < 100 {
			t.Errorf("%d met records kept", n)
		}
		if !s.Met("stranger-399") || s.Met("stranger-000") {
			t.Error("the newest stranger forgotten, or the oldest kept")
		}
		fi, err := os.Stat(s.Path())
		if err != nil || fi.Size() > lim.Bytes {
			t.Errorf("file %v bytes, over %d: %v", fi.Size(), lim.Bytes, err)
		}
		if grep(t, dir, "stranger-000") != 0 {
			t.Error("an evicted met record is still in the directory")
		}
	}
	check()
	s.Close()
	s = open(t, dir, lim)
	check()
}

// TestFitOrder: each eviction over the byte bound takes the oldest met
// record of a person without facts, then the oldest unpinned fact, then
// the oldest met record of a person with facts, then a pinned fact.
func TestFitOrder(t *testing.T) {
	big := Limits{PerPerson: 100, Total: 100, Bytes: 1 << 20}
	st := newState()
	var d drops
	at := testTime
	st.touch("bob", at, big, &d)                           // has a fact (pinned) below
	st.touch("stranger-old", at.Add(time.Second), big, &d) // no fact
	st.touch("stranger-new", at.Add(2*time.Second), big, &d)
	st.apply(Fact{ID: "n", Person: "bob", Key: "name", Text: "name is Bob", Pinned: true}, big, &d)
	st.apply(Fact{ID: "u1", Person: "bob", Text: "likes tea"}, big, &d)
	st.apply(Fact{ID: "u2", Person: "carol", Text: "likes coffee"}, big, &d)
	if d.any() {
		t.Fatalf("dropped while building: %+v", d)
	}
	var order []string
	for len(st.facts)+len(st.met) > 0 {
		before := map[string]bool{}
		for p := range st.met {
			before["met "+p] = true
		}
		for _, e := range st.facts {
			before["fact "+e.f.ID] = true
		}
		st.fit(Limits{Bytes: st.bytes - 1 + endReserve}, &d)
		after := map[string]bool{}
		for p := range st.met {
			after["met "+p] = true
		}
		for _, e := range st.facts {
			after["fact "+e.f.ID] = true
		}
		var gone []string
		for k := range before {
			if !after[k] {
				gone = append(gone, k)
			}
		}
		if len(gone) != 1 {
			t.Fatalf("one eviction took %q", gone)
		}
		order = append(order, gone[0])
	}
	want := []string{"met stranger-old", "met stranger-new", "fact u1", "fact u2", "met bob", "fact n"}
	if !slices.Equal(order, want) {
		t.Errorf("evicted %q, want %q", order, want)
	}
	if d.met != 3 || d.facts != 3 {
		t.Errorf("counted %+v", d)
	}
}

// TestOpenSmallerBytesWarns: opening a file with a smaller Limits.Bytes
// than it holds drops records to fit, says how many in a WARN line, and
// erases them.
func TestOpenSmallerBytesWarns(t *testing.T) {
	dir := t.TempDir()
	s := open(t, dir, Limits{})
	add(t, s, Fact{Person: "alice", Key: "name", Text: "name is Alice"})
	for i := range 120 {
		add(t, s, Fact{Person: "alice", Text: fmt.Sprintf("fact %03d %s", i, strings.Repeat("x", 100))})
	}
	for i := range 200 {
		s.Touch(fmt.Sprintf("stranger-%03d", i))
	}
	factsBefore, metBefore := len(s.Facts("")), len(s.cur().met)
	s.Close()

	var logs bytes.Buffer
	lim := Limits{Bytes: 8 << 10}
	s, err := Open(dir, "robot-a", lim, slog.New(slog.NewTextHandler(&logs, nil)))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	m := regexp.MustCompile(`level=WARN msg="memory: dropping records to fit the limits".* facts=(\d+) met=(\d+)`).FindStringSubmatch(logs.String())
	if m == nil {
		t.Fatalf("no WARN line saying what was dropped:\n%s", logs.String())
	}
	facts, _ := strconv.Atoi(m[1])
	met, _ := strconv.Atoi(m[2])
	if facts != factsBefore-len(s.Facts("")) || met != metBefore-len(s.cur().met) || facts == 0 || met == 0 {
		t.Errorf("logged facts=%d met=%d; before %d/%d, after %d/%d", facts, met, factsBefore, metBefore, len(s.Facts("")), len(s.cur().met))
	}
	if got := s.Facts("alice"); len(got) == 0 || got[0].Text != "name is Alice" {
		t.Errorf("the name was evicted: %q", texts(got))
	}
	if grep(t, dir, "fact 000 ") != 0 || grep(t, dir, "stranger-000") != 0 {
		t.Error("a record dropped to fit is still in the directory")
	}
	if fi, _ := os.Stat(s.Path()); fi.Size() > lim.Bytes {
		t.Errorf("file %d bytes, over %d", fi.Size(), lim.Bytes)
	}
}

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

// TestCorrectionErased: a fact superseded (by key or by id) or evicted is
// found nowhere in the directory once Add returns.
func TestCorrectionErased(t *testing.T) {
	dir := t.TempDir()
	s := open(t, dir, Limits{PerPerson: 4})
	add(t, s, Fact{Person: "p1", Key: "name", Text: "name is Alice"})
	add(t, s, Fact{Person: "p1", Key: "name", Text: "name is Alicia"})
	osaka := add(t, s, Fact{Person: "p1", Text: "lives in Osaka"})[0]
	add(t, s, Fact{Person: "p1", Text: "lives in Kyoto", Supersedes: osaka.ID})
	add(t, s, Fact{Person: "p1", Key: "color", Text: "likes blue"}, Fact{Person: "p1", Key: "color", Text: "likes green"})
	add(t, s, Fact{Person: "p1", Text: "has a dog"}, Fact{Person: "p1", Text: "has a cat"}) // evicts "lives in Kyoto"
	for _, gone := range []string{"name is Alice\"", "Osaka", "likes blue", "Kyoto"} {
		if n := grep(t, dir, gone); n != 0 {
			t.Errorf("%q found %d times in the directory", gone, n)
		}
	}
	want := []string{"name is Alicia", "likes green", "has a dog", "has a cat"}
	if got := texts(s.Facts("")); !slices.Equal(got, want) {
		t.Errorf("facts %q, want %q", got, want)
	}
	s.Close()
	s = open(t, dir, Limits{PerPerson: 4})
	if got := texts(s.Facts("")); !slices.Equal(got, want) || s.Repaired() != 0 {
		t.Errorf("reopened: facts %q, repaired %d", got, s.Repaired())
	}
}

// TestFileBoundedByBytes: the file itself never grows over Limits.Bytes.
func TestFileBoundedByBytes(t *testing.T) {
	dir := t.TempDir()
	lim := Limits{Bytes: 8 << 10}
	s := open(t, dir, lim)
	for i := range 200 {
		add(t, s, Fact{Person: fmt.Sprintf("p%d", i%7), Text: fmt.Sprintf("fact %d %s", i, strings.Repeat("x", 150))})
		if i%3 == 0 {
			if err := s.Touch(fmt.Sprintf("q%d", i)); err != nil {
				t.Fatal(err)
			}
		}
		fi, err := os.Stat(s.Path())
		if err != nil {
			t.Fatal(err)
		}
		if fi.Size() > lim.Bytes {
			t.Fatalf("after %d adds the file is %d bytes, over %d", i+1, fi.Size(), lim.Bytes)
		}
	}
}
