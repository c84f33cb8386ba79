// Reading a config: strict YAML decoding, every problem at once.

package config

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/chorus-robotics/chorus/runtime/realtime"
)

// Load reads, decodes strictly, fills defaults and validates path.
func Load(path string) (*Config, error) {
	c, typed, err := ParseFile(path)
	if err != nil {
		return nil, err
	}
	if all := Merge(typed, c.Validate()); len(all) > 0 {
		return nil, fmt.Errorf("config %s: %w", path, all)
	}
	return c, nil
}

// Decode reads one YAML document, strictly, then fills defaults and
// validates. Every problem is reported at once, each by its field's path:
// a value of the wrong type too ("room.vote_timeout: must be a duration
// such as 3s or 500ms, got "soon""), without hiding the others.
func Decode(r io.Reader) (*Config, error) {
	c, typed, err := Parse(r)
	if err != nil {
		return nil, err
	}
	if all := Merge(typed, c.Validate()); len(all) > 0 {
		return nil, all
	}
	return c, nil
}

// ParseFile is Parse of the file at path; the config remembers its path
// (Resolve).
func ParseFile(path string) (*Config, Errors, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, fmt.Errorf("config: %w", err)
	}
	defer f.Close()
	c, typed, err := Parse(f)
	if err != nil {
		return nil, nil, fmt.Errorf("config %s: %w", path, err)
	}
	c.path = path
	return c, typed, nil
}

// ParseFS is Parse of the file name in fsys (configs embedded in a
// binary); the config remembers name.
func ParseFS(fsys fs.FS, name string) (*Config, Errors, error) {
	f, err := fsys.Open(name)
	if err != nil {
		return nil, nil, fmt.Errorf("config: %w", err)
	}
	defer f.Close()
	c, typed, err := Parse(f)
	if err != nil {
		return nil, nil, fmt.Errorf("config %s: %w", name, err)
	}
	c.path = name
	return c, typed, nil
}

// Parse reads one YAML document strictly and fills defaults, without
// validating, so that every later check can add its problems to the same
// list. A value of the wrong type or an unknown key is a problem returned
// beside the config, named by its field's path (the field keeps its
// default); a document that is not YAML, or empty, is an error with no
// config.
func Parse(r io.Reader) (*Config, Errors, error) {
	data, err := io.ReadAll(io.LimitReader(r, 1<<20+1))
	if err != nil {
		return nil, nil, err
	}
	if len(data) > 1<<20 {
		return nil, nil, errors.New("larger than 1 MiB")
	}
	var root yaml.Node
	if err := yaml.Unmarshal(data, &root); err != nil {
		return nil, nil, fmt.Errorf("not valid YAML: %w", err)
	}
	if root.Kind == 0 || len(root.Content) == 0 {
		return nil, nil, errors.New("empty file")
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	var c Config
	c.Room.Realtime = realtime.DefaultSettings() // what the file leaves unset keeps its default
	var typed Errors
	if err := dec.Decode(&c); err != nil {
		var te *yaml.TypeError
		if !errors.As(err, &te) {
			return nil, nil, fmt.Errorf("decode: %w", err)
		}
		ix := indexFields(&root)
		for _, msg := range te.Errors {
			if path, problem, ok := ix.explain(msg); ok {
				typed = append(typed, path+": "+problem)
			} else {
				typed = append(typed, msg)
			}
		}
	}
	c.HomeAssistant.configured = hasKey(&root, "homeassistant")
	c.SetDefaults()
	return &c, typed, nil
}

// hasKey reports whether the document's top-level mapping has key.
func hasKey(root *yaml.Node, key string) bool {
	if len(root.Content) == 0 || root.Content[0].Kind != yaml.MappingNode {
		return false
	}
	m := root.Content[0].Content
	for i := 0; i+1 < len(m); i += 2 {
		if m[i].Value == key {
			return true
		}
	}
	return false
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
