package brain

import (
	"strings"

	"github.com/chorus-robotics/chorus/runtime/endofturn"
	"github.com/chorus-robotics/chorus/runtime/protocol"
	"github.com/chorus-robotics/chorus/runtime/sentence"
)

// Addressed reports whether m asks card's companion in particular to
// speak — a State's selected, decided by these rules for every brain (a
// model is not asked: its vote is shorter, and the first words come
// sooner): the message is for this companion alone (its only "to"), or a
// sentence of it asks it a question by name. Being named in passing
// ("That's lovely, kyoko!") or being one of several addressees is not
// being asked.
func Addressed(card Card, m protocol.MessageParams) bool {
	if len(m.To) == 1 && m.To[0] == card.ID {
		return true
	}
	for _, s := range sentence.Split(m.Message) {
		if names(card, s) && (IsQuestion(s) || heardQuestion(card, m, s)) {
			return true
		}
	}
	return false
}

// heardQuestion: speech to text writes no question mark, so a sentence
// the room heard (metadata source "voice") is a question when its words,
// the name aside, ask one in full ("kyoko what time is it").
func heardQuestion(card Card, m protocol.MessageParams, s string) bool {
	if !m.Heard() {
		return false
	}
	for _, n := range []string{card.ID, card.Name} {
		if n != "" {
			s = strings.ReplaceAll(strings.ToLower(s), strings.ToLower(n), " ")
		}
	}
	return endofturn.Of(s) == endofturn.Complete
}

func names(card Card, s string) bool {
	text := strings.ToLower(s)
	return strings.Contains(text, strings.ToLower(card.ID)) || (card.Name != "" && strings.Contains(text, strings.ToLower(card.Name)))
}

// IsQuestion reports whether s is written as a question (a question mark,
// or Japanese か at its end).
func IsQuestion(s string) bool {
	s = strings.TrimSpace(s)
	return strings.ContainsAny(s, "?？") || strings.HasSuffix(s, "か") || strings.HasSuffix(s, "か。")
}
