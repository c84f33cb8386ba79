package llmtest

import (
	"testing"

	"github.com/chorus-robotics/chorus/runtime/brain/llm"
)

// FuzzDecoder fuzzes a provider's decoder of its API's answers (after the
// test's f.Add seeds): no input makes it panic, and what it accepts names
// every tool call and gives its arguments. call is what the API calls a
// tool call ("tool use"), for the failure.
func FuzzDecoder(f *testing.F, decode func([]byte) (llm.Response, error), call string) {
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := decode(b)
		if err != nil {
			return
		}
		for _, c := range r.ToolCalls {
			if c.Name == "" || len(c.Args) == 0 {
				t.Fatalf("accepted a %s %+v", call, c)
			}
		}
	})
}
