// Package endofturn judges from a person's words so far how long a pause
// ends their turn: longer after words that promise more ("and", "um",
// "so I was…", 「えっと」「それで」), sooner after a complete question,
// the usual pause otherwise. The ear asks it each time the speech to text
// gives a newer hypothesis of the utterance under way (docs/hearing.md);
// without hypotheses the pause is the usual one.
//
// It reads English and Japanese text as the recognisers give it: with or
// without punctuation, any case, Japanese without spaces.
package endofturn

import (
	"slices"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// Kind is what the words so far say of the turn.
type Kind int

const (
	// Plain: nothing in the words says more is coming or that they are
	// done.
	Plain Kind = iota
	// Unfinished: the words end on a conjunction, a filler or an
	// unfinished clause; the person is likely to go on.
	Unfinished
	// Complete: a question asked in full; the person waits for an answer.
	Complete
)

func (k Kind) String() string {
	switch k {
	case Unfinished:
		return "unfinished"
	case Complete:
		return "complete"
	}
	return "plain"
}

// Waits are the pauses that end a turn, by what the words say.
type Waits struct {
	Plain, Unfinished, Complete time.Duration
}

// Pause is how long a pause after text ends the turn.
func (w Waits) Pause(text string) time.Duration {
	switch Of(text) {
	case Unfinished:
		return w.Unfinished
	case Complete:
		return w.Complete
	}
	return w.Plain
}

// English words that promise more when a sentence ends on them:
// conjunctions, articles, possessives, the prepositions that cannot end
// a clause, contractions that want a complement, and fillers. Words that
// end sentences as often are not among them: "it", "you", "that", "in",
// "on", the auxiliaries of a short answer ("yes, I can").
var unfinishedEN = set(
	"and", "or", "but", "so", "because", "cause", "cuz", "then", "if", "when", "while", "although", "though", "unless", "whether", "than",
	"the", "a", "an", "my", "your", "our", "their", "his", "her", "its", "some", "any", "very", "of", "to", "into", "like", "about", "with",
	"i'm", "we're", "they're", "it's", "there's", "you're",
	"um", "uh", "er", "erm", "uhm", "umm", "hmm", "mm", "ah",
)

// Phrases that end a sentence still under way.
var unfinishedENPhrases = []string{"you know", "i mean", "and then", "kind of", "sort of", "i was", "i think"}

// Words after which "so" ends the sentence ("I think so").
var soEnds = set("think", "hope", "guess", "believe", "said", "say", "do", "even")

var (
	copulas  = set("is", "are", "was", "were")
	pronouns = set("it", "he", "she", "that", "this", "there", "here", "who", "what", "where", "how", "they", "we", "you", "i", "which", "so")
)

// Words a question in full does not end on: it goes on ("what I want to
// know is", "do you know what I").
var notQuestionEnds = set("is", "was", "are", "were", "am", "i")

// Greetings and fillers a question may begin with ("hello robots, what
// is the weather like today"); the word after one may be a name.
var greetings = set("hello", "hi", "hey", "ok", "okay", "so", "well", "oh", "now")

// Words a question in full begins with.
var questionEN = set("what", "who", "whom", "where", "when", "why", "how", "which", "whose",
	"can", "could", "would", "will", "do", "does", "did", "is", "are", "was", "were", "should", "shall", "may", "have", "has")

// Japanese endings that promise more: fillers, conjunctions, conjunctive
// particles and the て-form, longest first where one ends another.
var unfinishedJA = []string{
	"えーっと", "えーと", "えっと", "あのー", "あの", "えー", "うーん", "その", "まあ",
	"それで", "そして", "それから", "だから", "でも", "けれども", "けれど", "けど", "ですが", "ますが",
	"から", "ので", "のに", "ながら", "たり", "とか", "って", "し", "て", "で", "と", "が", "は", "を", "に", "も",
}

// Japanese words that come before the predicate they belong to: time
// words (「来週…山に行きます」) and adverbs of degree and manner
// (「とても…楽しかった」). Japanese puts the verb last, so a sentence
// ending on one is still under way — or a one-word answer ("when?"
// 「来週」), which then waits the longer pause.
var beforePredicateJA = []string{
	"今日", "明日", "昨日", "明後日", "一昨日", "今朝", "今夜", "今晩", "毎朝", "毎晩", "毎日",
	"今週", "来週", "先週", "週末", "今月", "来月", "先月", "今年", "来年", "去年", "今度", "最近", "午前", "午後",
	"きょう", "あした", "きのう", "こんど",
	"とても", "すごく", "ちょっと", "たぶん", "いつも", "もっと", "ずっと", "少し", "よく",
}

// Japanese endings of a question.
var questionJA = []string{"ですか", "ますか", "でしょうか", "かな", "かしら", "か"}

// Of says what text's last words say of the turn.
func Of(text string) Kind {
	t := strings.TrimSpace(text)
	if t == "" {
		return Plain
	}
	// What the recogniser wrote at the end: an ellipsis, a comma or a dash
	// says the sentence goes on; a question mark that it is asked.
	switch {
	case strings.HasSuffix(t, "...") || strings.HasSuffix(t, "…") || strings.HasSuffix(t, "、") || strings.HasSuffix(t, ",") ||
		strings.HasSuffix(t, "-") || strings.HasSuffix(t, "—"):
		return Unfinished
	case strings.HasSuffix(t, "?") || strings.HasSuffix(t, "？"):
		return Complete
	}
	t = strings.TrimRightFunc(t, func(r rune) bool { return unicode.IsPunct(r) || unicode.IsSpace(r) })
	if t == "" {
		return Plain
	}
	if japanese(t) {
		return ofJapanese(t)
	}
	return ofEnglish(t)
}

// Opening reports whether text is only a greeting, alone or with a name
// ("hey Kyoko", "hello robots", 「ねえ」): people pause there before saying
// what they want, and may stop there too, so the pause that ends it is the
// usual one, but nobody thinks on it early (eager end of turn).
func Opening(text string) bool {
	w := lower(text)
	switch {
	case len(w) == 0 || len(w) > 2:
		return false
	case openings[w[0]]:
		return true
	}
	return len(w) == 1 && slices.Contains(openingsJA, strings.TrimRight(w[0], "ー〜"))
}

// openings are the greetings a person calls the robots with before
// saying what they want.
var openings = set("hello", "hi", "hey", "hiya")

var openingsJA = []string{"ねえ", "ねぇ", "あのね", "おーい", "もしもし"}

// SameWords reports whether two transcripts say the same words, whatever
// their case, punctuation and fillers ("um", 「えっと」): the words so far
// a robot was told and the words of the final transcript.
func SameWords(a, b string) bool { return slices.Equal(plain(a), plain(b)) }

func plain(s string) []string {
	var out []string
	for _, w := range lower(s) {
		if !fillers[w] {
			out = append(out, w)
		}
	}
	return out
}

var fillers = set("um", "uh", "er", "erm", "uhm", "umm", "hmm", "mm", "えっと", "えーと", "えーっと", "あの", "あのー", "ええと", "うーん")

// lower is text's words, lower case, without punctuation.
func lower(text string) []string {
	return strings.FieldsFunc(strings.ToLower(text), func(r rune) bool {
		return unicode.IsSpace(r) || unicode.IsPunct(r) && r != '\''
	})
}

func ofEnglish(t string) Kind {
	words := lower(t)
	if len(words) == 0 {
		return Plain
	}
	last := words[len(words)-1]
	prev := ""
	if len(words) > 1 {
		prev = words[len(words)-2]
	}
	if unfinishedEN[last] && !(last == "so" && soEnds[prev]) {
		return Unfinished
	}
	// A copula after a noun wants its complement ("my favourite fruit is
	// …"); after a pronoun it ends the sentence ("I know who he is").
	if copulas[last] && prev != "" && !pronouns[prev] {
		return Unfinished
	}
	tail := strings.Join(words[max(0, len(words)-2):], " ")
	for _, p := range unfinishedENPhrases {
		if tail == p || strings.HasSuffix(tail, " "+p) {
			return Unfinished
		}
	}
	if q := question(words); len(q) >= 3 && !notQuestionEnds[last] {
		return Complete
	}
	return Plain
}

// question is words from the question word they begin with, after a
// greeting and a name ("hello robots, what…"), or nil.
func question(words []string) []string {
	for i, w := range words[:min(3, len(words))] {
		if questionEN[w] {
			return words[i:]
		}
		if i == 0 && !greetings[w] {
			return nil
		}
	}
	return nil
}

// Japanese greetings that end on a particle's sound: complete.
var greetingsJA = []string{"こんにちは", "こんばんは"}

func ofJapanese(t string) Kind {
	// A long vowel mark or a small tsu drawn out at the end ("えーっとー",
	// "あのー") is the same word held.
	t = strings.TrimRight(t, "ー〜~")
	for _, g := range greetingsJA {
		if strings.HasSuffix(t, g) {
			return Plain
		}
	}
	for _, e := range questionJA {
		if strings.HasSuffix(t, e) && utf8.RuneCountInString(t) > utf8.RuneCountInString(e) {
			return Complete
		}
	}
	for _, endings := range [][]string{unfinishedJA, beforePredicateJA} {
		for _, e := range endings {
			if strings.HasSuffix(t, e) {
				return Unfinished
			}
		}
	}
	return Plain
}

// japanese reports whether t is written in Japanese: its last letter is
// kana or a kanji.
func japanese(t string) bool {
	r, _ := utf8.DecodeLastRuneInString(t)
	return unicode.In(r, unicode.Hiragana, unicode.Katakana, unicode.Han) || r == 'ー'
}

func set(words ...string) map[string]bool {
	m := make(map[string]bool, len(words))
	for _, w := range words {
		m[w] = true
	}
	return m
}
