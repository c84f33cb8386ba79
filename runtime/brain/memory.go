// What a brain sees of a companion's memory and knowledge (issue 29).

package brain

import (
	"context"
	"slices"

	"github.com/chorus-robotics/chorus/runtime/memory"
	"github.com/chorus-robotics/chorus/runtime/tool"
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

// KnowBody is the word of card.knowledge that allows every knowledge tool
// the companion's body declares, whatever its name.
const KnowBody = "body"

// AllowsKnowledge reports whether the card's knowledge list allows t: it
// names t, or t is one its body declared (tool.FromBody) and it names
// KnowBody. An empty list allows none. An MCP server's tool is allowed
// by the robot's config (tools.mcp's allow), not by the card.
func (c Card) AllowsKnowledge(t tool.Tool) bool {
	return t.MCP() || slices.Contains(c.Knowledge, t.Name) || t.Source == tool.FromBody && slices.Contains(c.Knowledge, KnowBody)
}
