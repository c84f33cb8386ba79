package schema

import (
	"strings"
	"testing"
)

func TestCompile(t *testing.T) {
	cases := []struct {
		name, schema, want string // want: "" compiles, else a part of the error
	}{
		{"object", `{"type":"object","properties":{"angle":{"type":"number","minimum":-90,"maximum":90}},"additionalProperties":false}`, ""},
		{"empty object schema", `{}`, ""},
		{"not json", `{"type":`, "not JSON"},
		{"unknown type", `{"type":"objekt"}`, "not a valid JSON Schema"},
		{"bad minimum", `{"type":"object","properties":{"a":{"type":"number","minimum":"low"}}}`, "not a valid JSON Schema"},
		{"remote ref", `{"$ref":"https://example.com/s.json"}`, "not a valid JSON Schema"},
		{"file ref", `{"$ref":"file:///etc/passwd"}`, "not a valid JSON Schema"},
		{"bad pattern", `{"type":"string","pattern":"("}`, "not a valid JSON Schema"},
		{"a property named type", `{"type":"object","properties":{"type":{"enum":["wave","salute"]},"$id":{"type":"string"}}}`, ""},
		{"data that looks like a schema", `{"enum":[{"type":"big"},{"$ref":"x"}],"const":{"type":1},"default":{"$id":"y"}}`, ""},
		{"a reference inside", `{"type":"object","properties":{"a":{"$ref":"#/$defs/a"}}}`, "may not refer"},
		{"an unknown type inside", `{"type":"array","items":{"type":"nombre"}}`, "type: nombre is not one of"},
		{"multipleOf 0", `{"type":"number","multipleOf":0}`, "multipleOf: must be above 0"},
		{"multipleOf below 0", `{"type":"number","multipleOf":-2}`, "multipleOf: must be above 0"},
		{"32 schemas deep", `{"type":"object","properties":{"a":` + strings.Repeat(`{"type":"object","properties":{"a":`, 30) + `{}` + strings.Repeat("}}", 30) + `}}`, ""},
		{"too deep", strings.Repeat(`{"not":`, 40) + `{}` + strings.Repeat("}", 40), "nested deeper than 32"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Compile([]byte(c.schema))
			wantErr(t, "Compile", err, c.want)
		})
	}
}

// wantErr fails the test unless err is nil where want is "", or else an
// error that says want; what names the call.
func wantErr(t *testing.T, what string, err error, want string) {
	t.Helper()
	switch {
	case want == "" && err != nil:
		t.Fatalf("%s: %v", what, err)
	case want != "" && (err == nil || !strings.Contains(err.Error(), want)):
		t.Fatalf("%s: got %v, want an error with %q", what, err, want)
	}
}

func TestValidate(t *testing.T) {
	s, err := Compile([]byte(`{"type":"object","properties":{"angle":{"type":"number","minimum":-90,"maximum":90},"speed":{"enum":["slow","fast"]}},"required":["angle"],"additionalProperties":false}`))
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name, args, want string
	}{
		{"ok", `{"angle": 30}`, ""},
		{"ok enum", `{"angle": -90, "speed": "slow"}`, ""},
		{"missing", `{}`, "angle"},
		{"too big", `{"angle": 1e308}`, "/angle"},
		{"string", `{"angle": "NaN"}`, "/angle"},
		{"extra", `{"angle": 1, "force": 9}`, "force"},
		{"enum", `{"angle": 1, "speed": "warp"}`, "/speed"},
		{"not json", `{"angle": NaN}`, "not JSON"},
		{"array", `[1]`, "object"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := s.Validate([]byte(c.args))
			wantErr(t, "Validate", err, c.want)
		})
	}
}

func FuzzCompileValidate(f *testing.F) {
	f.Add([]byte(`{"type":"object","properties":{"a":{"type":"number"}}}`), []byte(`{"a":1}`))
	f.Add([]byte(`{"$ref":"#/$defs/x","$defs":{"x":{"$ref":"#/$defs/x"}}}`), []byte(`{}`))
	f.Add([]byte(`{"type":"string","pattern":"^(a+)+$"}`), []byte(`"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa!"`))
	f.Fuzz(func(t *testing.T, schema, value []byte) {
		s, err := Compile(schema)
		if err != nil {
			return
		}
		_ = s.Validate(value)
	})
}
