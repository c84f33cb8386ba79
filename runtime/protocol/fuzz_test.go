package protocol

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

// fuzzDecoder checks that a decoder never panics, and that whatever it
// accepts re-encodes to a payload it accepts again, unchanged.
func fuzzDecoder(f *testing.F, typ string) {
	decode := decoders[typ]
	files, _ := filepath.Glob(filepath.Join("testdata", typ, "*.json"))
	for _, p := range files {
		if b, err := os.ReadFile(p); err == nil {
			f.Add(b)
		}
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		v, err := decode(in)
		if err != nil {
			if KindOf(err) == "" {
				t.Fatalf("error without a kind: %v", err)
			}
			return
		}
		b1, err := json.Marshal(v)
		if err != nil {
			t.Fatalf("accepted value does not encode: %v", err)
		}
		v2, err := decode(b1)
		if err != nil {
			t.Fatalf("re-encoded value rejected: %v\ninput: %q\nre-encoded: %s", err, in, b1)
		}
		b2, _ := json.Marshal(v2)
		if !bytes.Equal(b1, b2) {
			t.Fatalf("round trip changed the value:\n%s\n%s", b1, b2)
		}
	})
}

func FuzzDecodeMessage(f *testing.F)      { fuzzDecoder(f, "message") }
func FuzzDecodeState(f *testing.F)        { fuzzDecoder(f, "state") }
func FuzzDecodeTurnGrant(f *testing.F)    { fuzzDecoder(f, "grant") }
func FuzzDecodePresence(f *testing.F)     { fuzzDecoder(f, "presence") }
func FuzzDecodeQuery(f *testing.F)        { fuzzDecoder(f, "query") }
func FuzzDecodeQueryResult(f *testing.F)  { fuzzDecoder(f, "result") }
func FuzzDecodePhase(f *testing.F)        { fuzzDecoder(f, "phase") }
func FuzzDecodePost(f *testing.F)         { fuzzDecoder(f, "post") }
func FuzzDecodePostAck(f *testing.F)      { fuzzDecoder(f, "postack") }
func FuzzDecodeHold(f *testing.F)         { fuzzDecoder(f, "hold") }
func FuzzDecodeSpeaking(f *testing.F)     { fuzzDecoder(f, "speaking") }
func FuzzDecodeHeard(f *testing.F)        { fuzzDecoder(f, "heard") }
func FuzzDecodeForgot(f *testing.F)       { fuzzDecoder(f, "forgot") }
func FuzzDecodeShared(f *testing.F)       { fuzzDecoder(f, "shared") }
func FuzzDecodeForgetLog(f *testing.F)    { fuzzDecoder(f, "forget-log") }
func FuzzDecodeMemory(f *testing.F)       { fuzzDecoder(f, "memory") }
func FuzzDecodeMemoryAnswer(f *testing.F) { fuzzDecoder(f, "memory-answer") }

// FuzzQueryIDOf: reading the id of a bad query never panics, and what it
// returns is always a valid id.
func FuzzQueryIDOf(f *testing.F) {
	files, _ := filepath.Glob(filepath.Join("testdata", "query", "*.json"))
	for _, p := range files {
		if b, err := os.ReadFile(p); err == nil {
			f.Add(b)
		}
	}
	f.Add([]byte(`{"id":"x","params":{"body":{"big":"` + string(bytes.Repeat([]byte("a"), 1000)) + `"}}}`))
	f.Fuzz(func(t *testing.T, in []byte) {
		id := QueryIDOf(in)
		if id == "" {
			return
		}
		c := checker{typ: "query"}
		c.id("id", id)
		if c.err != nil {
			t.Fatalf("QueryIDOf returned an invalid id %q: %v", id, c.err)
		}
	})
}
