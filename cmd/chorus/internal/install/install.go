// Package install is `chorus install`, an operator's tool: it lays a
// device's files into a root filesystem (an SD card's mounted root, or a
// temporary folder in tests). It refuses an
// invalid config before writing anything, and running it again changes
// nothing that is already right (the environment file, which holds
// secrets, is never overwritten).
package install

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/chorus-robotics/chorus/device/parts"
	"github.com/chorus-robotics/chorus/device/robot"
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
	TmpfilesPath = "usr/lib/tmpfiles.d/chorus.conf"
	EnablePath   = "etc/systemd/system/multi-user.target.wants/chorusd.service"
)

// ServiceUser is the user chorusd.service runs as (systemd/chorus.sysusers).
const ServiceUser = "chorus"

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

// Secret is a password or token the installer generated: printed once,
// then only in its file.
type Secret struct {
	Where string // "/etc/chorus/mqtt-users.yaml: kyoko"
	Value string
}

// Variable is an environment variable the config needs in
// /etc/default/chorusd.
type Variable struct {
	Name  string
	Field string // the config field naming it
	Set   bool   // the installed environment file sets it
}

// Report is what an install did and what the operator must still do.
type Report struct {
	Steps     []Step
	Secrets   []Secret
	Variables []Variable
	Notes     []string
	Target    Target
}

// Run installs. Everything is checked before anything is written: the
// config, the binary (a chorusd for the board's arch with the drivers the
// config names), and every file the config names, which is either laid
// down here or must already be in the root.
func Run(o Options) (Report, error) {
	var rep Report
	if o.Root == "" {
		return rep, errors.New("no root given (-root)")
	}
	cfgBytes, err := os.ReadFile(o.Config)
	if err != nil {
		return rep, fmt.Errorf("config: %w", err)
	}
	// Checked as any build on any machine would: the robot's own files are
	// not here (chorusd --check-config and --doctor check those on the
	// robot); the binary's drivers are checked below from its build info.
	c, typed, err := robot.ParseFile(o.Config)
	if err == nil {
		if all := config.Merge(typed, c.Validate(), parts.Check(c, parts.Anywhere)); len(all) > 0 {
			err = all
		}
	}
	if err != nil {
		return rep, fmt.Errorf("refusing an invalid config, nothing written:\n%w", err)
	}
	bin, err := os.ReadFile(o.Binary)
	if err != nil {
		return rep, fmt.Errorf("chorusd binary: %w", err)
	}
	if rep.Target, err = checkBinary(o.Binary, bin, c); err != nil {
		return rep, fmt.Errorf("refusing, nothing written: %w", err)
	}
	if mine := selfRevision(); mine != "" && rep.Target.Revision != "" && mine != rep.Target.Revision {
		rep.Notes = append(rep.Notes, fmt.Sprintf("%s was built from revision %.12s, this chorus from %.12s: its drivers were checked against this chorus's list",
			o.Binary, rep.Target.Revision, mine))
	}
	gen, err := plan(o.Root, c)
	if err != nil {
		return rep, fmt.Errorf("refusing, nothing written:\n%w", err)
	}
	// Nothing is read or written through a link out of the root (the
	// secrets would land on this machine).
	var escapes []string
	paths := []string{BinaryPath, ConfigPath, UnitPath, SysusersPath, EnvPath, TmpfilesPath, filepath.Dir(EnablePath)}
	for _, f := range gen.files {
		paths = append(paths, f.path)
	}
	for _, w := range gen.owned {
		paths = append(paths, w.path)
	}
	for _, p := range append(paths, gen.dirs...) {
		if err := inRoot(o.Root, p); err != nil {
			escapes = append(escapes, err.Error())
		}
	}
	if len(escapes) > 0 {
		return rep, fmt.Errorf("refusing, nothing written:\n%s", strings.Join(escapes, "\n"))
	}
	// The environment file holds secrets and is kept, except that the
	// passwords generated with a new users file replace their old values
	// in it: otherwise the robot could not log in to its own broker.
	env, keepEnv := systemd.Env, true
	if old, err := os.ReadFile(filepath.Join(o.Root, EnvPath)); err == nil {
		env = old
		if len(gen.env) > 0 {
			var changed []string
			env, changed = gen.updateEnv(old)
			keepEnv = false
			if len(changed) > 0 {
				rep.Notes = append(rep.Notes, fmt.Sprintf("/%s: set %s to the passwords of the new broker users file (its other lines kept)", EnvPath, strings.Join(changed, ", ")))
			}
		}
	} else if !errors.Is(err, fs.ErrNotExist) {
		return rep, err
	} else if len(gen.env) > 0 {
		env = append(append([]byte{}, env...), gen.envLines()...)
	}
	files := []file{
		{BinaryPath, bin, 0o755, false},
		{ConfigPath, cfgBytes, 0o644, false},
		{UnitPath, systemd.Service, 0o644, false},
		{SysusersPath, systemd.Sysusers, 0o644, false},
		{EnvPath, env, 0o600, keepEnv},
	}
	files = append(files, gen.files...)
	if len(gen.owned) > 0 {
		files = append(files, file{TmpfilesPath, gen.tmpfiles(), 0o644, false})
	}
	for _, f := range files {
		changed, err := write(filepath.Join(o.Root, f.path), f.data, f.mode, f.keep)
		if err != nil {
			return rep, err
		}
		rep.Steps = append(rep.Steps, Step{Path: "/" + f.path, Changed: changed})
	}
	for _, d := range gen.dirs {
		p := filepath.Join(o.Root, d)
		changed := !exists(p)
		if err := os.MkdirAll(p, 0o750); err != nil {
			return rep, err
		}
		rep.Steps = append(rep.Steps, Step{Path: "/" + d + "/", Changed: changed})
	}
	for _, s := range rep.Steps {
		if s.Changed {
			rep.Secrets = append(rep.Secrets, gen.secrets[strings.TrimPrefix(s.Path, "/")]...)
		}
	}
	if note := chown(o.Root, gen.owned); note != "" {
		rep.Notes = append(rep.Notes, note)
	}
	// Enable: the link systemctl enable would make.
	link := filepath.Join(o.Root, EnablePath)
	if target, err := os.Readlink(link); err != nil || target != "/"+UnitPath {
		if err := os.MkdirAll(filepath.Dir(link), 0o755); err != nil {
			return rep, err
		}
		os.Remove(link)
		if err := os.Symlink("/"+UnitPath, link); err != nil {
			return rep, fmt.Errorf("enable: %w", err)
		}
		rep.Steps = append(rep.Steps, Step{Path: "/" + EnablePath, Changed: true})
	} else {
		rep.Steps = append(rep.Steps, Step{Path: "/" + EnablePath})
	}
	installedEnv, _ := os.ReadFile(filepath.Join(o.Root, EnvPath))
	rep.Variables = Variables(c, installedEnv)
	return rep, nil
}

// Next is what the operator reads last: that the service starts on first
// boot, or, when the environment file lacks a variable the config needs,
// that chorusd cannot start until it is set (its ExecStartPre
// --check-config would fail at every start).
func (r Report) Next(root string) string {
	var missing []string
	for _, v := range r.Variables {
		if !v.Set {
			missing = append(missing, v.Name+" ("+v.Field+")")
		}
	}
	if len(missing) > 0 {
		return fmt.Sprintf("installed chorusd (linux/%s) into %s, but it cannot start until /%s sets %s: set it there (mode 0600) before the first boot, then chorusd --doctor checks the rest",
			r.Target.Arch(), root, EnvPath, strings.Join(missing, ", "))
	}
	return fmt.Sprintf("installed chorusd (linux/%s) into %s; on first boot: systemd-sysusers, then the service starts (check it there with chorusd --doctor)",
		r.Target.Arch(), root)
}

// checkBinary refuses a binary that cannot run c on its board: not a Go
// binary, not chorusd, not for Linux or the board's arch, or lacking a
// driver c names.
func checkBinary(name string, bin []byte, c *robot.Config) (Target, error) {
	t, err := ReadTarget(name, bytes.NewReader(bin))
	if err != nil {
		return t, err
	}
	if t.GOOS != "linux" {
		return t, fmt.Errorf("%s is built for %s/%s, the robot runs Linux: build it with GOOS=linux (make dist)", name, t.GOOS, t.GOARCH)
	}
	if !t.Fits(c.Device.Arch) {
		return t, fmt.Errorf("%s is built for linux/%s, the board is %s (device.arch): use dist/chorusd-linux-%s", name, t.Arch(), c.Device.Arch, c.Device.Arch)
	}
	if missing := parts.InBuild(c, t.Tags); len(missing) > 0 {
		return t, fmt.Errorf("%s cannot run this config:\n%s", name, strings.Join(missing, "\n"))
	}
	return t, nil
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
		return false, err
	}
	tmp, err := os.CreateTemp(filepath.Dir(p), ".chorus-install-*")
	if err != nil {
		return false, err
	}
	defer os.Remove(tmp.Name())
	if _, err := io.Copy(tmp, bytes.NewReader(data)); err != nil {
		tmp.Close()
		return false, err
	}
	if err := tmp.Chmod(mode); err != nil {
		tmp.Close()
		return false, err
	}
	if err := tmp.Close(); err != nil {
		return false, err
	}
	if err := os.Rename(tmp.Name(), p); err != nil {
		return false, err
	}
	return true, nil
}
