package openai

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/chorus-robotics/chorus/runtime/brain/llm"
	"github.com/chorus-robotics/chorus/runtime/brain/llm/llmtest"
)

// The state answer's schema reaches the API with the vote's fields before
// the draft and the draft's message before its emotion (issue 40), as the model is to
// write them (issue 28): in the schema of json_schema mode, in the system
// prompt of JSON mode, and in the speak tool's parameters.
func TestSchemaOrderOnTheWire(t *testing.T) {
	vote := []string{`"state":`, `"importance":`, `"closing":`, `"draft":`, `"message":`, `"emotion":`, `"to":`}
	r := llm.Request{Turns: []llm.Turn{{Role: llm.User, Text: "hi"}}, Schema: llm.StateSchema(true, "en"), SchemaName: "companion_state",
		Tools: []llm.ToolDef{llm.SpeakTool("en")}}
	for _, jsonMode := range []bool{false, true} {
		req, _ := New(Config{Model: "m", JSONMode: jsonMode}).request(r)
		b, err := json.Marshal(req) // as modelhttp sends it
		if err != nil {
			t.Fatal(err)
		}
		wire := string(b)
		var schema string
		if jsonMode {
			var sent struct{ Messages []struct{ Content any } }
			if err := json.Unmarshal(b, &sent); err != nil {
				t.Fatal(err)
			}
			schema = sent.Messages[0].Content.(string)
		} else {
			schema = wire[strings.Index(wire, `"response_format"`):strings.Index(wire, `"tools"`)]
		}
		if !llmtest.InOrder(schema, vote...) {
			t.Errorf("json mode %v: the schema is not in the vote's order: %s", jsonMode, schema)
		}
		tools := wire[strings.Index(wire, `"tools"`):]
		if !llmtest.InOrder(tools, `"message":`, `"emotion":`, `"to":`) {
			t.Errorf("json mode %v: the speak tool's parameters are not in order: %s", jsonMode, tools)
		}
	}
}
