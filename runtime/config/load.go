// Reading a config: strict YAML decoding, every problem at once.

package config

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"reflect"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/chorus-robotics/chorus/runtime/realtime"
)

// Document is the Go shape of a whole config file: Config alone, or a
// larger type that inlines it (a robot's: device/robot adds the body's
// sections). Base is its Config.
type Document interface {
	Base() *Config
	SetDefaults()
	Validate() error
}

// Base is c itself: a Config is a Document of the room's sections.
func (c *Config) Base() *Config { return c }

// Load reads the file at path into doc strictly, fills defaults and
// validates: every problem at once.
func Load(path string, doc Document) error {
	typed, err := ParseFile(path, doc)
	if err != nil {
		return err
	}
	if all := Merge(typed, doc.Validate()); len(all) > 0 {
		return fmt.Errorf("config %s: %w", path, all)
	}
	return nil
}

// Decode reads one YAML document into doc, strictly, then fills defaults
// and validates. Every problem is reported at once, each by its field's
// path: a value of the wrong type too ("room.vote_timeout: must be a
// duration such as 3s or 500ms, got "soon""), without hiding the others.
func Decode(r io.Reader, doc Document) error {
	typed, err := Parse(r, doc)
	if err != nil {
		return err
	}
	if all := Merge(typed, doc.Validate()); len(all) > 0 {
		return all
	}
	return nil
}

// ParseFile is Parse of the file at path; the config remembers its path
// (Resolve).
func ParseFile(path string, doc Document) (Errors, error) {
	return parseNamed(path, func() (io.ReadCloser, error) { return os.Open(path) }, doc)
}

// ParseFS is Parse of the file name in fsys (configs embedded in a
// binary); the config remembers name.
func ParseFS(fsys fs.FS, name string, doc Document) (Errors, error) {
	return parseNamed(name, func() (io.ReadCloser, error) { return fsys.Open(name) }, doc)
}

// parseNamed is Parse of what open opens, remembered as name.
func parseNamed(name string, open func() (io.ReadCloser, error), doc Document) (Errors, error) {
	f, err := open()
	if err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	defer f.Close()
	typed, err := Parse(f, doc)
	if err != nil {
		return nil, fmt.Errorf("config %s: %w", name, err)
	}
	doc.Base().path = name
	doc.Base().resolvePaths()
	return typed, nil
}

// Parse reads one YAML document into doc strictly and fills defaults,
// without validating, so that every later check can add its problems to
// the same list. A value of the wrong type or an unknown key is a problem
// returned, named by its field's path (the field keeps its default); a
// document that is not YAML, or empty, is an error.
func Parse(r io.Reader, doc Document) (Errors, error) {
	data, err := io.ReadAll(io.LimitReader(r, 1<<20+1))
	if err != nil {
		return nil, err
	}
	if len(data) > 1<<20 {
		return nil, errors.New("larger than 1 MiB")
	}
	var root yaml.Node
	if err := yaml.Unmarshal(data, &root); err != nil {
		return nil, fmt.Errorf("not valid YAML: %w", err)
	}
	if root.Kind == 0 || len(root.Content) == 0 {
		return nil, errors.New("empty file")
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	c := doc.Base()
	c.Room.Realtime = realtime.DefaultSettings() // what the file leaves unset keeps its default
	var typed Errors
	if err := dec.Decode(doc); err != nil {
		var te *yaml.TypeError
		if !errors.As(err, &te) {
			return nil, fmt.Errorf("decode: %w", err)
		}
		ix := indexFields(&root)
		ix.known = knownKeys(reflect.TypeOf(doc))
		for _, msg := range te.Errors {
			if path, problem, ok := ix.explain(msg); ok {
				typed = append(typed, path+": "+problem)
			} else {
				typed = append(typed, msg)
			}
		}
	}
	c.sections = topKeys(&root)
	doc.SetDefaults()
	return typed, nil
}

// InFile reports whether the file had the top-level section key (a
// section that is there but empty is not the same as none).
func (c *Config) InFile(key string) bool { return c.sections[key] }

// topKeys are the keys of the document's top-level mapping.
func topKeys(root *yaml.Node) map[string]bool {
	out := map[string]bool{}
	if len(root.Content) == 0 || root.Content[0].Kind != yaml.MappingNode {
		return out
	}
	m := root.Content[0].Content
	for i := 0; i+1 < len(m); i += 2 {
		out[m[i].Value] = true
	}
	return out
}

// Merge lists a config's problems: first those of type, then every other
// one whose field has no problem of type (a field that could not be read
// is reported once, not again for the default it was left with). more
// holds an error from Validate, or problem strings.
func Merge(typed Errors, more ...any) Errors {
	bad := map[string]bool{}
	for _, p := range typed {
		field, _, _ := strings.Cut(p, ":")
		bad[field] = true
	}
	all := append(Errors(nil), typed...)
	add := func(p string) {
		if field, _, _ := strings.Cut(p, ":"); !bad[field] {
			all = append(all, p)
		}
	}
	for _, m := range more {
		switch v := m.(type) {
		case nil:
		case Errors:
			for _, p := range v {
				add(p)
			}
		case []string:
			for _, p := range v {
				add(p)
			}
		case error:
			add(v.Error())
		}
	}
	return all
}
