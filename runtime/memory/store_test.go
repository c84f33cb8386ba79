package memory

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

func open(t testing.TB, dir string, lim Limits) *Store {
	t.Helper()
	s, err := Open(dir, "robot-a", lim, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func add(t testing.TB, s *Store, facts ...Fact) []Fact {
	t.Helper()
	out, err := s.Add(facts...)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func texts(fs []Fact) []string {
	var out []string
	for _, f := range fs {
		out = append(out, f.Text)
	}
	return out
}

// grep counts the occurrences of s in every file of dir.
func grep(t *testing.T, dir, s string) int {
	t.Helper()
	n := 0
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		n += bytes.Count(b, []byte(s))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func TestAddAssignsAndReopens(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "state")
	s := open(t, dir, Limits{})
	got := add(t, s, Fact{Person: "p1", MessageID: "m1", Key: "name", Text: "name is Alice"},
		Fact{Person: "p1", MessageID: "m1", Key: "like:green tea", Text: "likes\ngreen   tea"})
	if len(got) != 2 || got[0].ID == "" || got[0].Created.IsZero() || got[0].Robot != "robot-a" || !got[0].Pinned {
		t.Fatalf("stored %+v", got)
	}
	if got[1].Text != "likes green tea" {
		t.Errorf("text %q, want one line", got[1].Text)
	}
	if fi, err := os.Stat(dir); err != nil || fi.Mode().Perm() != 0o700 {
		t.Errorf("dir mode %v, %v", fi.Mode(), err)
	}
	s.Close()
	s2 := open(t, dir, Limits{})
	if !slices.EqualFunc(s2.Facts("p1"), got, func(a, b Fact) bool { return fmt.Sprint(a) == fmt.Sprint(b) }) {
		t.Errorf("reopened %+v, want %+v", s2.Facts("p1"), got)
	}
	if s2.Repaired() != 0 {
		t.Errorf("repaired %d", s2.Repaired())
	}
	if _, err := Open(dir, "robot-a", Limits{}, nil); err == nil {
		t.Error("a second Open of the same file succeeded")
	}
}

func TestAddRefuses(t *testing.T) {
	s := open(t, t.TempDir(), Limits{})
	long := strings.Repeat("長", 300)
	got := add(t, s,
		Fact{Person: "", Text: "no person"},
		Fact{Person: "p", Text: "  "},
		Fact{Person: "p\x00", Text: "control"},
		Fact{Person: strings.Repeat("p", MaxID+1), Text: "long person"},
		Fact{Person: "p", Text: long, ID: "x"},
		Fact{Person: "p", Text: "again", ID: "x"},
	)
	if len(got) != 1 || got[0].ID != "x" || len([]rune(got[0].Text)) != MaxText {
		t.Fatalf("stored %+v", got)
	}
}

func TestTouchMet(t *testing.T) {
	dir := t.TempDir()
	s := open(t, dir, Limits{})
	if s.Met("p1") {
		t.Fatal("met before")
	}
	for range 3 {
		if err := s.Touch("p1"); err != nil {
			t.Fatal(err)
		}
	}
	add(t, s, Fact{Person: "p2", Text: "likes tea"})
	if !s.Met("p1") || !s.Met("p2") || s.Met("p3") {
		t.Error("met wrong")
	}
	if got := grep(t, dir, `"op":"met"`); got != 1 {
		t.Errorf("%d met records, want 1", got)
	}
	s.Close()
	s = open(t, dir, Limits{})
	if !s.Met("p1") || !slices.Equal(s.People(), []string{"p1", "p2"}) {
		t.Errorf("after reopen: people %v", s.People())
	}
}

// TestTornLastLine cuts the file at every byte offset inside the last
// record: every earlier fact survives, the torn one is gone, and the
// file is cut back to the last good line.
func TestTornLastLine(t *testing.T) {
	src := t.TempDir()
	s := open(t, src, Limits{})
	add(t, s, Fact{Person: "p1", Key: "name", Text: "name is Alice"})
	s.Touch("p1")
	add(t, s, Fact{Person: "p1", Text: "likes green tea"})
	last := add(t, s, Fact{Person: "p2", Text: "has a torn sentence"})[0]
	s.Close()
	data, err := os.ReadFile(filepath.Join(src, "robot-a.facts"))
	if err != nil {
		t.Fatal(err)
	}
	start := bytes.LastIndexByte(data[:len(data)-1], '\n') + 1
	cases := map[string][]byte{}
	for cut := start; cut < len(data); cut++ {
		cases[fmt.Sprintf("cut at %d", cut)] = data[:cut]
	}
	cases["garbage last line"] = append(slices.Clone(data[:start]), "{\"op\":\"fact\",\"id\":\x00\x00\n"...)
	cases["zeros"] = append(slices.Clone(data[:start]), make([]byte, 40)...)
	for name, b := range cases {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "robot-a.facts")
			if err := os.WriteFile(path, b, 0o600); err != nil {
				t.Fatal(err)
			}
			s := open(t, dir, Limits{})
			if got := texts(s.Facts("")); !slices.Equal(got, []string{"name is Alice", "likes green tea"}) {
				t.Errorf("facts %q", got)
			}
			if !s.Met("p1") || s.Met("p2") {
				t.Error("met records wrong")
			}
			want := 1
			if len(b) == start {
				want = 0
			}
			if s.Repaired() != want {
				t.Errorf("repaired %d, want %d", s.Repaired(), want)
			}
			if after, _ := os.ReadFile(path); !bytes.Equal(after, data[:start]) {
				t.Errorf("file not cut back to the last good line:\n%q", after)
			}
			// Appends go after the last good line.
			add(t, s, last)
			s.Close()
			s = open(t, dir, Limits{})
			if len(s.Facts("")) != 3 || s.Repaired() != 0 {
				t.Errorf("after an append: %q, repaired %d", texts(s.Facts("")), s.Repaired())
			}
		})
	}
}

func TestBadMiddleLine(t *testing.T) {
	dir := t.TempDir()
	s := open(t, dir, Limits{})
	add(t, s, Fact{Person: "p1", Text: "first fact"})
	s.Close()
	path := filepath.Join(dir, "robot-a.facts")
	f, _ := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	f.WriteString("not json at all\n{\"op\":\"unknown\"}\n{\"op\":\"fact\",\"id\":\"z\",\"person\":\"\",\"text\":\"secret garbage\"}\n")
	f.Close()
	s = open(t, dir, Limits{})
	add(t, s, Fact{Person: "p1", Text: "second fact"})
	s.Close()
	s = open(t, dir, Limits{})
	if got := texts(s.Facts("")); !slices.Equal(got, []string{"first fact", "second fact"}) {
		t.Errorf("facts %q", got)
	}
	if n := grep(t, dir, "secret garbage"); n != 0 {
		t.Errorf("a bad line kept after the rewrite: %d", n)
	}
}

func TestNewRecovery(t *testing.T) {
	oldFacts := []Fact{{ID: "a", Person: "p1", Text: "old secret"}}
	newFacts := []Fact{{ID: "b", Person: "p1", Text: "new truth"}}
	lines := func(fs []Fact, end int) []byte {
		var b []byte
		for _, f := range fs {
			b = append(b, factLine(f)...)
		}
		if end >= 0 {
			b = append(b, endLine(end)...)
		}
		return b
	}
	full := lines(newFacts, 1)
	for _, tc := range []struct {
		name      string
		old, next []byte // nil: no file
		want      []string
		gone      string
	}{
		{"complete new wins", lines(oldFacts, -1), full, []string{"new truth"}, "old secret"},
		{"complete new, old already zeroed", make([]byte, 100), full, []string{"new truth"}, ""},
		{"complete new, old already renamed", nil, full, []string{"new truth"}, ""},
		{"new without end", lines(oldFacts, -1), lines(newFacts, -1), []string{"old secret"}, "new truth"},
		{"new with a torn end", lines(oldFacts, -1), full[:len(full)-3], []string{"old secret"}, "new truth"},
		{"new whose end miscounts", lines(oldFacts, -1), lines(newFacts, 2), []string{"old secret"}, "new truth"},
		{"empty new", lines(oldFacts, -1), []byte{}, []string{"old secret"}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "robot-a.facts")
			if tc.old != nil {
				os.WriteFile(path, tc.old, 0o600)
			}
			os.WriteFile(path+".new", tc.next, 0o600)
			s := open(t, dir, Limits{})
			if got := texts(s.Facts("")); !slices.Equal(got, tc.want) {
				t.Errorf("facts %q, want %q", got, tc.want)
			}
			if _, err := os.Stat(path + ".new"); !os.IsNotExist(err) {
				t.Errorf(".new left: %v", err)
			}
			if tc.gone != "" && grep(t, dir, tc.gone) != 0 {
				t.Errorf("%q still in the directory", tc.gone)
			}
		})
	}
}

func TestForgetErases(t *testing.T) {
	dir := t.TempDir()
	s := open(t, dir, Limits{})
	s.Touch("alice-7f3a")
	s.Touch("bob-1c2d")
	add(t, s, Fact{Person: "alice-7f3a", Key: "name", Text: "name is Alice"},
		Fact{Person: "alice-7f3a", Key: "like:green tea", Text: "likes green tea"},
		Fact{Person: "bob-1c2d", Key: "name", Text: "name is Bob"})
	add(t, s, Fact{Person: "alice-7f3a", Key: "like:green tea", Text: "doesn't like green tea any more"}) // the old one is dead on disk
	one := add(t, s, Fact{Person: "alice-7f3a", Text: "has a cat called Mittens"})[0]

	// Forget that: one fact by id; another person's id is ignored.
	bob := s.Facts("bob-1c2d")[0]
	n, err := s.Forget("alice-7f3a", one.ID, bob.ID)
	if err != nil || n != 1 {
		t.Fatalf("forget that: %d, %v", n, err)
	}
	if grep(t, dir, "Mittens") != 0 || grep(t, dir, "likes green tea") != 0 {
		t.Error("a forgotten or superseded text is still in the directory")
	}
	if grep(t, dir, "name is Alice") != 1 {
		t.Error("forget that removed more")
	}

	n, err = s.Forget("alice-7f3a")
	if err != nil || n != 2 {
		t.Fatalf("forget me: %d, %v", n, err)
	}
	check := func() {
		t.Helper()
		for _, txt := range []string{"Alice", "green tea", "Mittens", "alice-7f3a"} {
			if k := grep(t, dir, txt); k != 0 {
				t.Errorf("%q found %d times in the directory", txt, k)
			}
		}
		if s.Met("alice-7f3a") || len(s.Facts("alice-7f3a")) != 0 {
			t.Error("alice remembered")
		}
		if !s.Met("bob-1c2d") || !slices.Equal(texts(s.Facts("")), []string{"name is Bob"}) || grep(t, dir, "name is Bob") != 1 {
			t.Errorf("bob's facts: %q", texts(s.Facts("")))
		}
	}
	check()
	s.Close()
	s = open(t, dir, Limits{})
	check()
}

func TestWipeErases(t *testing.T) {
	dir := t.TempDir()
	s := open(t, dir, Limits{})
	s.Touch("p1")
	add(t, s, Fact{Person: "p1", Text: "likes green tea"}, Fact{Person: "p2", Text: "lives in Kyoto"})
	if n, err := s.Wipe(); err != nil || n != 2 {
		t.Fatalf("wipe: %d, %v", n, err)
	}
	for range 2 {
		for _, txt := range []string{"green tea", "Kyoto", "p1", "p2"} {
			if grep(t, dir, txt) != 0 {
				t.Errorf("%q in the directory", txt)
			}
		}
		if len(s.People()) != 0 {
			t.Errorf("people %v", s.People())
		}
		s.Close()
		s = open(t, dir, Limits{})
	}
}

func TestSupersede(t *testing.T) {
	s := open(t, t.TempDir(), Limits{})
	a := add(t, s, Fact{Person: "p1", Key: "Like:Green Tea", Text: "likes green tea"})[0]
	b := add(t, s, Fact{Person: "p1", Key: "like:green tea", Text: "doesn't like green tea"})[0]
	if a.Key != "like:green tea" || b.Supersedes != a.ID {
		t.Errorf("by key: %+v %+v", a, b)
	}
	c := add(t, s, Fact{Person: "p1", Text: "lives in Osaka"})[0]
	d := add(t, s, Fact{Person: "p1", Text: "lives in Kyoto", Supersedes: c.ID})[0]
	other := add(t, s, Fact{Person: "p2", Text: "lives in Nara"})[0]
	e := add(t, s, Fact{Person: "p1", Text: "has a dog", Supersedes: other.ID})[0]
	if e.Supersedes != "" {
		t.Errorf("superseded another person's fact: %+v", e)
	}
	if got := texts(s.Facts("")); !slices.Equal(got, []string{b.Text, d.Text, other.Text, e.Text}) {
		t.Errorf("facts %q", got)
	}
}

func TestLimits(t *testing.T) {
	t.Run("per person", func(t *testing.T) {
		s := open(t, t.TempDir(), Limits{PerPerson: 3})
		add(t, s, Fact{Person: "p1", Key: "name", Text: "name is Alice"})
		for i := range 5 {
			add(t, s, Fact{Person: "p1", Text: fmt.Sprintf("fact %d", i)})
		}
		add(t, s, Fact{Person: "p2", Text: "bob fact"})
		if got := texts(s.Facts("p1")); !slices.Equal(got, []string{"name is Alice", "fact 3", "fact 4"}) {
			t.Errorf("p1 %q", got)
		}
	})
	t.Run("total", func(t *testing.T) {
		s := open(t, t.TempDir(), Limits{Total: 4})
		add(t, s, Fact{Person: "p1", Key: "name", Text: "name is Alice"})
		for i := range 6 {
			add(t, s, Fact{Person: fmt.Sprintf("q%d", i), Text: fmt.Sprintf("fact %d", i)})
		}
		if got := texts(s.Facts("")); !slices.Equal(got, []string{"name is Alice", "fact 3", "fact 4", "fact 5"}) {
			t.Errorf("facts %q", got)
		}
	})
	t.Run("bytes", func(t *testing.T) {
		dir := t.TempDir()
		s := open(t, dir, Limits{Bytes: 8 << 10})
		for i := range 200 {
			add(t, s, Fact{Person: fmt.Sprintf("p%d", i%7), Text: fmt.Sprintf("fact %d %s", i, strings.Repeat("x", 150))})
		}
		var live int
		for _, f := range s.Facts("") {
			live += len(factLine(f))
		}
		if live > 8<<10 || live < 6<<10 {
			t.Errorf("live bytes %d, limit 8 KiB", live)
		}
		fi, _ := os.Stat(filepath.Join(dir, "robot-a.facts"))
		if fi.Size() > 2*(8<<10)+compactSlack+1024 {
			t.Errorf("file %d bytes: not compacted", fi.Size())
		}
		if got := s.Facts(""); !strings.HasPrefix(got[len(got)-1].Text, "fact 199 ") {
			t.Errorf("newest %q", got[len(got)-1].Text)
		}
	})
	t.Run("compaction of superseded records", func(t *testing.T) {
		dir := t.TempDir()
		s := open(t, dir, Limits{})
		for i := range 500 {
			add(t, s, Fact{Person: "p1", Key: "mood", Text: fmt.Sprintf("mood is %d", i)})
		}
		fi, _ := os.Stat(filepath.Join(dir, "robot-a.facts"))
		if fi.Size() > compactSlack+2048 {
			t.Errorf("file %d bytes for one live fact", fi.Size())
		}
		if grep(t, dir, "mood is 0\"") != 0 {
			t.Error("a superseded text survived compaction")
		}
	})
}

func TestRecall(t *testing.T) {
	s := open(t, t.TempDir(), Limits{})
	add(t, s,
		Fact{Person: "alice", Key: "name", Text: "name is Alice"},
		Fact{Person: "alice", Key: "like:green tea", Text: "likes green tea"},
		Fact{Person: "alice", Key: "home", Text: "lives in Kyoto", Pinned: true},
		Fact{Person: "alice", Text: "has a cat", Pinned: true},
		Fact{Person: "alice", Text: "birthday is in May", Pinned: true},
		Fact{Person: "alice", Key: "like:緑茶", Text: "緑茶が好き"},
		Fact{Person: "bob", Key: "name", Text: "name is Bob"},
		Fact{Person: "bob", Key: "like:coffee", Text: "likes coffee and green tea"},
	)
	for _, tc := range []struct {
		people []string
		msg    string
		n      int
		want   []string
	}{
		{[]string{"alice"}, "Do you like tea?", 5, []string{"name is Alice", "birthday is in May", "has a cat", "likes green tea", "緑茶が好き"}},
		{[]string{"alice"}, "Do you like tea?", 1, []string{"name is Alice", "birthday is in May", "has a cat", "likes green tea"}},
		{[]string{"alice"}, "what about coffee", 5, []string{"name is Alice", "birthday is in May", "has a cat"}},
		{[]string{"alice"}, "緑茶は好き？", 5, []string{"name is Alice", "birthday is in May", "has a cat", "緑茶が好き"}},
		{[]string{"alice"}, "Kyoto and tea", 5, []string{"name is Alice", "birthday is in May", "has a cat", "lives in Kyoto", "likes green tea"}},
		{[]string{"bob"}, "green tea", 5, []string{"name is Bob", "likes coffee and green tea"}},
		{[]string{"bob", "alice", "bob"}, "coffee", 1, []string{"name is Bob", "name is Alice", "birthday is in May", "has a cat", "likes coffee and green tea"}},
		{[]string{"carol"}, "green tea Alice Bob", 5, nil},
		{nil, "green tea", 5, nil},
	} {
		got := texts(s.Recall(tc.people, tc.msg, tc.n))
		if !slices.Equal(got, tc.want) {
			t.Errorf("Recall(%v, %q, %d) = %q, want %q", tc.people, tc.msg, tc.n, got, tc.want)
		}
	}
	if got := texts(s.Search("bob", "tea", 3)); !slices.Equal(got, []string{"likes coffee and green tea"}) {
		t.Errorf("search %q", got)
	}
	if got := texts(s.Search("", "", 2)); !slices.Equal(got, []string{"likes coffee and green tea", "name is Bob"}) {
		t.Errorf("search newest %q", got)
	}
}

// TestRecallNeverAnotherPerson: whatever the message, Recall gives only
// facts of the people asked for.
func TestRecallNeverAnotherPerson(t *testing.T) {
	s := open(t, t.TempDir(), Limits{})
	var fs []Fact
	for i := range 200 {
		fs = append(fs, Fact{Person: fmt.Sprintf("p%d", i%10), Key: fmt.Sprintf("k%d", i%13), Text: fmt.Sprintf("likes thing %d and tea", i%17), Pinned: i%5 == 0})
	}
	add(t, s, fs...)
	for i := range 10 {
		people := []string{fmt.Sprintf("p%d", i), fmt.Sprintf("p%d", (i*3)%10)}
		got := s.Recall(people, "tea thing 3 4 5 likes", 50)
		seen := map[string]bool{}
		core := map[string]int{}
		for _, f := range got {
			if !slices.Contains(people, f.Person) || seen[f.ID] {
				t.Fatalf("recalled %+v for %v", f, people)
			}
			seen[f.ID] = true
			if f.Pinned {
				core[f.Person]++
			}
		}
		if len(got) == 0 {
			t.Error("nothing recalled")
		}
	}
}

func TestConcurrent(t *testing.T) {
	s := open(t, t.TempDir(), Limits{Total: 50})
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			for i := range 20 {
				p := fmt.Sprintf("p%d", g)
				if _, err := s.Add(Fact{Person: p, Text: fmt.Sprintf("likes tea %d", i)}); err != nil {
					t.Error(err)
				}
				if i%7 == 0 {
					s.Touch(p)
					if _, err := s.Forget(p, "nothing"); err != nil {
						t.Error(err)
					}
				}
			}
		})
		wg.Go(func() {
			for range 200 {
				s.Recall([]string{"p1", "p2"}, "tea", 5)
				s.Met("p1")
				s.People()
			}
		})
	}
	wg.Wait()
	if n := len(s.Facts("")); n != 50 {
		t.Errorf("%d facts, want 50", n)
	}
}

func TestClosed(t *testing.T) {
	dir := t.TempDir()
	s := open(t, dir, Limits{})
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Add(Fact{Person: "p", Text: "x"}); err != ErrClosed {
		t.Errorf("add after close: %v", err)
	}
	if _, err := Open(dir, "../x", Limits{}, nil); err == nil {
		t.Error("a companion name with a path opened")
	}
}

func BenchmarkRecall(b *testing.B) {
	s := open(b, b.TempDir(), Limits{})
	var fs []Fact
	words := []string{"tea", "coffee", "cats", "dogs", "Kyoto", "Osaka", "music", "piano", "football", "rain", "books", "trains"}
	for i := range 2000 {
		p := fmt.Sprintf("person-%d", i%20)
		fs = append(fs, Fact{Person: p, Key: fmt.Sprintf("k%d", i), Text: fmt.Sprintf("likes %s and %s number %d", words[i%12], words[(i/12)%12], i), Pinned: i < 40})
	}
	add(b, s, fs...)
	if len(s.Facts("")) != 2000 {
		b.Fatalf("%d facts", len(s.Facts("")))
	}
	people := []string{"person-3", "person-7", "person-11"}
	b.ResetTimer()
	for b.Loop() {
		s.Recall(people, "Do you still like green tea and the piano, or trains in Kyoto?", 8)
	}
}

var testTime = time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
