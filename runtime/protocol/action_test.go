package protocol

import "testing"

func init() {
	decoders["action"] = func(b []byte) (any, error) { return DecodeActionRequest(b, 0) }
	decoders["action-result"] = func(b []byte) (any, error) { return DecodeActionResult(b, 0) }
	decoders["action-defs"] = func(b []byte) (any, error) { return DecodeActionDefs(b, 0) }
}

func FuzzDecodeActionRequest(f *testing.F) { fuzzDecoder(f, "action") }
func FuzzDecodeActionResult(f *testing.F)  { fuzzDecoder(f, "action-result") }
func FuzzDecodeActionDefs(f *testing.F)    { fuzzDecoder(f, "action-defs") }
