// Package schema checks JSON Schemas and the values they describe: the
// arguments of a body's actions (docs/actions.md). A schema
// comes from a config file, a body behind the bridge or a model's tool
// call, so it is untrusted: it may not refer to anything ($ref, to
// another document or within itself: a schema is written out whole),
// its types are JSON Schema's seven, it nests at most MaxDepth deep, and
// a value is checked only against a schema that compiled.
//
// It wraps github.com/google/jsonschema-go (draft 2020-12), which the
// MCP client links anyway, behind those checks of ours: on its own it
// overflows its stack on a schema that refers to itself and takes
// {"type":"nombre"} (BENCHMARKS.md, "Binary size").
package schema

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"
)

// MaxDepth bounds how deep a schema nests (objects and arrays).
const MaxDepth = 32

// Schema is a compiled JSON Schema.
type Schema struct {
	r *jsonschema.Resolved
}

var types = []string{"null", "boolean", "object", "array", "number", "string", "integer"}

// Compile checks that raw is a valid JSON Schema (draft 2020-12) that
// refers to nothing, and compiles it.
func Compile(raw []byte) (*Schema, error) {
	var doc any
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	if err := d.Decode(&doc); err != nil {
		return nil, fmt.Errorf("schema: not JSON: %w", err)
	}
	if d.More() {
		return nil, errors.New("schema: not JSON: more after the schema")
	}
	if err := check(doc, 0); err != nil {
		return nil, fmt.Errorf("schema: not a valid JSON Schema: %w", err)
	}
	var s jsonschema.Schema
	if err := json.Unmarshal(raw, &s); err != nil {
		return nil, fmt.Errorf("schema: not a valid JSON Schema: %s", oneLine(err))
	}
	r, err := s.Resolve(&jsonschema.ResolveOptions{ValidateDefaults: false})
	if err != nil {
		return nil, fmt.Errorf("schema: not a valid JSON Schema: %s", oneLine(err))
	}
	return &Schema{r: r}, nil
}

// Check reports whether raw is a schema Compile takes (an MCP server's
// tool's arguments, checked as a body's actions are).
func Check(raw []byte) error {
	_, err := Compile(raw)
	return err
}

// check walks a schema before the library sees it — its subschemas, not
// the names of its properties nor the values of enum, const, default and
// examples (data) — refusing references, unknown types, a multipleOf that
// is not above 0, and nesting deeper than MaxDepth schemas.
func check(v any, depth int) error {
	if depth > MaxDepth {
		return fmt.Errorf("nested deeper than %d schemas", MaxDepth)
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil // true, false: schemas too; anything else the library refuses
	}
	for k, sub := range m {
		var err error
		switch k {
		case "$ref", "$dynamicRef", "$recursiveRef", "$id", "$anchor", "$dynamicAnchor", "$schema":
			err = fmt.Errorf("%s: a schema may not refer to another document, nor to a part of itself: write it out whole", k)
		case "type":
			err = checkType(sub)
		case "multipleOf":
			if n, isNum := sub.(json.Number); isNum {
				if f, ferr := n.Float64(); ferr != nil || f <= 0 {
					err = fmt.Errorf("multipleOf: must be above 0, got %s", n)
				}
			}
		case "properties", "patternProperties", "$defs", "definitions", "dependentSchemas":
			if named, isMap := sub.(map[string]any); isMap {
				for _, s := range named {
					if err = check(s, depth+1); err != nil {
						break
					}
				}
			}
		case "allOf", "anyOf", "oneOf", "prefixItems", "items":
			if list, isList := sub.([]any); isList {
				for _, s := range list {
					if err = check(s, depth+1); err != nil {
						break
					}
				}
			} else {
				err = check(sub, depth+1)
			}
		case "additionalProperties", "additionalItems", "not", "if", "then", "else", "contains",
			"propertyNames", "unevaluatedItems", "unevaluatedProperties":
			err = check(sub, depth+1)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

func checkType(v any) error {
	names, ok := v.([]any)
	if !ok {
		names = []any{v}
	}
	for _, n := range names {
		s, ok := n.(string)
		if !ok || !slices.Contains(types, s) {
			return fmt.Errorf("type: %v is not one of %s", n, strings.Join(types, ", "))
		}
	}
	return nil
}

// Validate checks the JSON value raw against s; the error names what is
// wrong and where.
func (s *Schema) Validate(raw []byte) error {
	var v any
	d := json.NewDecoder(bytes.NewReader(raw))
	if err := d.Decode(&v); err != nil {
		return fmt.Errorf("not JSON: %w", err)
	}
	if d.More() {
		return errors.New("not JSON: more after the value")
	}
	if err := s.r.Validate(v); err != nil {
		return errors.New(detail(err))
	}
	return nil
}

// detail is the checker's error on one line, with the place in the value
// it is about ("at /angle: maximum: 100 exceeds 90"): the checker names
// the place in the schema ("validating root: validating
// /properties/angle: …").
func detail(err error) string {
	msg, at := oneLine(err), "/"
	for {
		rest, ok := strings.CutPrefix(msg, "validating ")
		if !ok {
			break
		}
		path, after, ok := strings.Cut(rest, ": ")
		if !ok {
			break
		}
		if path != "root" {
			at = strings.ReplaceAll(path, "/properties/", "/")
		}
		msg = after
	}
	return "at " + at + ": " + msg
}

func oneLine(err error) string {
	return strings.Join(strings.Fields(err.Error()), " ")
}
