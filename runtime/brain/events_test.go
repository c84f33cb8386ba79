package brain

import (
	"fmt"
	"maps"
	"reflect"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// aikyoCard is aikyo's example card's events, written in YAML.
const aikyoCard = `
id: kyoko
name: Kyoko
language: en
role: You greet the people who come to the café and talk with them.
knowledge: [companions_present, date_time]
events:
  params:
    title: What you judge
    description: Fill in each by its description
    type: object
    properties:
      need_response: {type: boolean, description: "Does the message need an answer from me?"}
      mood: {type: string, enum: [happy, sad, neutral], description: "The speaker's mood"}
      topic: {type: string, description: "What the message is about"}
      count: {type: integer, minimum: 0, maximum: 10, description: "How many questions it asks"}
    required: [need_response, mood]
  conditions:
    - expression: already_replied == false
      instruction: Introduce yourself.
    - expression: need_response === true && mood == "sad"
      instruction: Comfort them.
    - expression: need_response === true
      instruction: Answer the question.
`

func loadCard(t *testing.T, src string) Card {
	t.Helper()
	var c Card
	dec := yaml.NewDecoder(strings.NewReader(src))
	dec.KnownFields(true)
	if err := dec.Decode(&c); err != nil {
		t.Fatal(err)
	}
	return c
}

func TestCardFromYAML(t *testing.T) {
	c := loadCard(t, aikyoCard)
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	if c.Role == "" || len(c.Knowledge) != 2 || len(c.Events.Conditions) != 3 {
		t.Fatalf("card %+v", c)
	}
	if got := fmt.Sprint(c.Events.ParamNames()); got != "[count mood need_response topic]" {
		t.Errorf("params %s", got)
	}
}

func TestCardValidateNamesTheField(t *testing.T) {
	for _, c := range []struct {
		edit func(*Card)
		want string
	}{
		{func(c *Card) { c.Events.Params["type"] = "array" }, "card.events.params.type"},
		{func(c *Card) { c.Events.Params["oneOf"] = []any{} }, "card.events.params.oneOf"},
		{func(c *Card) { c.Events.Params["properties"] = map[string]any{} }, "card.events.params.properties"},
		{func(c *Card) { c.Events.Params["required"] = []any{"nope"} }, "card.events.params.required[0]"},
		{func(c *Card) { prop(c, "mood")["type"] = "array" }, "card.events.params.properties.mood.type"},
		{func(c *Card) { prop(c, "mood")["items"] = "x" }, "card.events.params.properties.mood.items"},
		{func(c *Card) { delete(prop(c, "mood"), "description") }, "card.events.params.properties.mood.description"},
		{func(c *Card) { prop(c, "mood")["enum"] = []any{1} }, "card.events.params.properties.mood.enum[0]"},
		{func(c *Card) { prop(c, "need_response")["enum"] = []any{"a"} }, "card.events.params.properties.need_response.enum"},
		{func(c *Card) { prop(c, "count")["minimum"] = "low" }, "card.events.params.properties.count.minimum"},
		{func(c *Card) {
			c.Events.Params["properties"].(map[string]any)["2bad"] = map[string]any{"type": "boolean", "description": "x"}
		}, "card.events.params.properties.2bad"},
		{func(c *Card) {
			props := c.Events.Params["properties"].(map[string]any)
			for i := range MaxParams {
				props[fmt.Sprintf("p%d", i)] = map[string]any{"type": "boolean", "description": "x"}
			}
		}, "card.events.params.properties: at most 16"},
		{func(c *Card) { c.Events.Conditions[1].Expression = "need_response ==" }, "card.events.conditions[1].expression"},
		{func(c *Card) { c.Events.Conditions[2].Expression = "undeclared == 1" }, "card.events.conditions[2].expression: \"undeclared\""},
		{func(c *Card) { c.Events.Conditions[0].Instruction = "  " }, "card.events.conditions[0].instruction"},
		{func(c *Card) {
			for range MaxConditions {
				c.Events.Conditions = append(c.Events.Conditions, c.Events.Conditions[0])
			}
		}, "card.events.conditions: at most 16"},
		{func(c *Card) { c.Events.Params = nil }, "card.events.params: required with conditions"},
		{func(c *Card) { c.Knowledge = []string{"ok", "not ok"} }, "card.knowledge[1]"},
		{func(c *Card) {
			c.Events.Params["properties"].(map[string]any)["in"] = map[string]any{"type": "boolean", "description": "x"}
		}, "card.events.params.properties.in"},
		{func(c *Card) { c.Role = strings.Repeat("r", MaxRole+1) }, "card.role"},
	} {
		card := loadCard(t, aikyoCard)
		c.edit(&card)
		err := card.Validate()
		if err == nil || !strings.HasPrefix(err.Error(), c.want) {
			t.Errorf("want an error naming %s, got %v", c.want, err)
		}
	}
	if err := (Card{ID: "a", Name: "A", Language: "en"}).Validate(); err != nil {
		t.Errorf("a card without events: %v", err)
	}
}

func prop(c *Card, name string) map[string]any {
	return c.Events.Params["properties"].(map[string]any)[name].(map[string]any)
}

func TestEventsCheck(t *testing.T) {
	e := loadCard(t, aikyoCard).Events
	kept, dropped := e.Check(map[string]any{
		"need_response": true, "mood": "sad", "topic": "tea", "count": 2.0,
		"unknown": true,
	})
	if dropped != 1 || len(kept) != 4 {
		t.Errorf("kept %v, dropped %d", kept, dropped)
	}
	for _, bad := range []map[string]any{
		{"need_response": "yes"}, {"mood": "angry"}, {"mood": 1}, {"topic": false},
		{"count": 1.5}, {"count": 11.0}, {"count": -1.0}, {"count": "2"}, {"need_response": nil},
	} {
		if kept, dropped := e.Check(bad); dropped != 1 || len(kept) != 0 {
			t.Errorf("%v: kept %v, dropped %d", bad, kept, dropped)
		}
	}
}

func TestInstructionAndSettle(t *testing.T) {
	e := loadCard(t, aikyoCard).Events
	for _, c := range []struct {
		values map[string]any
		want   string
	}{
		{map[string]any{"already_replied": false, "need_response": true, "mood": "sad"}, "Introduce yourself."},
		{map[string]any{"already_replied": true, "need_response": true, "mood": "sad"}, "Comfort them."},
		{map[string]any{"already_replied": true, "need_response": true, "mood": "happy"}, "Answer the question."},
		{map[string]any{"already_replied": true, "need_response": false, "mood": "happy"}, ""},
		{map[string]any{"need_response": true, "mood": "happy"}, "Answer the question."}, // already_replied unknown: that condition does not hold
		{nil, ""},
	} {
		if got := e.Instruction(c.values); got != c.want {
			t.Errorf("Instruction(%v) = %q, want %q", c.values, got, c.want)
		}
	}

	instr, settled, open := e.Settle(map[string]any{"already_replied": false})
	if instr != "Introduce yourself." || !settled || open != nil {
		t.Errorf("known false: %q %v %v", instr, settled, open)
	}
	instr, settled, open = e.Settle(map[string]any{"already_replied": true})
	if instr != "" || settled || len(open) != 2 {
		t.Errorf("known true: %q %v %v", instr, settled, open)
	}
	_, settled, open = e.Settle(nil)
	if settled || len(open) != 3 {
		t.Errorf("nothing known: %v %v", settled, open)
	}
	// A known condition that holds after open ones ends the list as "true".
	e.Conditions = append(e.Conditions[1:], Condition{Expression: "!already_replied", Instruction: "Hello."}, Condition{Expression: "true", Instruction: "never"})
	_, settled, open = e.Settle(map[string]any{"already_replied": false})
	if settled || len(open) != 3 || !reflect.DeepEqual(open[2], Condition{Expression: "true", Instruction: "Hello."}) {
		t.Errorf("known last: %v %v", settled, open)
	}
	e.Conditions = nil
	if instr, settled, open := e.Settle(map[string]any{"x": 1}); instr != "" || !settled || open != nil {
		t.Errorf("no conditions: %q %v %v", instr, settled, open)
	}
}

// celCard is a card in the shape of aikyo's, whose conditions are CEL as
// cel-js evaluates them: in, size(), +.
const celCard = `
id: aya
name: Aya
language: en
events:
  params:
    type: object
    properties:
      mood: {type: string, enum: [happy, sad, angry], description: "The speaker's mood"}
      topic: {type: string, description: "What the message is about"}
      questions: {type: integer, description: "How many questions it asks"}
  conditions:
    - expression: already_replied == false
      instruction: Introduce yourself.
    - expression: mood in ["sad", "angry"] && size(topic) > 0
      instruction: Comfort them.
    - expression: questions + 1 > 1 || topic.size() >= 20
      instruction: Answer.
    - expression: "true"
      instruction: Go on with the conversation.
`

func TestCELCard(t *testing.T) {
	c := loadCard(t, celCard)
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	for _, v := range []struct {
		values map[string]any
		want   string
	}{
		{map[string]any{"already_replied": false}, "Introduce yourself."},
		{map[string]any{"already_replied": true, "mood": "angry", "topic": "the bus", "questions": 0.0}, "Comfort them."},
		{map[string]any{"already_replied": true, "mood": "sad", "topic": "", "questions": 1.0}, "Answer."},
		{map[string]any{"already_replied": true, "mood": "happy", "topic": "the weather in Tokyo", "questions": 0.0}, "Answer."},
		{map[string]any{"already_replied": true, "mood": "happy", "topic": "x", "questions": 0.0}, "Go on with the conversation."},
		{map[string]any{"already_replied": true, "mood": true, "topic": 1.0}, "Go on with the conversation."}, // wrong types: those conditions do not hold
	} {
		if got := c.Events.Instruction(v.values); got != v.want {
			t.Errorf("Instruction(%v) = %q, want %q", v.values, got, v.want)
		}
	}
	// What is outside the subset is named where the card says it.
	c.Events.Conditions[2].Expression = "questions * 2 > 1"
	if err := c.Validate(); err == nil || !strings.Contains(err.Error(), "card.events.conditions[2].expression") || !strings.Contains(err.Error(), "multiplication is not in the subset") {
		t.Errorf("got %v", err)
	}
	// A field's root is the parameter it names; a parameter has no fields.
	c.Events.Conditions[2].Expression = "mood.value == 1"
	if err := c.Validate(); err == nil || !strings.Contains(err.Error(), "mood is a string parameter: it has no fields") {
		t.Errorf("a field of a string parameter: %v", err)
	}
	c.Events.Conditions[2].Expression = "other.value == 1"
	if err := c.Validate(); err == nil || !strings.Contains(err.Error(), `"other" is not a parameter`) {
		t.Errorf("a field of an undeclared name: %v", err)
	}
}

func TestMerge(t *testing.T) {
	got := Merge(map[string]any{"a": 1, "already_replied": false}, map[string]any{"already_replied": true})
	if !maps.Equal(got, map[string]any{"a": 1, "already_replied": true}) {
		t.Errorf("merge %v", got)
	}
	if Merge(nil, nil) != nil {
		t.Error("nothing merged is not nil")
	}
}

func TestConditionExecute(t *testing.T) {
	params := map[string]any{"type": "object", "properties": map[string]any{
		"room": map[string]any{"type": "string", "description": "Which room?"}}}
	for _, tc := range []struct {
		name string
		c    Condition
		want string // "" valid, else a part of the error
	}{
		{"tools only", Condition{Expression: "room == 'kitchen'", Execute: []Execute{{Tool: "ha_HassTurnOn", Args: map[string]any{"area": "${room}"}}}}, ""},
		{"a known event", Condition{Expression: "true", Execute: []Execute{{Tool: "nod", Args: map[string]any{"again": "${already_replied}"}}}}, ""},
		{"neither", Condition{Expression: "true"}, "instruction: must not be empty (or the condition executes tools)"},
		{"a bad name", Condition{Expression: "true", Execute: []Execute{{Tool: "turn on"}}}, `execute[0].tool: a tool's name is 1 to 64 letters`},
		{"an unknown value", Condition{Expression: "true", Execute: []Execute{{Tool: "nod", Args: map[string]any{"x": "${mood}"}}}}, "execute[0].args.x: ${mood} is not a parameter"},
		{"an unknown value deep inside", Condition{Expression: "true", Execute: []Execute{{Tool: "nod", Args: map[string]any{"where": map[string]any{"rooms": []any{"${aera}"}}}}}}, "execute[0].args.where: ${aera} is not a parameter"},
		{"too many", Condition{Expression: "true", Execute: make([]Execute, MaxExecute+1)}, "execute: at most 8 tools"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := Events{Params: params, Conditions: []Condition{tc.c}}.Validate()
			switch {
			case tc.want == "" && err != nil:
				t.Fatal(err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("got %v, want %q", err, tc.want)
			}
		})
	}
	c := Condition{Execute: []Execute{{Tool: "a", Args: map[string]any{"area": "${room}", "name": "heater", "n": 2}}, {Tool: "b", Args: map[string]any{"x": "${mood}"}},
		{Tool: "c", Args: map[string]any{"target": map[string]any{"area": []any{"${room}", "${mood}", "hall"}}}}}}
	calls := c.Calls(map[string]any{"room": "Kitchen"})
	if len(calls) != 3 || string(calls[0].Args) != `{"area":"Kitchen","n":2,"name":"heater"}` || string(calls[1].Args) != `{}` ||
		string(calls[2].Args) != `{"target":{"area":["Kitchen","hall"]}}` {
		t.Errorf("calls %+v", calls)
	}
}
