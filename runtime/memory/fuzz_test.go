package memory

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

// FuzzLoad gives arbitrary bytes as the file (and as an interrupted
// rewrite's .new): Open never panics, and reopening is stable (the same
// facts and people, nothing more to repair).
func FuzzLoad(f *testing.F) {
	good := factLine(Fact{ID: "a", Person: "p1", Key: "name", Text: "name is Alice", Pinned: true})
	met := metLine("p1", testTime)
	f.Add(append(append([]byte{}, good...), met...), []byte(nil))
	f.Add(append(append([]byte{}, met...), good[:20]...), []byte(nil))
	f.Add([]byte("garbage\n"+string(good)), append(append([]byte{}, good...), endLine(1)...))
	f.Add(good, append(append([]byte{}, good...), endLine(2)...))
	f.Add([]byte(`{"op":"fact","id":"b","person":"p","text":"x","vec":"AACAPwAAAEA="}`+"\n"+`{"op":"fact","id":"c","person":"p","text":"y","supersedes":"b"}`+"\n"), []byte(nil))
	f.Add([]byte(`{"op":"fact","id":"b","person":"p","text":"x","vec":"AADAfw=="}`+"\n"+`{"op":"end","n":-1}`+"\n"), []byte{})
	f.Fuzz(func(t *testing.T, data, next []byte) {
		dir := t.TempDir()
		path := filepath.Join(dir, "robot-a.facts")
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
		if next != nil {
			if err := os.WriteFile(path+".new", next, 0o600); err != nil {
				t.Fatal(err)
			}
		}
		lim := Limits{PerPerson: 5, Total: 8, Bytes: 4 << 10}
		s, err := Open(dir, "robot-a", lim, nil)
		if err != nil {
			t.Fatal(err)
		}
		facts, people := snapshot(t, s)
		s.Close()
		s, err = Open(dir, "robot-a", lim, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		facts2, people2 := snapshot(t, s)
		if !bytes.Equal(facts, facts2) || !bytes.Equal(people, people2) {
			t.Fatalf("reopening changed the memory:\n%s\n%s\n%s\n%s", facts, facts2, people, people2)
		}
		if s.Repaired() != 0 {
			t.Fatalf("the second open repaired %d", s.Repaired())
		}
		if _, err := os.Stat(path + ".new"); !os.IsNotExist(err) {
			t.Fatalf(".new left: %v", err)
		}
	})
}

func snapshot(t *testing.T, s *Store) ([]byte, []byte) {
	fs, err := json.Marshal(s.Facts(""))
	if err != nil {
		t.Fatal(err)
	}
	ps, _ := json.Marshal(s.People())
	return fs, ps
}
