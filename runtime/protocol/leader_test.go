package protocol

import "testing"

// The leader claim joins the golden cases (testdata/leader) and the
// fuzzers from its own file.
func init() {
	decoders["leader"] = func(b []byte) (any, error) { return DecodeLeaderClaim(b, 0) }
}

func FuzzDecodeLeaderClaim(f *testing.F) { fuzzDecoder(f, "leader") }
