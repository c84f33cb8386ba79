package bridge

import (
	"encoding/json"
	"errors"
	"testing"
)

// FuzzParseFrame feeds the bridge's frame reader anything a client could
// send: it never panics, a frame it accepts is a JSON object of a kind the
// bridge acts on, and a refusal names a counted reason.
func FuzzParseFrame(f *testing.F) {
	for _, s := range []string{
		`{"jsonrpc":"2.0","method":"message.send","params":{"id":"m1","from":"alice","message":"hi"}}`,
		`{"jsonrpc":"2.0","id":"q1","result":{"success":true,"body":{}}}`,
		`{"jsonrpc":"2.0","id":"q1","error":"no camera"}`,
		`{"jsonrpc":"2.0","method":"camera.get","id":"c1","params":{"device":"cam"}}`,
		`{"jsonrpc":"2.0","method":"memory","id":"m1","params":{"device":"cam","op":"list","person":"alice"}}`,
		`{"jsonrpc":"2.0","method":"actions.declare","id":"d1","params":{"actions":[{"name":"wave","description":"Wave","schema":{"type":"object"}}],"delivery":"notify"}}`,
		`{"topic":"queries","body":{"jsonrpc":"2.0","method":"actions.declare","id":2,"params":{"actions":[]}}}`,
		`{"topic":"queries","body":{"method":"actions.declare","result":{}}}`,
		`{"topic":"messages","body":{"jsonrpc":"2.0","method":"message.send","params":{}}}`,
		`{"topic":"states","body":{}}`,
		`{"method":"state.send"}`,
		`{}`, `[]`, `null`, `"x"`, `{"id":{"deep":[1,2,3]}}`, `{"body":null,"topic":""}`, `{"id":12,"method":"x"}`,
		"{\"method\":\"message.send\",\"params\":{\"message\":\"\xff\xfe\"}}", `[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]`,
	} {
		f.Add([]byte(s))
	}
	reasons := map[string]bool{"not_json": true, "forbidden": true, "invalid": true}
	f.Fuzz(func(t *testing.T, data []byte) {
		in, err := parseFrame(data)
		var fe *frameError
		switch {
		case err == nil:
			if in.kind != "message" && in.kind != "result" && in.kind != "camera" && in.kind != "memory" && in.kind != "declare" {
				t.Fatalf("accepted a frame of kind %q", in.kind)
			}
			var obj map[string]json.RawMessage
			if json.Unmarshal(in.data, &obj) != nil {
				t.Fatalf("accepted %q, which is not a JSON object", in.data)
			}
		case errors.As(err, &fe):
			if !reasons[fe.reason] || fe.msg == "" {
				t.Fatalf("refused with reason %q, message %q", fe.reason, fe.msg)
			}
		default:
			t.Fatalf("an error that names no reason: %v", err)
		}
		var answer map[string]any // an answer to any frame is JSON, its id a string, a number or null
		if err := json.Unmarshal(errorFrame(in.rid, "invalid", "x"), &answer); err != nil {
			t.Fatalf("the answer to %q is not JSON: %v", data, err)
		}
		switch answer["id"].(type) {
		case nil, string, float64:
		default:
			t.Fatalf("an answer id %v", answer["id"])
		}
	})
}
