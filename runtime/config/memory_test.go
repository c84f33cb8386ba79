package config

import (
	"os"
	"path/filepath"
	"testing"
)

// A memory folder is beside the config file, whatever the current folder
// (a robot's memory is one, wherever chorusd is started from).
func TestMemoryDirIsBesideTheConfig(t *testing.T) {
	t.Setenv("STATE_DIRECTORY", "")
	dir := t.TempDir()
	for _, c := range []struct{ yaml, want string }{
		{"memory: {}", filepath.Join(dir, "chorus-memory")},
		{"memory: {dir: relmem}", filepath.Join(dir, "relmem")},
		{"memory: {dir: /var/lib/x}", "/var/lib/x"},
	} {
		path := filepath.Join(dir, "robot.yaml")
		doc := "version: 1\ndevice: {id: d1}\nroom: {name: lab, members: [kyoko]}\ncompanion: {id: kyoko, name: Kyoko, language: en}\n" + c.yaml + "\n"
		if err := os.WriteFile(path, []byte(doc), 0o644); err != nil {
			t.Fatal(err)
		}
		var cfg Config
		if _, err := ParseFile(path, &cfg); err != nil {
			t.Fatal(err)
		}
		if cfg.Memory == nil || cfg.Memory.Dir != c.want {
			t.Errorf("%s: memory.dir %v, want %s", c.yaml, cfg.Memory, c.want)
		}
	}
}
