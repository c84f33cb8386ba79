// Package install is `chorus install`, an operator's tool: it lays a
// device's files into a root filesystem (an SD card's mounted root, or a
// temporary folder in tests). It refuses an
// invalid config before writing anything, and running it again changes
// nothing that is already right (the environment file, which holds
// secrets, is never overwritten).
package install

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/chorus-robotics/chorus/device/parts"
	"github.com/chorus-robotics/chorus/runtime/config"
	"github.com/chorus-robotics/chorus/systemd"
)

// Paths inside the root.
const (
	BinaryPath   = "usr/local/bin/chorusd"
	ConfigPath   = "etc/chorus/chorus.yaml"
	UnitPath     = "etc/systemd/system/chorusd.service"
	EnvPath      = "etc/default/chorusd"
	SysusersPath = "usr/lib/sysusers.d/chorus.conf"
	EnablePath   = "etc/systemd/system/multi-user.target.wants/chorusd.service"
)

// Options say what to install where.
type Options struct {
	Root   string // the root filesystem
	Config string // the device config to install
	Binary string // the chorusd binary built for the board
}

// Step is one file the installer wrote or found already right.
type Step struct {
	Path    string
	Changed bool
}

// Run installs; it validates the config and the binary before it writes.
func Run(o Options) ([]Step, error) {
	if o.Root == "" {
		return nil, fmt.Errorf("install: no root")
	}
	cfgBytes, err := os.ReadFile(o.Config)
	if err != nil {
		return nil, fmt.Errorf("install: %w", err)
	}
	// Checked as any build on any machine would: the robot's own build and
	// files are not here (chorusd --check-config checks those on the robot).
	c, typed, err := config.ParseFile(o.Config)
	if err == nil {
		if all := config.Merge(typed, c.Validate(), parts.Check(c, parts.Anywhere)); len(all) > 0 {
			err = all
		}
	}
	if err != nil {
		return nil, fmt.Errorf("install: refusing an invalid config, nothing written:\n%w", err)
	}
	bin, err := os.ReadFile(o.Binary)
	if err != nil {
		return nil, fmt.Errorf("install: chorusd binary: %w", err)
	}
	if len(bin) < 4 || !bytes.Equal(bin[:4], []byte("\x7fELF")) {
		return nil, fmt.Errorf("install: %s is not an ELF binary", o.Binary)
	}
	files := []struct {
		path string
		data []byte
		mode os.FileMode
		keep bool // never overwrite
	}{
		{BinaryPath, bin, 0o755, false},
		{ConfigPath, cfgBytes, 0o644, false},
		{UnitPath, systemd.Service, 0o644, false},
		{SysusersPath, systemd.Sysusers, 0o644, false},
		{EnvPath, systemd.Env, 0o600, true},
	}
	var steps []Step
	for _, f := range files {
		changed, err := write(filepath.Join(o.Root, f.path), f.data, f.mode, f.keep)
		if err != nil {
			return steps, err
		}
		steps = append(steps, Step{Path: "/" + f.path, Changed: changed})
	}
	// Enable: the link systemctl enable would make.
	link := filepath.Join(o.Root, EnablePath)
	if target, err := os.Readlink(link); err != nil || target != "/"+UnitPath {
		if err := os.MkdirAll(filepath.Dir(link), 0o755); err != nil {
			return steps, fmt.Errorf("install: %w", err)
		}
		os.Remove(link)
		if err := os.Symlink("/"+UnitPath, link); err != nil {
			return steps, fmt.Errorf("install: enable: %w", err)
		}
		steps = append(steps, Step{Path: "/" + EnablePath, Changed: true})
	} else {
		steps = append(steps, Step{Path: "/" + EnablePath})
	}
	return steps, nil
}

// write puts data at p atomically unless it is already there (or keep and
// p exists).
func write(p string, data []byte, mode os.FileMode, keep bool) (bool, error) {
	if old, err := os.ReadFile(p); err == nil {
		if keep || bytes.Equal(old, data) {
			return false, os.Chmod(p, mode)
		}
	}
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return false, fmt.Errorf("install: %w", err)
	}
	tmp, err := os.CreateTemp(filepath.Dir(p), ".chorus-install-*")
	if err != nil {
		return false, fmt.Errorf("install: %w", err)
	}
	defer os.Remove(tmp.Name())
	if _, err := io.Copy(tmp, bytes.NewReader(data)); err != nil {
		tmp.Close()
		return false, fmt.Errorf("install: %w", err)
	}
	if err := tmp.Chmod(mode); err != nil {
		tmp.Close()
		return false, fmt.Errorf("install: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return false, fmt.Errorf("install: %w", err)
	}
	if err := os.Rename(tmp.Name(), p); err != nil {
		return false, fmt.Errorf("install: %w", err)
	}
	return true, nil
}
