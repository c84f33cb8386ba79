package anthropic

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/chorus-robotics/chorus/runtime/brain/llm"
)

// The state answer's schema reaches the API with the vote's fields before
// the draft and the draft's message before its emotion (issue 40), as the model is to
// write them (issue 28), its bounds still moved into descriptions.
func TestSchemaOrderOnTheWire(t *testing.T) {
	r := llm.Request{Turns: []llm.Turn{{Role: llm.User, Text: "hi"}}, Schema: llm.StateSchema(true, "en"), SchemaName: "companion_state",
		Tools: []llm.ToolDef{llm.SpeakTool("en")}}
	req, _ := New(Config{Model: "m"}).request(r)
	b, err := json.Marshal(req) // as modelhttp sends it
	if err != nil {
		t.Fatal(err)
	}
	wire := string(b)
	schema := wire[strings.Index(wire, `"output_config"`):]
	tools := wire[strings.Index(wire, `"tools"`):strings.Index(wire, `"output_config"`)]
	at := 0
	for _, f := range []string{`"state"`, `"importance"`, `"closing"`, `"draft":`, `"message":`, `"emotion":`, `"to":`} {
		i := strings.Index(schema[at:], f)
		if i < 0 {
			t.Fatalf("%s is not after the fields before it: %s", f, schema)
		}
		at += i + len(f)
	}
	if !strings.Contains(schema, "(maximum 10, minimum 0)") && !strings.Contains(schema, "(minimum 0, maximum 10)") || strings.Contains(schema, `"maximum"`) {
		t.Errorf("importance's bounds are not in its description: %s", schema)
	}
	if e, m := strings.Index(tools, `"emotion":`), strings.Index(tools, `"message":`); m < 0 || e < m {
		t.Errorf("the speak tool's parameters are not in order: %s", tools)
	}
}
