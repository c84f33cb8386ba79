// Package sentence splits what a companion says into sentences and bounds
// it: the body synthesizes and plays sentence by sentence so audio starts
// early, and the brain cuts an utterance that is too long at a sentence
// boundary. Both English and Japanese punctuation end a sentence.
package sentence

import (
	"strings"
	"unicode/utf8"
)

// chunk is where a very long sentence is cut for synthesis, in runes.
const chunk = 200

// Ends reports whether a sentence ends with r when next follows it: a
// newline and 。！？!? always, a period before a space, a newline or the
// end of the text (next < 0). Text that is still being written can ask
// before next is known with next = 0: true then holds whatever follows.
func Ends(r, next rune) bool {
	switch r {
	case '\n', '。', '！', '？', '!', '?':
		return true
	case '.':
		return next < 0 || next == ' ' || next == '\n'
	}
	return false
}

// Clause reports whether r ends a clause when next follows it: a comma
// before a space or the end of the text (not one inside a number,
// "1,000"), 、 and ，. The first words of an answer written as it is
// spoken go to the voice at their first clause ("Oh," "Well,"), the rest
// sentence by sentence (issue 40); next = 0 asks before next is known, as
// Ends.
func Clause(r, next rune) bool {
	switch r {
	case '、', '，':
		return true
	case ',':
		return next < 0 || next == ' ' || next == '\n'
	}
	return false
}

// endsAt reports whether runes[i] ends a sentence (Ends).
func endsAt(runes []rune, i int) bool {
	next := rune(-1)
	if i+1 < len(runes) {
		next = runes[i+1]
	}
	return Ends(runes[i], next)
}

// Split splits text after sentence ends (. ! ? 。！？ and newlines),
// keeping the punctuation, dropping empty pieces. A very long sentence is
// cut at a comma or space near 200 characters so synthesis starts early.
func Split(text string) []string {
	var out []string
	var cur strings.Builder
	flush := func() {
		if s := strings.TrimSpace(cur.String()); s != "" {
			out = append(out, s)
		}
		cur.Reset()
	}
	runes := []rune(text)
	for i, r := range runes {
		if r == '\n' {
			flush()
			continue
		}
		cur.WriteRune(r)
		switch {
		case endsAt(runes, i):
			flush()
		case r == ',' || r == '、' || r == '，' || r == ' ':
			if utf8.RuneCountInString(cur.String()) >= chunk {
				flush()
			}
		}
	}
	flush()
	return out
}

// Clip bounds text to max characters (runes): it keeps the whole sentences
// that fit, or, when even the first does not, cuts it at the last space or
// comma that fits and ends it with "…". It reports whether it cut.
func Clip(text string, max int) (string, bool) {
	text = strings.TrimSpace(text)
	runes := []rune(text)
	if max <= 0 || len(runes) <= max {
		return text, false
	}
	end := -1
	for i := 0; i < max; i++ {
		if runes[i] == '\n' || endsAt(runes, i) {
			end = i + 1
		}
	}
	if end > 0 {
		if s := strings.TrimSpace(string(runes[:end])); s != "" {
			return s, true
		}
	}
	cut := max - 1 // room for the ellipsis
	for i := cut; i > max/2; i-- {
		if r := runes[i]; r == ' ' || r == ',' || r == '、' || r == '，' {
			cut = i
			break
		}
	}
	return strings.TrimRight(string(runes[:cut]), " ,、，") + "…", true
}
