// Package schema checks JSON Schemas and the values they describe: the
// arguments of a body's actions (docs/actions.md). A schema
// comes from a config file, a body behind the bridge or a model's tool
// call, so it is untrusted: it may not load anything ($ref to another
// document fails), and a value is checked only against a schema that
// compiled.
//
// It wraps github.com/santhosh-tekuri/jsonschema/v6 (drafts 4 to 2020-12,
// the metaschema check included) rather than a checker of ours.
package schema

import (
	"bytes"
	"errors"
	"fmt"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"golang.org/x/text/language"
	"golang.org/x/text/message"
)

// english prints the checker's messages.
var english = message.NewPrinter(language.English)

// Schema is a compiled JSON Schema.
type Schema struct {
	s *jsonschema.Schema
}

// noLoader refuses every document a schema refers to: a schema is
// checked on its own.
type noLoader struct{}

func (noLoader) Load(url string) (any, error) {
	return nil, fmt.Errorf("a schema may not refer to another document (%s)", url)
}

// Compile checks that raw is a valid JSON Schema (draft 2020-12 unless
// its $schema names another) and compiles it.
func Compile(raw []byte) (*Schema, error) {
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return nil, fmt.Errorf("schema: not JSON: %w", err)
	}
	c := jsonschema.NewCompiler()
	c.UseLoader(noLoader{})
	const loc = "mem:///args.json"
	if err := c.AddResource(loc, doc); err != nil {
		return nil, fmt.Errorf("schema: %w", err)
	}
	s, err := c.Compile(loc)
	if err != nil {
		return nil, fmt.Errorf("schema: not a valid JSON Schema: %s", oneLine(err))
	}
	return &Schema{s: s}, nil
}

// Validate checks the JSON value raw against s; the error names what is
// wrong and where.
func (s *Schema) Validate(raw []byte) error {
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return fmt.Errorf("not JSON: %w", err)
	}
	if err := s.s.Validate(v); err != nil {
		var ve *jsonschema.ValidationError
		if errors.As(err, &ve) {
			return errors.New(detail(ve))
		}
		return err
	}
	return nil
}

// detail is the deepest causes of a validation error, each with the place
// in the value it is about, on one line.
func detail(ve *jsonschema.ValidationError) string {
	var out []string
	var walk func(e *jsonschema.ValidationError)
	walk = func(e *jsonschema.ValidationError) {
		if len(e.Causes) == 0 {
			at := "/" + strings.Join(e.InstanceLocation, "/")
			out = append(out, fmt.Sprintf("at %s: %s", at, e.ErrorKind.LocalizedString(english)))
			return
		}
		for _, c := range e.Causes {
			walk(c)
		}
	}
	walk(ve)
	if len(out) > 4 {
		out = append(out[:4], fmt.Sprintf("and %d more", len(out)-4))
	}
	return strings.Join(out, "; ")
}

func oneLine(err error) string {
	return strings.Join(strings.Fields(err.Error()), " ")
}
