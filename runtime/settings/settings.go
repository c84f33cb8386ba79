// Package settings is what a package needs to own its section of a
// robot's config file, while runtime/config keeps the file's shape,
// loading and strictness: Problems, to which a section's Check adds each
// bad field named by its path, so that a config's every problem is
// reported at once; and Secret, which reads what a section keeps out of
// the YAML (an environment variable or a file).
//
// # Usage
//
// A package's section is a type with its yaml tags, a SetDefaults method
// that fills every unset field from the package's own Default constants,
// and a Check method:
//
//	func (s Settings) Check(p *settings.Problems) {
//		if s.Timeout < 100*time.Millisecond {
//			p.Add("timeout", "must be at least 100ms, got %v", s.Timeout)
//		}
//	}
//
// and runtime/config calls it at the section's place in the file:
// s.Check(p.In("query")) reports "query.timeout: must be ...".
package settings

import (
	"fmt"
	"net"
	"os"
	"strings"

	"github.com/chorus-robotics/chorus/runtime/protocol"
)

// Problems collects a config's bad fields, each "path: what is wrong".
// The zero value is ready; In gives a section's view of the same list.
type Problems struct {
	at   string    // the section's path and a dot, or ""
	list *[]string // shared by every section's view
}

// In is the view of p for section (a path such as "room" or
// "hearing.vad"): a field f added there is reported as section.f.
func (p *Problems) In(section string) *Problems {
	if p.list == nil {
		p.list = new([]string)
	}
	return &Problems{at: p.at + section + ".", list: p.list}
}

// Add reports field (a path inside p's section; "" for the section
// itself) with what is wrong.
func (p *Problems) Add(field, format string, args ...any) {
	if p.list == nil {
		p.list = new([]string)
	}
	path := p.at + field
	if field == "" { // the section itself
		path = strings.TrimSuffix(p.at, ".")
	}
	*p.list = append(*p.list, path+": "+fmt.Sprintf(format, args...))
}

// Identity reports field unless v is a valid identity (protocol.ValidIdentity).
func (p *Problems) Identity(field, v string) {
	if why := protocol.ValidIdentity(v); why != "" {
		p.Add(field, "%s (got %q)", why, v)
	}
}

// List is every problem added, in order; nil when there is none.
func (p *Problems) List() []string {
	if p.list == nil {
		return nil
	}
	return *p.list
}

// Secret is the value a config names by field: the environment variable
// env if given (an error when it is not set), else the trimmed contents
// of the file at path, else "".
func Secret(field, env, path string) (string, error) {
	switch {
	case env != "":
		v, ok := os.LookupEnv(env)
		if !ok {
			return "", fmt.Errorf("%s: environment variable %s is not set", field, env)
		}
		return v, nil
	case path != "":
		b, err := os.ReadFile(path)
		if err != nil {
			return "", fmt.Errorf("%s: %w", field, err)
		}
		return strings.TrimSpace(string(b)), nil
	}
	return "", nil
}

// Loopback reports whether addr (host:port) listens on this machine only:
// localhost or a loopback address.
func Loopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
