package protocol

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// Kind classifies why a payload was rejected. The set is fixed so that it can
// label a metric.
type Kind string

const (
	KindOversize     Kind = "oversize"      // larger than the configured cap
	KindSyntax       Kind = "syntax"        // not JSON, or trailing data
	KindUnknownField Kind = "unknown_field" // a field the schema does not have
	KindMissing      Kind = "missing"       // a required field is absent or empty
	KindInvalid      Kind = "invalid"       // wrong type, out of range, bad enum
	KindSpoof        Kind = "spoof"         // "from" differs from the topic's identity
)

// Kinds lists every Kind, for pre-registering metric labels.
var Kinds = []Kind{KindOversize, KindSyntax, KindUnknownField, KindMissing, KindInvalid, KindSpoof}

// Error is a rejected payload: which type, which field, what is wrong.
type Error struct {
	Type  string // the wire type being decoded, e.g. "state"
	Field string // JSON path of the offending field, e.g. "params.importance"; empty for the whole payload
	Kind  Kind
	Msg   string
}

func (e *Error) Error() string {
	if e.Field == "" {
		return fmt.Sprintf("protocol: %s: %s", e.Type, e.Msg)
	}
	return fmt.Sprintf("protocol: %s: %s: %s", e.Type, e.Field, e.Msg)
}

// KindOf returns the Kind of a decoding error, or KindInvalid for any other
// non-nil error.
func KindOf(err error) Kind {
	var pe *Error
	if errors.As(err, &pe) {
		return pe.Kind
	}
	return KindInvalid
}

func fieldErr(typ, field string, kind Kind, format string, args ...any) *Error {
	return &Error{Type: typ, Field: field, Kind: kind, Msg: fmt.Sprintf(format, args...)}
}

// jsonErr turns an encoding/json error into an *Error naming the field.
func jsonErr(typ string, b []byte, err error) *Error {
	var syn *json.SyntaxError
	var ute *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syn):
		return fieldErr(typ, "", KindSyntax, "invalid JSON: %s", syntaxMsg(syn.Error()))
	case errors.As(err, &ute):
		return fieldErr(typ, ute.Field, KindInvalid, "must be %s, got JSON %s", goTypeName(ute.Type.Kind().String()), jsonKind(ute.Value))
	}
	msg := err.Error()
	if name, ok := strings.CutPrefix(msg, "json: unknown field "); ok {
		name = strings.Trim(name, `"`)
		return fieldErr(typ, unknownPath(b, name), KindUnknownField, "unknown field")
	}
	if strings.Contains(msg, "unexpected EOF") || strings.Contains(msg, "EOF") {
		return fieldErr(typ, "", KindSyntax, "truncated JSON")
	}
	return fieldErr(typ, "", KindSyntax, "%s", strings.TrimPrefix(msg, "json: "))
}

func goTypeName(kind string) string {
	switch kind {
	case "float64", "float32", "int", "int64", "int32", "uint", "uint64":
		return "a number"
	case "bool":
		return "a boolean"
	case "string":
		return "a string"
	case "slice":
		return "an array"
	case "map", "struct", "ptr":
		return "an object"
	}
	return kind
}

// unknownPath finds where an unknown field sits: at the top or in "params"
// (the only nested objects of the wire types that are strict).
func unknownPath(b []byte, name string) string {
	var top map[string]json.RawMessage
	if json.Unmarshal(b, &top) != nil {
		return name
	}
	if _, ok := top[name]; ok {
		return name
	}
	for _, outer := range []string{"params", "result", "limits"} {
		var inner map[string]json.RawMessage
		if json.Unmarshal(top[outer], &inner) == nil {
			if _, ok := inner[name]; ok {
				return outer + "." + name
			}
		}
	}
	return name
}

// syntaxMsg keeps the decoder's reason and drops the echo of the payload
// that follows it (a log line must not carry a megabyte of input).
func syntaxMsg(m string) string {
	m = strings.TrimPrefix(m, "json: ")
	if i := strings.Index(m, ": "); i >= 0 {
		m = m[:i]
	}
	return m
}

// jsonKind names the JSON type of a value as the decoder reports it: either
// the type's name or the raw value.
func jsonKind(v string) string {
	t := strings.TrimSpace(v)
	if u, err := strconv.Unquote(t); err == nil && strings.HasPrefix(t, `"`) {
		t = strings.TrimSpace(u) // the decoder quotes the start of the raw value
	}
	if t == "" {
		return "value"
	}
	switch t[0] {
	case '"':
		return "string"
	case '{':
		return "object"
	case '[':
		return "array"
	case 't', 'f':
		if t == "true" || t == "false" || strings.HasPrefix(t, "true") || strings.HasPrefix(t, "false") {
			return "boolean"
		}
	case 'n':
		if strings.HasPrefix(t, "null") {
			return "null"
		}
	case '-', '0', '1', '2', '3', '4', '5', '6', '7', '8', '9':
		return "number"
	}
	return t // already a type name ("string", "number", ...)
}
