package memory

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chorus-robotics/chorus/runtime/protocol"
)

func openVoices(t *testing.T, dir string) *Voices {
	t.Helper()
	v, err := OpenVoices(dir, "kyoko", VoiceLimits{PerPerson: 3, People: 2}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { v.Close() })
	return v
}

var t0 = time.Date(2026, 11, 29, 8, 0, 0, 0, time.UTC)

// Voiceprints are matched by cosine distance, kept across a restart,
// bounded, and erased (bytes zeroed) by Forget.
func TestVoicesMatchKeepAndForget(t *testing.T) {
	dir := t.TempDir()
	v := openVoices(t, dir)
	if p, d := v.Match([]float32{1, 0, 0}); p != "" || d != -1 {
		t.Fatalf("an empty gallery matched %q at %v", p, d)
	}
	if err := v.Add("alice", "ecapa", t0, []float32{1, 0.1, 0}, []float32{1, -0.1, 0}); err != nil {
		t.Fatal(err)
	}
	if err := v.Add("bob", "ecapa", t0, []float32{0, 1, 0.2}); err != nil {
		t.Fatal(err)
	}
	if err := v.Add("carol", "ecapa", t0, []float32{0, 0, 1}); err == nil {
		t.Fatal("a third person beyond People: 2 was added")
	}
	for _, tc := range []struct {
		vec  []float32
		want string
	}{{[]float32{0.9, 0, 0.1}, "alice"}, {[]float32{0.1, 1, 0.1}, "bob"}} {
		if p, d := v.Match(tc.vec); p != tc.want || d < 0 || d > 0.2 {
			t.Errorf("Match(%v) = %q, %v; want %s near", tc.vec, p, d, tc.want)
		}
	}
	if p, _ := v.Nearest([]float32{0.9, 0, 0.1}, "alice"); p != "bob" {
		t.Errorf("the runner-up is %q", p)
	}
	// Past PerPerson the oldest go; across a restart all is as it was.
	if err := v.Add("alice", "ecapa", t0.Add(time.Hour), []float32{1, 0, 0}, []float32{1, 0, 0.05}); err != nil {
		t.Fatal(err)
	}
	v.Close()
	v = openVoices(t, dir)
	list := v.List()
	if len(list) != 2 || list[0].Person != "alice" || list[0].Samples != 3 || list[1].Samples != 1 || list[0].Model != "ecapa" {
		t.Fatalf("after a restart: %+v", list)
	}
	fi, err := os.Stat(v.Path())
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("the file's mode: %v, %v", fi.Mode(), err)
	}
	// Forget before a time keeps what came after; Forget erases the rest.
	if n, err := v.Forget("alice", t0.Add(time.Minute)); err != nil || n != 1 {
		t.Fatalf("Forget before = %d, %v", n, err)
	}
	if n, err := v.Forget("bob", time.Time{}); err != nil || n != 1 || v.Knows("bob") {
		t.Fatalf("Forget bob = %d, %v", n, err)
	}
	v.Close()
	data, _ := os.ReadFile(v.Path())
	if bytes.Contains(data, []byte("bob")) {
		t.Fatalf("bob's voiceprint is still in the file:\n%s", data)
	}
	v = openVoices(t, dir)
	if p, _ := v.Match([]float32{0.1, 1, 0.1}); p != "alice" || v.Knows("bob") {
		t.Fatalf("after forgetting bob, his voice matches %q", p)
	}
	if err := v.Wipe(); err != nil || len(v.List()) != 0 {
		t.Fatalf("Wipe: %v, %+v", err, v.List())
	}
}

// A line a kill -9 cut short, or garbage, is dropped at open, the file
// rewritten without it, and what came before it kept.
func TestVoicesTornLine(t *testing.T) {
	dir := t.TempDir()
	v := openVoices(t, dir)
	if err := v.Add("alice", "m", t0, []float32{1, 0}); err != nil {
		t.Fatal(err)
	}
	if err := v.Add("alice", "m", t0, []float32{1, 0.2}); err != nil {
		t.Fatal(err)
	}
	v.Close()
	path := filepath.Join(dir, "kyoko.voices")
	data, _ := os.ReadFile(path)
	cut := data[:len(data)-15] // the second record, torn
	os.WriteFile(path, cut, 0o600)
	v = openVoices(t, dir)
	if v.Repaired() != 1 || len(v.List()) != 1 || v.List()[0].Samples != 1 {
		t.Fatalf("a torn file: repaired %d, %+v", v.Repaired(), v.List())
	}
	// Appends after the repair are whole lines.
	if err := v.Add("bob", "m", t0, []float32{0, 1}); err != nil {
		t.Fatal(err)
	}
	v.Close()
	v = openVoices(t, dir)
	if v.Repaired() != 0 || len(v.List()) != 2 {
		t.Fatalf("after the repair and an add: repaired %d, %+v", v.Repaired(), v.List())
	}
	v.Close()
	os.WriteFile(path, append(data, []byte("{\"op\":\"voice\",\"person\":\"../x\",\"vec\":\"AAAA\"}\nnot json\n")...), 0o600)
	v = openVoices(t, dir)
	if v.Repaired() != 2 || len(v.List()) != 1 {
		t.Fatalf("bad lines: repaired %d, %+v", v.Repaired(), v.List())
	}
}

func TestCosineDistance(t *testing.T) {
	for _, tc := range []struct {
		a, b []float32
		want float64
	}{
		{[]float32{1, 0}, []float32{2, 0}, 0},
		{[]float32{1, 0}, []float32{0, 1}, 1},
		{[]float32{1, 0}, []float32{-1, 0}, 2},
		{[]float32{0, 0}, []float32{1, 0}, 2},
	} {
		if d := CosineDistance(tc.a, tc.b); d < tc.want-1e-9 || d > tc.want+1e-9 {
			t.Errorf("CosineDistance(%v, %v) = %v, want %v", tc.a, tc.b, d, tc.want)
		}
	}
}

func FuzzVoiceLine(f *testing.F) {
	f.Add([]byte(`{"op":"voice","person":"alice","at":"2026-11-29T08:00:00Z","model":"m","vec":"AACAPw=="}`))
	f.Add([]byte(`{"op":"end","n":3}`))
	f.Add([]byte(`{"op":"voice","person":"alice","vec":"AAAAAA=="}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := decodeVoiceLine(b)
		if err == nil && (checkPerson(r.Person) != nil || len(r.Vec) == 0 || norm32(r.Vec) == 0) {
			t.Fatalf("accepted %q: %+v", b, r)
		}
	})
}

// "Forget me" erases the person's voiceprint with their facts: the
// person's own (at once), and a room's forget log (what was made before
// it was asked; a voiceprint made since stays), also on a robot that
// never met the person (it heard their enrolment, answered nothing).
func TestKeeperForgetsTheVoice(t *testing.T) {
	prints, err := OpenVoices(t.TempDir(), "kyoko", VoiceLimits{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { prints.Close() })
	r := newKeeperRig(t, KeeperConfig{Voices: prints})
	now := r.clk.Now()
	for _, p := range []string{"sam", "mia", "kim"} {
		if err := prints.Add(p, "m", now.Add(-time.Minute), []float32{1, 0}); err != nil {
			t.Fatal(err)
		}
	}
	r.k.Answer("sam", "f1", "Please forget me.", "en")
	r.k.Forget(protocol.ForgetLog{From: "hana", Forgets: []protocol.ForgetEntry{{Person: "mia", At: now, MessageID: "f2"}}})
	r.k.Forget(protocol.ForgetLog{From: "hana", Forgets: []protocol.ForgetEntry{{Person: "kim", At: now.Add(-time.Hour), MessageID: "f3"}}})
	r.settle(t)
	if prints.Knows("sam") || prints.Knows("mia") || !prints.Knows("kim") {
		t.Fatalf("after forget me of sam, of mia (now) and of kim (before his voiceprint): %+v", prints.List())
	}
}

// A line far longer than any record drops alone: the good lines after it
// stay.
func TestVoicesLongLineDropsAlone(t *testing.T) {
	dir := t.TempDir()
	v := openVoices(t, dir)
	if err := v.Add("alice", "m", t0, []float32{1, 0}); err != nil {
		t.Fatal(err)
	}
	v.Close()
	path := filepath.Join(dir, "kyoko.voices")
	data, _ := os.ReadFile(path)
	long := []byte(`{"op":"voice","person":"zed","vec":"` + strings.Repeat("A", 2<<20) + "\"}\n")
	bob := bytes.ReplaceAll(data, []byte("alice"), []byte("bob"))
	os.WriteFile(path, append(append(data, long...), bob...), 0o600)
	v = openVoices(t, dir)
	if v.Repaired() != 1 || !v.Knows("alice") || !v.Knows("bob") {
		t.Fatalf("a long line: repaired %d, %+v", v.Repaired(), v.List())
	}
}
