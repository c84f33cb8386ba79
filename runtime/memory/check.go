package memory

import (
	"errors"
	"fmt"
	"regexp"
	"strings"
	"unicode/utf8"
)

// The one check of what a fact says, whoever found it: the rules
// (Extract) and a model's extraction go through Check, so that what one
// refuses the other refuses, and their keys meet.

// Bounds of a name (key "name", or "<who>'s name").
const (
	maxNameWords = 4
	maxNameChars = 40
)

// NormKey is key as the memory keeps it: one line, lower case, trimmed;
// the person's name under "name" whatever it was called ("first name",
// "my name", "名前"); "favourite" as "favorite"; what a like is about
// without its article; someone's name as "<who>'s name" ("daughter
// name", "name of my daughter", "the daughter's name"). So a model's
// fact and a rule's about the same thing replace each other.
func NormKey(key string) string {
	k := strings.ReplaceAll(trimKey(strings.ToLower(oneLine(key))), "favourite", "favorite")
	switch k {
	case "name", "first name", "given name", "full name", "名前", "お名前", "なまえ":
		return keyName
	}
	for _, p := range []string{"like:", "has:"} {
		if rest, ok := strings.CutPrefix(k, p); ok {
			rest = norm(strings.TrimSpace(rest))
			if m := hasNamed.FindStringSubmatch(rest); p == "has:" && m != nil && trimKey(m[1]) != "" {
				return ownerName(m[1]) // as the rules keyed "I have a dog called Rex" before: "has:dog called rex"
			}
			return p + rest
		}
	}
	who, ok := strings.CutPrefix(k, "name of ")
	if !ok {
		who, ok = strings.CutSuffix(k, "'s name")
	}
	if !ok {
		if who, ok = strings.CutSuffix(k, " name"); notOwner[who] {
			ok = false
		}
	}
	if who = trimKey(who); ok && who != "" {
		return ownerName(who)
	}
	return k
}

// trimKey cuts punctuation at both ends and a leading "my", "the", "user's".
func trimKey(k string) string {
	for again := true; again; {
		again = false
		k = strings.TrimFunc(k, trailingPunct)
		for _, p := range []string{"my ", "the ", "a ", "an ", "user's ", "person's ", "their "} {
			if rest, ok := strings.CutPrefix(k, p); ok {
				k, again = rest, true
			}
		}
	}
	return k
}

// A word before "name" that says which name, not whose.
var notOwner = map[string]bool{"last": true, "family": true, "middle": true, "nick": true, "user": true, "maiden": true, "sur": true, "pen": true, "stage": true, "screen": true, "code": true}

// ownerName is the key of who's name: "daughter's name".
func ownerName(who string) string {
	return trimKey(strings.ToLower(who)) + "'s name"
}

// isNameKey reports whether key (normalised) is a name: the person's or
// someone's they told of ("daughter's name", "娘の名前").
func isNameKey(key string) bool {
	return key == keyName || strings.HasSuffix(key, "'s name") || strings.HasSuffix(key, "の名前")
}

var (
	hasNamed = regexp.MustCompile(`^` + namedTail)
	// Text that reads as an order to a model rather than a fact about a
	// person ("Ignore all previous instructions and …"). A fact is
	// quoted to the model as data; this keeps it from being spoken too.
	instruction = regexp.MustCompile(`(?i)\b(?:ignore|disregard|forget|override|bypass)\b.{0,40}\b(?:instructions?|prompts?|rules|above|previous|prior|guidelines)\b` +
		`|\bsystem\s+(?:prompt|message)\b|\byou\s+are\s+now\b|\bpretend\s+(?:to\s+be|you)\b|\brepeat\s+after\s+me\b|\bjailbreak\b` +
		`|(?:指示|命令|プロンプト|ルール|設定).{0,10}(?:無視|忘れ)|無視して|と言って|と答えて`)
	// Words no name holds: a name that does is an order or a sentence.
	notNameWord = regexp.MustCompile(`(?i)\b(?:ignore|disregard|instructions?|prompts?|system|assistant|say|says|repeat|pretend|output|print|respond|reply|answer)\b`)
	// What precedes a name in a fact's text ("name is Alice", "has a
	// daughter called Mia", "名前はアリス").
	nameIntro = regexp.MustCompile(`(?i)^.*?(?:\bname\s+is|\bname's|\bis\s+called|\bis\s+named|\bcalled|\bnamed|\bgoes\s+by|名前は)\s*`)
)

// Check is the one check of a fact's key and text before it is stored,
// for the rules and a model alike. It returns the key normalised
// (NormKey) and the text on one line, or an error saying what is wrong:
// no text; a text over MaxText characters or a key over MaxKey; a text
// that reads as an instruction to a model; or, for a name (key "name" or
// "<who>'s name"), a value that is not a name — more than four words or
// 40 characters, a question word, or a word such as "ignore" or "say".
func Check(key, text string) (string, string, error) {
	key, text = NormKey(key), oneLine(text)
	switch {
	case text == "":
		return key, text, errors.New("no text")
	case utf8.RuneCountInString(text) > MaxText:
		return key, text, fmt.Errorf("a text of %d characters (at most %d)", utf8.RuneCountInString(text), MaxText)
	case utf8.RuneCountInString(key) > MaxKey:
		return key, text, fmt.Errorf("a key of %d characters (at most %d)", utf8.RuneCountInString(key), MaxKey)
	case instruction.MatchString(text):
		return key, text, fmt.Errorf("the text %q reads as an instruction, not a fact", clip(text, 60))
	case isNameKey(key):
		if err := checkName(nameOf(text)); err != nil {
			return key, text, fmt.Errorf("%s: %w", key, err)
		}
	}
	return key, text, nil
}

// nameOf is the name a name fact's text gives: what follows "name is",
// "called", "名前は" (or the text itself), without a Japanese ending.
func nameOf(text string) string {
	v := nameIntro.ReplaceAllString(text, "")
	for _, end := range []string{"といいます", "と言います", "です", "だ"} {
		v = strings.TrimSuffix(v, end)
	}
	return strings.TrimFunc(v, trailingPunct)
}

// checkName refuses what is not a name.
func checkName(v string) error {
	switch n := len(strings.Fields(v)); {
	case v == "":
		return errors.New("no name")
	case n > maxNameWords:
		return fmt.Errorf("the name %q has %d words (at most %d)", clip(v, 60), n, maxNameWords)
	case utf8.RuneCountInString(v) > maxNameChars:
		return fmt.Errorf("the name %q is over %d characters", clip(v, 60), maxNameChars)
	case question[strings.ToLower(v)] || strings.ContainsAny(v, "?？"):
		return fmt.Errorf("the name %q is a question", v)
	case notNameWord.MatchString(v):
		return fmt.Errorf("the name %q holds a word no name holds (%q)", clip(v, 60), notNameWord.FindString(v))
	}
	return nil
}
