package memory

import (
	"bytes"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/chorus-robotics/chorus/runtime/logtest"
)

// openJ opens the store "kyoko" in dir and returns its journal and the
// journal's path; the store is closed when the test ends.
func openJ(t *testing.T, dir string, log *slog.Logger) (*Store, *Journal, string) {
	t.Helper()
	st, err := Open(dir, "kyoko", Limits{}, log)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st, st.Journal(), strings.TrimSuffix(st.Path(), ".facts") + ".pending"
}

func heard(person, id, text string) Heard { return Heard{Person: person, MessageID: id, Text: text} }

func heardTexts(hs []Heard) []string {
	var out []string
	for _, h := range hs {
		out = append(out, h.Text)
	}
	return out
}

func fileBytes(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestJournalKeepsWhatWasHeardAcrossAReopen(t *testing.T) {
	dir := t.TempDir()
	st, j, path := openJ(t, dir, nil)
	for i, s := range []string{"My name is Pat.", "I work as a nurse.", "名前はサムです。"} {
		if err := j.Append(heard("pat", fmt.Sprint("m", i), s)); err != nil {
			t.Fatal(err)
		}
	}
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("journal %v, err %v: want mode 0600 beside the facts", fi.Mode(), err)
	}
	st.Close()
	_, j, _ = openJ(t, dir, nil)
	if got := heardTexts(j.Pending()); !slices.Equal(got, []string{"My name is Pat.", "I work as a nurse.", "名前はサムです。"}) {
		t.Fatalf("after a reopen the journal holds %q", got)
	}
	if err := j.Remove("m0", "m1", "m2"); err != nil {
		t.Fatal(err)
	}
	if b := fileBytes(t, path); len(b) != 0 {
		t.Fatalf("everything extracted, the journal still holds %d bytes", len(b))
	}
}

// A kill -9 mid-write leaves a torn last line; a crash mid-erase, a line
// half zeroed. Each is skipped with a warning, its bytes zeroed, and
// every other line is kept.
func TestJournalSkipsTornAndHalfErasedLines(t *testing.T) {
	tests := []struct {
		name  string
		spoil func(data []byte, lineEnds []int) []byte
		want  []string
		warn  string
	}{
		{"torn last line", func(d []byte, _ []int) []byte {
			return append(d, `{"person":"pat","messageId":"m9","text":"I like pl`...)
		},
			[]string{"one", "two", "three"}, "torn last line"},
		{"last line without its newline", func(d []byte, _ []int) []byte { return d[:len(d)-1] },
			[]string{"one", "two"}, "torn last line"},
		{"a line's end zeroed", func(d []byte, ends []int) []byte {
			for i := ends[0] - 6; i < ends[0]; i++ {
				d[i] = 0
			}
			return d
		}, []string{"two", "three"}, "half erased"},
		{"a line's start zeroed", func(d []byte, ends []int) []byte {
			for i := ends[0]; i < ends[0]+6; i++ {
				d[i] = 0
			}
			return d
		}, []string{"one", "three"}, "bad line"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			st, j, path := openJ(t, dir, nil)
			for i, s := range []string{"one", "two", "three"} {
				if err := j.Append(heard("pat", fmt.Sprint("m", i), s)); err != nil {
					t.Fatal(err)
				}
			}
			st.Close()
			data := fileBytes(t, path)
			var ends []int
			for i, c := range data {
				if c == '\n' {
					ends = append(ends, i+1)
				}
			}
			spoilt := tt.spoil(slices.Clone(data), ends)
			if err := os.WriteFile(path, spoilt, 0o600); err != nil {
				t.Fatal(err)
			}
			var logs logtest.Buffer
			st, j, _ = openJ(t, dir, slog.New(slog.NewTextHandler(&logs, nil)))
			if got := heardTexts(j.Pending()); !slices.Equal(got, tt.want) {
				t.Fatalf("the journal holds %q, want %q", got, tt.want)
			}
			if !strings.Contains(logs.String(), "level=WARN") || !strings.Contains(logs.String(), tt.warn) {
				t.Fatalf("no warning about the %s:\n%s", tt.warn, logs.String())
			}
			for _, s := range []string{"I like pl", `"m9"`} {
				if bytes.Contains(fileBytes(t, path), []byte(s)) {
					t.Fatalf("%q is still in the file after the reopen", s)
				}
			}
			// It goes on: appended after a repair, kept after a reopen.
			if err := j.Append(heard("sam", "m10", "four")); err != nil {
				t.Fatal(err)
			}
			st.Close()
			_, j, _ = openJ(t, dir, nil)
			if got := heardTexts(j.Pending()); !slices.Equal(got, append(tt.want, "four")) {
				t.Fatalf("after a repair, an append and a reopen the journal holds %q", got)
			}
		})
	}
}

// "Forget me" and a wipe erase the journal's lines from the file's bytes,
// like the facts.
func TestJournalForgetErasesThePersonsLines(t *testing.T) {
	dir := t.TempDir()
	st, j, path := openJ(t, dir, nil)
	for i, h := range []Heard{heard("pat", "", "I work as a nurse at the county hospital."), heard("sam", "", "I work as a baker."), heard("pat", "", "I like plums.")} {
		h.MessageID = fmt.Sprint("m", i)
		if err := j.Append(h); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := st.Forget("pat"); err != nil {
		t.Fatal(err)
	}
	b := fileBytes(t, path)
	for _, s := range []string{"nurse", "plums", `"pat"`} {
		if bytes.Contains(b, []byte(s)) {
			t.Fatalf("%q is still in the journal's bytes after forget me: %q", s, b)
		}
	}
	if !bytes.Contains(b, []byte("baker")) || !slices.Equal(heardTexts(j.Pending()), []string{"I work as a baker."}) {
		t.Fatalf("sam's line went with pat's: %q", b)
	}
	if !j.Erased("m0") || !j.Erased("m2") || j.Erased("m1") {
		t.Fatalf("erased m0 %v m1 %v m2 %v: want pat's lines, not sam's", j.Erased("m0"), j.Erased("m1"), j.Erased("m2"))
	}
	if _, err := st.Forget("sam", "some-fact-id"); err != nil { // one fact: the journal stays
		t.Fatal(err)
	}
	if len(j.Pending()) != 1 {
		t.Fatal("forgetting one fact took what was heard out of the journal")
	}
	if _, err := st.Wipe(); err != nil {
		t.Fatal(err)
	}
	if b := fileBytes(t, path); len(b) != 0 || len(j.Pending()) != 0 {
		t.Fatalf("after a wipe the journal holds %q", b)
	}
}

// The journal keeps at most PendingLines lines and PendingBytes bytes:
// beyond them the oldest go, erased from the file.
func TestJournalIsBounded(t *testing.T) {
	tests := []struct {
		name string
		n    int
		text func(i int) string
	}{
		{"lines", 3 * PendingLines, func(i int) string { return fmt.Sprintf("line %d", i) }},
		{"bytes", 40, func(i int) string { return fmt.Sprintf("line %d %s", i, strings.Repeat("x", 60<<10)) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			st, j, path := openJ(t, dir, nil)
			for i := range tt.n {
				if err := j.Append(heard("pat", fmt.Sprint("m", i), tt.text(i))); err != nil {
					t.Fatal(err)
				}
				fi, err := os.Stat(path)
				if err != nil || fi.Size() > PendingBytes {
					t.Fatalf("after %d lines the journal is %d bytes (at most %d), err %v", i+1, fi.Size(), PendingBytes, err)
				}
				if live := j.live(); fi.Size() > 2*live+compactSlack+int64(len(tt.text(i)))+64 {
					t.Fatalf("after %d lines the journal is %d bytes for %d live: the zeros are not compacted", i+1, fi.Size(), live)
				}
			}
			got := j.Pending()
			if len(got) == 0 || len(got) > PendingLines || got[len(got)-1].MessageID != fmt.Sprint("m", tt.n-1) {
				t.Fatalf("the journal holds %d lines, the newest %+v", len(got), got[len(got)-1].MessageID)
			}
			first := got[0].MessageID
			if bytes.Contains(fileBytes(t, path), []byte(`"line 0 `)) || bytes.Contains(fileBytes(t, path), []byte(`"line 0"`)) {
				t.Fatal("the oldest line pushed out is still in the file's bytes")
			}
			st.Close()
			_, j, _ = openJ(t, dir, nil)
			if again := j.Pending(); len(again) != len(got) || again[0].MessageID != first {
				t.Fatalf("after a reopen %d lines from %s, want %d from %s", len(again), again[0].MessageID, len(got), first)
			}
		})
	}
}

// A compaction cut short by a crash is finished at the next open: what
// was live is kept once.
func TestJournalFinishesAnInterruptedCompaction(t *testing.T) {
	dir := t.TempDir()
	st, j, path := openJ(t, dir, nil)
	for i, s := range []string{"one", "two"} {
		if err := j.Append(heard("pat", fmt.Sprint("m", i), s)); err != nil {
			t.Fatal(err)
		}
	}
	st.Close()
	data := fileBytes(t, path)
	// The crash came after .new was written, before the old file was
	// zeroed (or after: both are kept once).
	if err := os.WriteFile(path+".new", data[:bytes.IndexByte(data, '\n')+1], 0o600); err != nil {
		t.Fatal(err)
	}
	_, j, _ = openJ(t, dir, nil)
	if got := heardTexts(j.Pending()); !slices.Equal(got, []string{"one", "two"}) {
		t.Fatalf("the journal holds %q", got)
	}
	if _, err := os.Stat(path + ".new"); !os.IsNotExist(err) {
		t.Fatalf("the compaction's .new is left: %v", err)
	}
}

// FuzzJournal gives arbitrary bytes as the journal (and as an interrupted
// compaction's .new): Open never panics, what it keeps is valid, and a
// reopen keeps the same.
func FuzzJournal(f *testing.F) {
	line := `{"person":"pat","messageId":"m1","text":"I like plums."}` + "\n"
	f.Add([]byte(line+line[:20]), []byte(nil))
	f.Add([]byte("\x00\x00\x00"+line+"junk\n"+line), []byte(line))
	f.Add([]byte(line[:30]+"\x00\x00"+line), []byte{})
	f.Add([]byte(`{"person":"a/b","messageId":"m","text":"x"}`+"\n"+`{"person":"p","messageId":"m","text":"x"}{}`+"\n"), []byte(nil))
	f.Fuzz(func(t *testing.T, data, next []byte) {
		dir := t.TempDir()
		path := dir + "/kyoko.pending"
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
		if next != nil {
			if err := os.WriteFile(path+".new", next, 0o600); err != nil {
				t.Fatal(err)
			}
		}
		st, j, _ := openJ(t, dir, nil)
		got := j.Pending()
		for _, h := range got {
			if err := checkHeard(h); err != nil {
				t.Fatalf("kept %+v: %v", h, err)
			}
		}
		st.Close()
		_, j, _ = openJ(t, dir, nil)
		if again := j.Pending(); !slices.Equal(again, got) {
			t.Fatalf("a reopen changed the journal: %+v, then %+v", got, again)
		}
	})
}
