// What a brain sees of a companion's memory and knowledge (issue 29).

package brain

import (
	"context"
	"encoding/json"
	"slices"
)

// Fact is something a companion remembers about a person, as a brain
// sees it: recalled into the prompt as a fact, never as an instruction.
type Fact struct {
	ID     string `json:"id"`
	Person string `json:"person"`        // the identity it belongs to
	Key    string `json:"key,omitempty"` // what it is about ("name", "favorite color"); "" for none
	Text   string `json:"text"`          // one short statement ("likes green tea")
	Pinned bool   `json:"pinned,omitempty"`
}

// Said is one thing a person said, for extraction.
type Said struct {
	Person    string `json:"person"`
	MessageID string `json:"messageId"`
	Text      string `json:"text"`
}

// ExtractInput is what a brain extracts facts from: what people said
// since the companion last wrote its memory, and what it already knows
// about them (a new fact that contradicts one of these supersedes it).
type ExtractInput struct {
	Card  Card
	Known []Fact // about the people in Said
	Said  []Said // oldest first
}

// Learned is a fact a brain extracted. Person must be one of the people
// in ExtractInput.Said and MessageID one of their messages (the memory
// refuses the rest); Supersedes names a Known fact it replaces.
type Learned struct {
	Person     string `json:"person"`
	MessageID  string `json:"messageId"`
	Key        string `json:"key,omitempty"`
	Text       string `json:"text"`
	Supersedes string `json:"supersedes,omitempty"`
}

// Extractor is a brain that extracts facts about people from what they
// said, in one call. The companion asks it after a conversation rests,
// never on the way of a turn; a brain that is not one leaves extraction
// to the memory's rules ("my name is …", "I like …").
type Extractor interface {
	Extract(ctx context.Context, in ExtractInput) ([]Learned, error)
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
}

// KnowBody is the word of card.knowledge that allows every knowledge tool
// the companion's body declares, whatever its name.
const KnowBody = "body"

// AllowsKnowledge reports whether the card's knowledge list allows k: it
// names k, or k is one its body declared (FromBody) and it names
// KnowBody. An empty list allows none.
func (c Card) AllowsKnowledge(k Knowledge) bool {
	return slices.Contains(c.Knowledge, k.Name) || k.FromBody && slices.Contains(c.Knowledge, KnowBody)
}
