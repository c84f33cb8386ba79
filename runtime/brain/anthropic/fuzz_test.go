package anthropic

import (
	"testing"

	"github.com/chorus-robotics/chorus/runtime/brain/llm/llmtest"
)

// FuzzDecodeResponse: no answer from the Messages API makes the decoder
// panic; what it accepts has a name for every tool use.
func FuzzDecodeResponse(f *testing.F) {
	f.Add([]byte(`{"id":"msg_1","type":"message","role":"assistant","content":[{"type":"text","text":"hi"}],"stop_reason":"end_turn"}`))
	f.Add([]byte(`{"type":"message","content":[{"type":"tool_use","id":"t1","name":"speak","input":{"message":"x"}}],"stop_reason":"tool_use"}`))
	f.Add([]byte(`{"type":"message","content":[],"stop_reason":"refusal"}`))
	f.Add([]byte(`{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`))
	f.Fuzz(func(t *testing.T, b []byte) { llmtest.CheckDecoded(t, DecodeResponse, b) })
}
