package protocol

import (
	"encoding/json"
	"strings"
	"testing"
)

func init() {
	decoders["action"] = func(b []byte) (any, error) { return DecodeActionRequest(b, 0) }
	decoders["action-result"] = func(b []byte) (any, error) { return DecodeActionResult(b, 0) }
	decoders["action-defs"] = func(b []byte) (any, error) { return DecodeActionDefs(b, 0) }
}

func FuzzDecodeActionRequest(f *testing.F) { fuzzDecoder(f, "action") }
func FuzzDecodeActionResult(f *testing.F)  { fuzzDecoder(f, "action-result") }
func FuzzDecodeActionDefs(f *testing.F)    { fuzzDecoder(f, "action-defs") }

// What a model passes as an action's arguments is checked as the wire's
// are: a JSON object, whole and valid (a decoded query always is; a
// model's tool call may be anything).
func TestActionRequestArgs(t *testing.T) {
	for _, tt := range []struct {
		args string
		ok   bool
	}{
		{``, true}, {`null`, true}, {`{}`, true}, {` {"angle": 5} `, true},
		{`[1]`, false}, {`"x"`, false}, {`42`, false}, {`{not json`, false}, {`{"a":1} trailing`, false}, {`{"a":1}{}`, false},
	} {
		err := ActionRequest{Name: "nod", Args: json.RawMessage(tt.args)}.Validate()
		if (err == nil) != tt.ok {
			t.Errorf("args %q: %v", tt.args, err)
		}
		if err != nil && !strings.Contains(err.Error(), "args") {
			t.Errorf("args %q: the error does not name args: %v", tt.args, err)
		}
	}
}
