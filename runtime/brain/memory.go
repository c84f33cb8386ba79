// What a brain sees of a companion's memory and knowledge (issue 29).

package brain

import (
	"context"
	"encoding/json"
	"slices"
	"time"

	"github.com/chorus-robotics/chorus/runtime/memory"
)

// ExtractInput is what a brain extracts facts from: what people said
// since the companion last wrote its memory, and what it already knows
// about them (a new fact that contradicts one of these supersedes it).
type ExtractInput struct {
	Card  Card
	Known []memory.Fact  // about the people in Said
	Said  []memory.Heard // oldest first
}

// Extractor is a brain that extracts facts about people from what they
// said, in one call. The companion asks it after a conversation rests,
// never on the way of a turn; a brain that is not one leaves extraction
// to the memory's rules ("my name is …", "I like …").
//
// Each fact it returns is credited to a person in Said and one of their
// messages (the memory refuses the rest), with its key and text, and
// Supersedes naming a Known fact it replaces; its other fields are the
// memory's to fill.
type Extractor interface {
	Extract(ctx context.Context, in ExtractInput) ([]memory.Fact, error)
}

// Knowledge is a tool a brain may offer its model beside the body's
// actions (aikyo's knowledge): the model calls it by Name with
// arguments matching Parameters (a JSON Schema object) and reads what
// Call returns. Call is bounded by ctx and must not block past it; its
// text is quoted to the model as data, never as instructions.
type Knowledge struct {
	Name        string
	Description string
	Parameters  json.RawMessage // a JSON Schema object; nil: no arguments
	Call        func(ctx context.Context, args json.RawMessage) (string, error)
	// FromBody says the companion's body declared it (a bridge client's
	// knowledge.declare): card.knowledge allows it by its name or by the
	// word KnowBody (Card.AllowsKnowledge).
	FromBody bool
	// Acts says a call changes the world (an MCP server's tool that is
	// not read-only: Home Assistant's HassTurnOn). The call that votes
	// never runs it — every robot of the room votes, on words the person
	// may not have finished — but asks for it (Thought.Deferred); only
	// the robot granted the turn runs it, once, and writes its words with
	// the result (Input.Calls).
	Acts bool
	// Server names the MCP server of a tool the robot's config allows
	// (tools.mcp): that allow list decides, not card.knowledge.
	Server string
	// Timeout bounds a call (0: the brain's knowledge timeout).
	Timeout time.Duration
}

// ToolCall is a model's call of a tool: its name and its arguments (a
// JSON object).
type ToolCall struct {
	Name string
	Args json.RawMessage
}

// KnowBody is the word of card.knowledge that allows every knowledge tool
// the companion's body declares, whatever its name.
const KnowBody = "body"

// AllowsKnowledge reports whether the card's knowledge list allows k: it
// names k, or k is one its body declared (FromBody) and it names
// KnowBody. An empty list allows none.
func (c Card) AllowsKnowledge(k Knowledge) bool {
	return k.Server != "" || slices.Contains(c.Knowledge, k.Name) || k.FromBody && slices.Contains(c.Knowledge, KnowBody)
}
