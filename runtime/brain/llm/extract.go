// Extraction (issue 29): the facts people said about themselves, in one
// call after a conversation rests.

package llm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/chorus-robotics/chorus/runtime/brain"
	"github.com/chorus-robotics/chorus/runtime/brain/prompts"
	"github.com/chorus-robotics/chorus/runtime/memory"
	"github.com/chorus-robotics/chorus/runtime/metrics"
)

var _ brain.Extractor = (*Brain)(nil)

// ExtractSchemaName names the extraction answer's structured output.
const ExtractSchemaName = "memory_facts"

// Bounds of an extraction answer.
const (
	MaxLearned     = 32  // facts kept from one answer; the rest are dropped
	MaxLearnedText = 200 // characters of a fact's text
	MaxLearnedKey  = 100 // characters of its key
)

// ExtractSchema is the JSON Schema of the extraction answer: {facts: [{person,
// messageId, key, text, supersedes}]}, every field required ("" for no
// key, nothing superseded), as strict structured output wants.
func ExtractSchema() map[string]any {
	str := func(desc string) map[string]any { return map[string]any{"type": "string", "description": desc} }
	fact := map[string]any{
		"type": "object",
		"properties": Properties{
			{"person", str("who said it about themselves")},
			{"messageId", str("the message it came from")},
			{"key", str(`what it is about ("name", "favorite color", "like:green tea")`)},
			{"text", str("the fact, short, third person, without the name")},
			{"supersedes", str(`the id of a remembered fact of the same person it replaces, or ""`)},
		},
		"required":             []any{"person", "messageId", "key", "text", "supersedes"},
		"additionalProperties": false,
	}
	return map[string]any{
		"type":                 "object",
		"properties":           Properties{{"facts", map[string]any{"type": "array", "items": fact}}},
		"required":             []any{"facts"},
		"additionalProperties": false,
	}
}

// Extract implements brain.Extractor: one call (whole, not streamed)
// with prompts.Extract and ExtractSchema. What the answer says is checked
// by ParseExtract; the facts it drops are counted
// (chorus_brain_failures_total{reason="bad_fact"}) and each is logged at
// debug with the reason. Nothing said: no call.
func (b *Brain) Extract(ctx context.Context, in brain.ExtractInput) ([]memory.Fact, error) {
	if len(in.Said) == 0 {
		return nil, nil
	}
	req := Request{Turns: []Turn{{Role: User, Text: prompts.Extract(in)}}, Schema: ExtractSchema(), SchemaName: ExtractSchemaName}
	resp, err := b.Chat.Chat(ctx, req)
	switch {
	case err != nil:
		return nil, fmt.Errorf("llm: extraction: %w", err)
	case resp.Refusal != "":
		return nil, fmt.Errorf("llm: extraction: the model refused: %s", clip(resp.Refusal))
	case resp.Truncated:
		return nil, errors.New("llm: extraction: the answer was cut off at the token limit")
	}
	facts, dropped, err := ParseExtract(resp.Text, in)
	if len(dropped) > 0 {
		metrics.OrNew(b.Metrics).BrainFailures.WithLabelValues("bad_fact").Add(float64(len(dropped)))
		for _, why := range dropped {
			b.log().Debug("a fact the model extracted is refused", "reason", why)
		}
		b.log().Info("the model extracted facts the memory cannot take; dropped", "dropped", len(dropped), "kept", len(facts))
	}
	return facts, err
}

type learnedWire struct {
	Person     string `json:"person"`
	MessageID  string `json:"messageId"`
	Key        string `json:"key"`
	Text       string `json:"text"`
	Supersedes string `json:"supersedes"`
}

// ParseExtract reads an extraction answer, {"facts": [...]}: an answer
// that is not that object is an error; within it, a fact is dropped (its
// reason in dropped) when it is not an object of the five fields, its
// person is not a speaker in in.Said, its messageId is not one of that
// person's messages, its text is empty or longer than MaxLearnedText
// characters, its key is longer than MaxLearnedKey, or the memory's
// check of every fact refuses it (memory.Check: the same as the rules',
// so a name must be a name and no fact reads as an instruction); a kept
// fact's key is the memory's (memory.NormKey), so it replaces a rule's
// fact about the same thing. A supersedes that is not a Known fact of
// the same person is removed (the fact kept, the reason in dropped). The
// same fact twice is kept once; at most MaxLearned facts.
func ParseExtract(text string, in brain.ExtractInput) (facts []memory.Fact, dropped []string, err error) {
	var w struct {
		Facts *[]json.RawMessage `json:"facts"`
	}
	if err := strictJSON(text, &w); err != nil {
		return nil, nil, fmt.Errorf("llm: extraction answer is not the JSON asked for: %w (got %q)", err, clip(text))
	}
	if w.Facts == nil {
		return nil, nil, errors.New("llm: extraction answer: facts missing")
	}
	said := map[[2]string]bool{} // person, messageId
	for _, s := range in.Said {
		said[[2]string{s.Person, s.MessageID}] = true
	}
	known := map[string]string{} // fact id → person
	for _, f := range in.Known {
		known[f.ID] = f.Person
	}
	seen := map[learnedWire]bool{} // the facts kept, by their five fields
	for i, raw := range *w.Facts {
		var f learnedWire
		if err := strictJSON(string(raw), &f); err != nil {
			dropped = append(dropped, fmt.Sprintf("fact %d: %v", i, err))
			continue
		}
		l := memory.Fact{Person: f.Person, MessageID: f.MessageID, Key: strings.TrimSpace(f.Key),
			Text: strings.TrimSpace(f.Text), Supersedes: f.Supersedes}
		refuse := func(why string) {
			dropped = append(dropped, fmt.Sprintf("fact %d (person %q, key %q): %s", i, clip(l.Person), clip(l.Key), why))
		}
		n := utf8.RuneCountInString(l.Text)
		switch {
		case !said[[2]string{l.Person, l.MessageID}]:
			refuse("not a message of that person")
			continue
		case n == 0 || n > MaxLearnedText || !utf8.ValidString(l.Text):
			refuse(fmt.Sprintf("a text of %d characters (1 to %d, UTF-8)", n, MaxLearnedText))
			continue
		case utf8.RuneCountInString(l.Key) > MaxLearnedKey || !utf8.ValidString(l.Key):
			refuse(fmt.Sprintf("a key over %d characters or not UTF-8", MaxLearnedKey))
			continue
		case len(facts) >= MaxLearned:
			refuse(fmt.Sprintf("over %d facts", MaxLearned))
			continue
		}
		key, _, err := memory.Check(l.Key, l.Text)
		if err != nil {
			refuse(err.Error())
			continue
		}
		l.Key = key
		if p, ok := known[l.Supersedes]; l.Supersedes != "" && (!ok || p != l.Person) {
			refuse(fmt.Sprintf("supersedes %q, no known fact of that person; kept, superseding nothing", clip(l.Supersedes)))
			l.Supersedes = ""
		}
		if k := (learnedWire{l.Person, l.MessageID, l.Key, l.Text, l.Supersedes}); !seen[k] {
			seen[k] = true
			facts = append(facts, l)
		}
	}
	return facts, dropped, nil
}
