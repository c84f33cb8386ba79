package doctor

import (
	"bufio"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"sort"
	"strings"
)

// DefaultEnvFile is the EnvironmentFile of chorusd.service.
const DefaultEnvFile = "/etc/default/chorusd"

// envFile reads the environment file the unit gives chorusd (the
// systemd EnvironmentFile format: KEY=VALUE lines, # comments, a value
// optionally in quotes) and sets each variable the process environment
// does not already have, as systemd would before starting chorusd.
func (d *doctor) envFile() {
	path := d.o.EnvFile
	if path == "" {
		path = DefaultEnvFile
	}
	name := "environment " + path
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		d.ok(name, "not there: the secrets are read from this process's environment only")
		return
	}
	if err != nil {
		d.fail(name, "run the doctor as root (the file is root's, mode 0600), or point --env-file at a readable copy", err)
		return
	}
	defer f.Close()
	var read, kept []string
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || line[0] == '#' || line[0] == ';' {
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		k = strings.TrimSpace(k)
		if !ok || k == "" || strings.ContainsAny(k, " \t") {
			d.fail(name, "write each line as NAME=value", fmt.Errorf("line %d is not NAME=value", n))
			return
		}
		v = strings.TrimSpace(v)
		if len(v) >= 2 && (v[0] == '"' || v[0] == '\'') && v[len(v)-1] == v[0] {
			v = v[1 : len(v)-1]
		}
		if _, set := os.LookupEnv(k); set {
			kept = append(kept, k)
			continue
		}
		os.Setenv(k, v)
		read = append(read, k)
	}
	if err := sc.Err(); err != nil {
		d.fail(name, "fix the file", err)
		return
	}
	sort.Strings(read)
	detail := "read, as chorusd.service does"
	if len(read) > 0 {
		detail += ": set " + strings.Join(read, ", ")
	}
	if len(kept) > 0 {
		sort.Strings(kept)
		detail += "; kept from the environment " + strings.Join(kept, ", ")
	}
	d.ok(name, "%s", detail)
}
