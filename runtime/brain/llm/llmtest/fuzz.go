package llmtest

import (
	"bytes"
	"errors"

	"github.com/chorus-robotics/chorus/runtime/brain/llm"
	"github.com/chorus-robotics/chorus/runtime/modelhttp"
)

// Fataler is the part of a *testing.T a check fails (this package is
// also built into benchmarks, which do not import testing).
type Fataler interface {
	Fatalf(format string, args ...any)
}

// CheckDecoded is a provider's fuzz target's body: decode b with decode;
// nothing may make it panic, and what it accepts names every tool call
// and gives its arguments.
func CheckDecoded(t Fataler, decode func([]byte) (llm.Response, error), b []byte) {
	r, err := decode(b)
	if err != nil {
		return
	}
	for _, c := range r.ToolCalls {
		if c.Name == "" || len(c.Args) == 0 {
			t.Fatalf("accepted a tool call %+v", c)
		}
	}
}

// Streamed decodes a stream as a provider's assembler does: each line of
// b is one event's data, handed to add; done is the answer at the end.
func Streamed(add func([]byte) (string, error), done func() (llm.Response, error)) func([]byte) (llm.Response, error) {
	return func(b []byte) (llm.Response, error) {
		for _, line := range bytes.Split(b, []byte("\n")) {
			if _, err := add(line); errors.Is(err, modelhttp.ErrEnd) {
				break
			} else if err != nil {
				return llm.Response{}, err
			}
		}
		return done()
	}
}
