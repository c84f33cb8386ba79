package config

import (
	"reflect"
	"regexp"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/chorus-robotics/chorus/runtime/settings"
)

// fieldIndex finds the path of a field ("room.vote_timeout",
// "room.members[1]") from what the YAML decoder says about it: a line and
// a value or a key name. The decoder's type errors name only a line.
type fieldIndex struct {
	values map[int][]located   // by line: scalar values and the containers
	keys   map[int][]located   // by line: mapping keys
	known  map[string][]string // by Go type ("robot.HTTP"): the keys it takes
}

type located struct {
	path, text string
	kind       yaml.Kind
}

func indexFields(root *yaml.Node) fieldIndex {
	ix := fieldIndex{values: map[int][]located{}, keys: map[int][]located{}}
	var walk func(n *yaml.Node, path string)
	walk = func(n *yaml.Node, path string) {
		switch n.Kind {
		case yaml.DocumentNode:
			for _, c := range n.Content {
				walk(c, path)
			}
			return
		case yaml.MappingNode:
			for i := 0; i+1 < len(n.Content); i += 2 {
				k, v := n.Content[i], n.Content[i+1]
				p := k.Value
				if path != "" {
					p = path + "." + k.Value
				}
				ix.keys[k.Line] = append(ix.keys[k.Line], located{path: p, text: k.Value})
				walk(v, p)
			}
		case yaml.SequenceNode:
			for i, c := range n.Content {
				walk(c, path+"["+strconv.Itoa(i)+"]")
			}
		}
		if path != "" {
			ix.values[n.Line] = append(ix.values[n.Line], located{path: path, text: n.Value, kind: n.Kind})
		}
	}
	walk(root, "")
	return ix
}

// knownKeys is, for t and every struct type inside it, the YAML keys it
// takes (its fields' yaml tags, inline fields' own), by the type's name as
// the decoder writes it in "field x not found in type robot.HTTP".
func knownKeys(t reflect.Type) map[string][]string {
	out := map[string][]string{}
	var walk func(t reflect.Type)
	walk = func(t reflect.Type) {
		for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice || t.Kind() == reflect.Array || t.Kind() == reflect.Map {
			t = t.Elem()
		}
		if t.Kind() != reflect.Struct {
			return
		}
		if _, done := out[t.String()]; done {
			return
		}
		out[t.String()] = nil
		var keys []string
		var fields func(t reflect.Type)
		fields = func(t reflect.Type) {
			for f := range t.Fields() {
				tag := f.Tag.Get("yaml")
				name, opts, _ := strings.Cut(tag, ",")
				switch {
				case name == "-" || (!f.IsExported() && !f.Anonymous):
					continue
				case strings.Contains(opts, "inline"):
					ft := f.Type
					if ft.Kind() == reflect.Pointer {
						ft = ft.Elem()
					}
					if ft.Kind() == reflect.Struct {
						fields(ft)
					}
					continue
				case name == "":
					name = strings.ToLower(f.Name)
				}
				keys = append(keys, name)
				walk(f.Type)
			}
		}
		fields(t)
		out[t.String()] = keys
	}
	walk(t)
	return out
}

var (
	reCannot  = regexp.MustCompile("^line (\\d+): cannot unmarshal !!(\\w+)(?: `(.*)`)? into (.+)$")
	reUnknown = regexp.MustCompile(`^line (\d+): field (\S+) not found in type (\S+)`)
)

// explain turns one of the decoder's type errors into "path: what is
// wrong", or reports false when it does not recognise the message.
func (ix fieldIndex) explain(msg string) (path, problem string, ok bool) {
	if m := reUnknown.FindStringSubmatch(msg); m != nil {
		line, _ := strconv.Atoi(m[1])
		dym := settings.DidYouMean(m[2], ix.known[m[3]]...)
		for _, k := range ix.keys[line] {
			if k.text == m[2] {
				return k.path, "unknown field" + dym + " (check the spelling; secrets never go in the YAML)", true
			}
		}
		return m[2], "unknown field" + dym, true
	}
	m := reCannot.FindStringSubmatch(msg)
	if m == nil {
		return "", "", false
	}
	line, _ := strconv.Atoi(m[1])
	tag, value, into := m[2], m[3], m[4]
	got := "got " + strconv.Quote(value)
	if m[3] == "" && tag != "str" {
		got = "got " + yamlKindName(tag)
	}
	path = "line " + m[1]
	for _, v := range ix.values[line] {
		if (m[3] != "" && v.kind == yaml.ScalarNode && sameValue(v.text, value)) ||
			(m[3] == "" && v.kind != yaml.ScalarNode && tagKind(tag) == v.kind) {
			path = v.path
			break
		}
	}
	return path, "must be " + goTypeName(into) + ", " + got, true
}

// sameValue: the decoder quotes a long value cut to its first characters
// and "..." ("rpicam-..."); a list given as one string is the usual case.
func sameValue(text, quoted string) bool {
	if cut, ok := strings.CutSuffix(quoted, "..."); ok && len(text) > len(cut) {
		return strings.HasPrefix(text, cut)
	}
	return text == quoted
}

func tagKind(tag string) yaml.Kind {
	switch tag {
	case "map":
		return yaml.MappingNode
	case "seq":
		return yaml.SequenceNode
	}
	return yaml.ScalarNode
}

func yamlKindName(tag string) string {
	switch tag {
	case "map":
		return "a mapping"
	case "seq":
		return "a list"
	case "null":
		return "nothing"
	}
	return "a " + tag
}

func goTypeName(t string) string {
	switch {
	case t == "time.Duration":
		return "a duration such as 3s or 500ms"
	case t == "bool":
		return "true or false"
	case t == "string":
		return "a string"
	case t == "float64" || t == "float32":
		return "a number"
	case strings.HasPrefix(t, "int") || strings.HasPrefix(t, "uint"):
		return "a whole number"
	case strings.HasPrefix(t, "[]"):
		return "a list"
	case strings.HasPrefix(t, "map[") || strings.Contains(t, "."):
		return "a mapping"
	}
	return t
}
