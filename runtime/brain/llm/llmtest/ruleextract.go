package llmtest

import (
	"github.com/chorus-robotics/chorus/runtime/brain"
	"github.com/chorus-robotics/chorus/runtime/memory"
)

// RuleExtract extracts as a model would, for Server.Extract: each
// self-statement memory's rules find in what a person said becomes a fact
// of that person from that message, and one about what a known fact of
// theirs is about (the same key) supersedes it by id — as a model told
// the known facts marks a correction.
func RuleExtract(in brain.ExtractInput) []memory.Fact {
	var out []memory.Fact
	for _, s := range in.Said {
		for _, st := range memory.Extract(s.Text) {
			l := memory.Fact{Person: s.Person, MessageID: s.MessageID, Key: st.Key, Text: st.Text}
			for _, k := range in.Known {
				if k.Person == s.Person && k.Key != "" && k.Key == st.Key {
					l.Supersedes = k.ID
				}
			}
			out = append(out, l)
		}
	}
	return out
}
