package mcptest

// Home Assistant is Python: the text it hands back is Python's json.dumps,
// PyYAML's safe_dump and Python's repr of its dataclasses, and the argument
// errors are the jsonschema package's messages. This file renders those
// shapes so the fake's answers read as the real one's do.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// obj is a JSON object that keeps its keys in order, as a Python dict does.
type obj struct {
	keys []string
	vals map[string]any
}

func newObj() *obj { return &obj{vals: map[string]any{}} }

// o builds an obj from key, value pairs.
func o(kv ...any) *obj {
	m := newObj()
	for i := 0; i+1 < len(kv); i += 2 {
		m.set(kv[i].(string), kv[i+1])
	}
	return m
}

func (m *obj) set(k string, v any) {
	if _, ok := m.vals[k]; !ok {
		m.keys = append(m.keys, k)
	}
	m.vals[k] = v
}

func (m *obj) get(k string) (any, bool) {
	v, ok := m.vals[k]
	return v, ok
}

// decodeOrdered decodes one JSON value keeping object key order; numbers
// stay json.Number so that 5 and 5.0 remain what the client sent.
func decodeOrdered(data []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	v, err := decodeValue(dec)
	if err != nil {
		return nil, err
	}
	if dec.More() {
		return nil, fmt.Errorf("trailing data after JSON value")
	}
	return v, nil
}

func decodeValue(dec *json.Decoder) (any, error) {
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	switch t := tok.(type) {
	case json.Delim:
		switch t {
		case '{':
			m := newObj()
			for dec.More() {
				kt, err := dec.Token()
				if err != nil {
					return nil, err
				}
				v, err := decodeValue(dec)
				if err != nil {
					return nil, err
				}
				m.set(kt.(string), v)
			}
			_, err := dec.Token()
			return m, err
		case '[':
			arr := []any{}
			for dec.More() {
				v, err := decodeValue(dec)
				if err != nil {
					return nil, err
				}
				arr = append(arr, v)
			}
			_, err := dec.Token()
			return arr, err
		}
		return nil, fmt.Errorf("unexpected %v", t)
	default:
		return tok, nil
	}
}

// isFloat reports whether a JSON number is a Python float (has a fraction
// or an exponent), as json.loads decides.
func isFloat(n json.Number) bool { return strings.ContainsAny(string(n), ".eE") }

// pyFloat renders a float as Python's repr does.
func pyFloat(f float64) string {
	switch {
	case math.IsInf(f, 1):
		return "inf"
	case math.IsInf(f, -1):
		return "-inf"
	case math.IsNaN(f):
		return "nan"
	}
	a := math.Abs(f)
	if a != 0 && (a < 1e-4 || a >= 1e16) {
		s := strconv.FormatFloat(f, 'e', -1, 64) // 1e+20, 1.5e-05
		return s
	}
	s := strconv.FormatFloat(f, 'f', -1, 64)
	if !strings.Contains(s, ".") {
		s += ".0"
	}
	return s
}

// pyNum renders a JSON number as Python would after json.loads.
func pyNum(n json.Number) string {
	if !isFloat(n) {
		return string(n)
	}
	f, err := n.Float64()
	if err != nil {
		return string(n)
	}
	return pyFloat(f)
}

// pyStr is Python's repr of a str.
func pyStr(s string) string {
	q := byte('\'')
	if strings.Contains(s, "'") && !strings.Contains(s, `"`) {
		q = '"'
	}
	var b strings.Builder
	b.WriteByte(q)
	for _, r := range s {
		switch {
		case r == rune(q) || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r == '\t':
			b.WriteString(`\t`)
		case r == utf8.RuneError:
			b.WriteString(`\ufffd`)
		case r < 0x20 || r == 0x7f:
			fmt.Fprintf(&b, `\x%02x`, r)
		case r > 0x7f && !unicode.IsPrint(r):
			if r <= 0xff {
				fmt.Fprintf(&b, `\x%02x`, r)
			} else if r <= 0xffff {
				fmt.Fprintf(&b, `\u%04x`, r)
			} else {
				fmt.Fprintf(&b, `\U%08x`, r)
			}
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte(q)
	return b.String()
}

// pyRepr is Python's repr of a value json.loads produced.
func pyRepr(v any) string {
	switch t := v.(type) {
	case nil:
		return "None"
	case bool:
		if t {
			return "True"
		}
		return "False"
	case string:
		return pyStr(t)
	case json.Number:
		return pyNum(t)
	case int:
		return strconv.Itoa(t)
	case float64:
		return pyFloat(t)
	case []any:
		parts := make([]string, len(t))
		for i, e := range t {
			parts[i] = pyRepr(e)
		}
		return "[" + strings.Join(parts, ", ") + "]"
	case []string:
		parts := make([]string, len(t))
		for i, e := range t {
			parts[i] = pyStr(e)
		}
		return "[" + strings.Join(parts, ", ") + "]"
	case *obj:
		parts := make([]string, len(t.keys))
		for i, k := range t.keys {
			parts[i] = pyStr(k) + ": " + pyRepr(t.vals[k])
		}
		return "{" + strings.Join(parts, ", ") + "}"
	}
	return fmt.Sprint(v)
}

// pySet is the repr of a Python set of strings, or None when nil. A set's
// order in real Home Assistant depends on the process's hash seed; the fake
// keeps the order the values came in.
func pySet(s []string) string {
	if s == nil {
		return "None"
	}
	if len(s) == 0 {
		return "set()"
	}
	parts := make([]string, len(s))
	for i, e := range s {
		parts[i] = pyStr(e)
	}
	return "{" + strings.Join(parts, ", ") + "}"
}

// pyOptStr is the repr of a str | None.
func pyOptStr(s *string) string {
	if s == nil {
		return "None"
	}
	return pyStr(*s)
}

// pyDumps is Python's json.dumps with its defaults: ", " and ": " between
// items, and every non-ASCII character escaped (ensure_ascii=True).
func pyDumps(v any) string {
	var b strings.Builder
	dumpTo(&b, v)
	return b.String()
}

func dumpTo(b *strings.Builder, v any) {
	switch t := v.(type) {
	case nil:
		b.WriteString("null")
	case bool:
		if t {
			b.WriteString("true")
		} else {
			b.WriteString("false")
		}
	case int:
		b.WriteString(strconv.Itoa(t))
	case json.Number:
		b.WriteString(string(t))
	case string:
		dumpString(b, t)
	case []any:
		b.WriteByte('[')
		for i, e := range t {
			if i > 0 {
				b.WriteString(", ")
			}
			dumpTo(b, e)
		}
		b.WriteByte(']')
	case *obj:
		b.WriteByte('{')
		for i, k := range t.keys {
			if i > 0 {
				b.WriteString(", ")
			}
			dumpString(b, k)
			b.WriteString(": ")
			dumpTo(b, t.vals[k])
		}
		b.WriteByte('}')
	default:
		panic(fmt.Sprintf("pyDumps: %T", v))
	}
}

func dumpString(b *strings.Builder, s string) {
	b.WriteByte('"')
	for _, r := range s {
		switch r {
		case '"':
			b.WriteString(`\"`)
		case '\\':
			b.WriteString(`\\`)
		case '\n':
			b.WriteString(`\n`)
		case '\r':
			b.WriteString(`\r`)
		case '\t':
			b.WriteString(`\t`)
		case '\b':
			b.WriteString(`\b`)
		case '\f':
			b.WriteString(`\f`)
		default:
			switch {
			case r < 0x20 || (r > 0x7e && r <= 0xffff):
				fmt.Fprintf(b, `\u%04x`, r)
			case r > 0xffff:
				r -= 0x10000
				fmt.Fprintf(b, `\u%04x\u%04x`, 0xd800+(r>>10), 0xdc00+(r&0x3ff))
			default:
				b.WriteRune(r)
			}
		}
	}
	b.WriteByte('"')
}

// yamlPlainUnsafe matches what PyYAML's resolver would read back as
// something other than a string (YAML 1.1 bools, null, ints, floats), so
// such a string must be quoted.
var yamlPlainUnsafe = regexp.MustCompile(`^(?:` +
	`yes|Yes|YES|no|No|NO|true|True|TRUE|false|False|FALSE|on|On|ON|off|Off|OFF|` +
	`~|null|Null|NULL|` +
	`[-+]?(?:0|[1-9][0-9_]*)|0b[01_]+|0[0-7_]+|0x[0-9a-fA-F_]+|[-+]?[1-9][0-9_]*(?::[0-5]?[0-9])+|` +
	`[-+]?(?:[0-9][0-9_]*)\.[0-9_]*(?:[eE][-+][0-9]+)?|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN)|` +
	`[-+]?[0-9][0-9_]*(?::[0-5]?[0-9])+\.[0-9_]*` +
	`)$`)

// yamlScalar renders a string as PyYAML's safe_dump would: plain when it
// can be read back as the same string, otherwise in single quotes.
func yamlScalar(s string) string {
	needQuote := s == "" || yamlPlainUnsafe.MatchString(s) ||
		strings.ContainsAny(s[:1], "-?:,[]{}#&*!|>'\"%@` \t") ||
		strings.HasSuffix(s, " ") || strings.HasSuffix(s, ":") ||
		strings.Contains(s, ": ") || strings.Contains(s, " #") ||
		strings.ContainsAny(s, "\n\r\t")
	if !needQuote {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", "''") + "'"
}

// yamlDumpList renders a list of flat dicts (values a string, nil, or a
// dict of those) as HA's yaml_util.dump does (PyYAML, block style, keys in
// insertion order).
func yamlDumpList(items []*obj) string {
	if len(items) == 0 {
		return "[]\n"
	}
	var b strings.Builder
	for _, it := range items {
		for i, k := range it.keys {
			if i == 0 {
				b.WriteString("- ")
			} else {
				b.WriteString("  ")
			}
			yamlKV(&b, "  ", k, it.vals[k])
		}
	}
	return b.String()
}

func yamlKV(b *strings.Builder, indent, k string, v any) {
	b.WriteString(yamlScalar(k))
	b.WriteByte(':')
	switch t := v.(type) {
	case nil:
		b.WriteString(" null\n")
	case string:
		b.WriteString(" " + yamlScalar(t) + "\n")
	case *obj:
		b.WriteByte('\n')
		for _, kk := range t.keys {
			b.WriteString(indent + "  ")
			yamlKV(b, indent+"  ", kk, t.vals[kk])
		}
	default:
		b.WriteString(" " + fmt.Sprint(t) + "\n")
	}
}
