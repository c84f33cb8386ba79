package main

import (
	"path/filepath"
	"strings"
	"testing"
)

// A missing config file is said to be missing, not to have wrong fields.
func TestDoctorSaysTheConfigIsMissing(t *testing.T) {
	path := filepath.Join(t.TempDir(), "chorus.yaml")
	var out strings.Builder
	if code := doctorMain(path, filepath.Join(t.TempDir(), "env"), &out); code != 2 {
		t.Errorf("exit %d, want 2", code)
	}
	if !strings.Contains(out.String(), "fix: the config file "+path+" is missing") || strings.Contains(out.String(), "correct the fields") {
		t.Errorf("report:\n%s", &out)
	}
}
