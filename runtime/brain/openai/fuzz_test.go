package openai

import (
	"testing"

	"github.com/chorus-robotics/chorus/runtime/brain/llm/llmtest"
)

// FuzzDecodeResponse: no answer from a model server makes the decoder
// panic; what it accepts has a name for every tool call.
func FuzzDecodeResponse(f *testing.F) {
	f.Add([]byte(`{"id":"x","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"hi","refusal":null},"finish_reason":"stop"}]}`))
	f.Add([]byte(`{"choices":[{"message":{"content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"vision","arguments":"{}"}}]},"finish_reason":"tool_calls"}]}`))
	f.Add([]byte(`{"choices":[]}`))
	f.Add([]byte(`{"choices":[{"message":{"refusal":"no"},"finish_reason":"length"}]}`))
	f.Fuzz(func(t *testing.T, b []byte) { llmtest.CheckDecoded(t, DecodeResponse, b) })
}
