package settings

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

func TestProblemsNameTheirSection(t *testing.T) {
	var p Problems
	if p.List() != nil {
		t.Fatal("a new list has problems")
	}
	p.Add("version", "must be %d, got %d", 1, 2)
	room := p.In("room")
	room.Add("vote_timeout", "must be from 10ms to 1m, got %v", "0s")
	room.In("repetition").Add("window", "must be from 2 to 100, got %d", 1)
	p.In("mqtt").Identity("prefix", "a b")
	var q Problems
	q.In("hearing").Add("tail", "bad") // a section's view of a zero list shares it
	want := []string{
		"version: must be 1, got 2",
		"room.vote_timeout: must be from 10ms to 1m, got 0s",
		"room.repetition.window: must be from 2 to 100, got 1",
	}
	got := p.List()
	if len(got) != 4 || !slices.Equal(got[:3], want) || got[3][:12] != "mqtt.prefix:" {
		t.Fatalf("problems:\n%q\nwant %q and mqtt.prefix's", got, want)
	}
	if l := q.List(); len(l) != 1 || l[0] != "hearing.tail: bad" {
		t.Fatalf("the zero list's section: %q", l)
	}
}

func TestSecret(t *testing.T) {
	file := filepath.Join(t.TempDir(), "pw")
	os.WriteFile(file, []byte("  s3cret\n"), 0o600)
	t.Setenv("CHORUS_SETTINGS_TEST", "from-env")
	for _, tc := range []struct {
		name, env, path, want, err string
	}{
		{"env first", "CHORUS_SETTINGS_TEST", file, "from-env", ""},
		{"file trimmed", "", file, "s3cret", ""},
		{"neither", "", "", "", ""},
		{"unset env", "CHORUS_SETTINGS_UNSET", "", "", "mqtt.password_env: environment variable CHORUS_SETTINGS_UNSET is not set"},
		{"missing file", "", file + ".none", "", "mqtt.password_env: open " + file + ".none: no such file or directory"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Secret("mqtt.password_env", tc.env, tc.path)
			if got != tc.want || (err == nil) != (tc.err == "") || err != nil && err.Error() != tc.err {
				t.Fatalf("Secret = %q, %v; want %q, %q", got, err, tc.want, tc.err)
			}
		})
	}
}
