package memory

import (
	"fmt"
	"regexp"
	"strings"
	"unicode"
	"unicode/utf8"
)

// The rules that need no model: what a person says about themselves
// (Extract), what they ask of the memory (Control), and the replies
// (Describe, Acknowledge). English and Japanese.

// Statement is a fact a person stated about themselves.
type Statement struct {
	Key    string // what it is about, never its value: "name", "like:green tea", "favorite color", "home", "age", "job", "has:cat", "daughter's name", "娘の名前"
	Text   string // "name is Alice", "likes green tea", "緑茶が好き"
	Pinned bool   // the name
}

// maxObject bounds what a statement is about (X in "I like X").
const maxObject = 60

type rule struct {
	re *regexp.Regexp
	// make builds the statement from the submatches; ok false refuses it.
	make func(m []string) (Statement, bool)
}

func like(x string) (Statement, bool) {
	x, ok := object(x)
	return Statement{Key: "like:" + norm(x), Text: "likes " + x}, ok
}

func dislike(x string) (Statement, bool) {
	x, ok := object(x)
	return Statement{Key: "like:" + norm(x), Text: "doesn't like " + x}, ok
}

// name is the person's name (Check refuses what is not a name).
func name(x string, ja bool) (Statement, bool) {
	x, ok := object(x)
	if ja {
		return Statement{Key: keyName, Text: "名前は" + x, Pinned: true}, ok
	}
	return Statement{Key: keyName, Text: "name is " + x, Pinned: true}, ok
}

// named is a fact about someone or something a person has and its name
// ("I have a daughter called Mia", "my daughter's name is Mia", "ミアという娘
// がいます"): keyed by whose name it is ("daughter's name", "娘の名前"),
// never by the name, so a correction replaces it.
func named(what, x string, ja bool) (Statement, bool) {
	what, ok1 := object(what)
	x, ok2 := object(x)
	if ja {
		return Statement{Key: what + "の名前", Text: what + "の名前は" + x}, ok1 && ok2
	}
	what = norm(what)
	article := "a"
	if what != "" && strings.ContainsRune("aeiou", rune(what[0])) {
		article = "an"
	}
	return Statement{Key: ownerName(what), Text: "has " + article + " " + what + " called " + x}, ok1 && ok2
}

// namedTail is what follows "I have a" when it names what it is: "dog
// called Rex".
const namedTail = `(.{1,40}?),?\s+(?:called|named|whose name is|by the name of)\s+(.+)$`

const adv = `(?:(?:really|also|just|still|truly|totally|absolutely|do|kind of|sort of|actually)\s+)*`

var enRules = []rule{
	{regexp.MustCompile(`^(?:my name is|my name's|i'm called|i am called|call me|you can call me|people call me)\s+(.+)$`),
		func(m []string) (Statement, bool) { return name(m[1], false) }},
	{regexp.MustCompile(`^i\s+` + adv + `(?:don't|do not|dont|didn't|no longer|don't really|do not really)\s+(?:like|love|enjoy)\s+(.+)$`),
		func(m []string) (Statement, bool) { return dislike(m[1]) }},
	{regexp.MustCompile(`^i\s+` + adv + `(?:hate|dislike|detest|can't stand|cannot stand)\s+(.+)$`),
		func(m []string) (Statement, bool) { return dislike(m[1]) }},
	{regexp.MustCompile(`^i\s+` + adv + `(?:like|love|enjoy|adore)\s+(.+)$`),
		func(m []string) (Statement, bool) { return like(m[1]) }},
	{regexp.MustCompile(`^my\s+(?:favorite|favourite|fave|fav)\s+(.{1,40}?)\s+is\s+(.+)$`),
		func(m []string) (Statement, bool) {
			what, ok1 := object(m[1])
			x, ok2 := object(m[2])
			what = norm(what)
			return Statement{Key: "favorite " + what, Text: "favorite " + what + " is " + x}, ok1 && ok2
		}},
	{regexp.MustCompile(`^my\s+(.{1,40}?)(?:\s+is\s+(?:called|named)|'s\s+name\s+is|'s\s+name's)\s+(.+)$`),
		func(m []string) (Statement, bool) { return named(m[1], m[2], false) }},
	{regexp.MustCompile(`^i\s+(?:live|am living|'m living)\s+in\s+(.+)$`),
		func(m []string) (Statement, bool) {
			x, ok := object(m[1])
			return Statement{Key: "home", Text: "lives in " + x}, ok
		}},
	{regexp.MustCompile(`^(?:i am|i'm|im)\s+(\d{1,3})(?:\s+years?\s+old|\s+y/?o)$`),
		func(m []string) (Statement, bool) {
			return Statement{Key: "age", Text: "is " + m[1] + " years old"}, true
		}},
	{regexp.MustCompile(`^(?:i work as|i'm working as|i am working as|my job is|my job's)\s+(.+)$`),
		func(m []string) (Statement, bool) {
			x, ok := object(m[1])
			return Statement{Key: "job", Text: "works as " + x}, ok
		}},
	{regexp.MustCompile(`^(?:i have|i've got|i have got)\s+(?:a|an)\s+` + namedTail),
		func(m []string) (Statement, bool) { return named(m[1], m[2], false) }},
	{regexp.MustCompile(`^(?:i have|i've got|i have got)\s+(a|an)\s+(.+)$`),
		func(m []string) (Statement, bool) {
			x, ok := object(m[2])
			return Statement{Key: "has:" + norm(x), Text: "has " + strings.ToLower(m[1]) + " " + x}, ok
		}},
}

const (
	jaI    = `(?:私|わたし|僕|ぼく|俺|おれ|あたし|うち)`
	jaEnd  = `(?:です|だ|でーす|なんです|なんだ)?(?:よ|ね|よね)?`
	jaLike = `(?:大好き|好き)`
)

// jaMe is a first-person pronoun alone: "私の名前は" is the person's own.
var jaMe = regexp.MustCompile(`^` + jaI + `$`)

// jaNamed is named, or name when what is the person themselves.
func jaNamed(what, x string) (Statement, bool) {
	if jaMe.MatchString(what) {
		return name(x, true)
	}
	return named(what, x, true)
}

var jaRules = []rule{
	// Someone's name before the person's own: "娘の名前はミアです" is not "名前は…".
	{regexp.MustCompile(`^(?:` + jaI + `の)?([^はがの]{1,10}?)の名前は(.+?)(?:といいます|と言います|です|だ)?(?:よ|ね)?$`),
		func(m []string) (Statement, bool) { return jaNamed(m[1], m[2]) }},
	{regexp.MustCompile(`^(?:` + jaI + `の)?([^はがの]{1,10}?)は(.+?)(?:という名前|って名前|といいます|と言います)` + jaEnd + `$`),
		func(m []string) (Statement, bool) { return jaNamed(m[1], m[2]) }},
	{regexp.MustCompile(`^(?:` + jaI + `(?:には|は))?(.+?)(?:という|っていう|って)(?:名前の)?([^はがの]{1,10}?)がい(?:ます|る|るんです|るんだ)(?:よ|ね)?$`),
		func(m []string) (Statement, bool) { return named(m[2], m[1], true) }},
	{regexp.MustCompile(`^(?:` + jaI + `(?:には|は))?([^はがにをでの]{1,10})がい(?:ます|る|るんです|るんだ)(?:よ|ね)?$`),
		func(m []string) (Statement, bool) {
			x, ok := object(m[1])
			return Statement{Key: "has:" + x, Text: x + "がいる"}, ok
		}},
	{regexp.MustCompile(`^(?:` + jaI + `の)?名前は(.+?)(?:といいます|と言います|です|だ)(?:よ|ね)?$`),
		func(m []string) (Statement, bool) { return name(m[1], true) }},
	{regexp.MustCompile(`^(?:` + jaI + `の)?名前は(.+?)$`),
		func(m []string) (Statement, bool) { return name(m[1], true) }},
	{regexp.MustCompile(`^(?:` + jaI + `は)?(.+?)(?:と申します|といいます|と言います)$`),
		func(m []string) (Statement, bool) { return name(m[1], true) }},
	{regexp.MustCompile(`^(.+?)って呼んで(?:ください|下さい|ね|よ)?$`),
		func(m []string) (Statement, bool) { return name(m[1], true) }},
	{regexp.MustCompile(`^好きな(.{1,20}?)は(.+?)` + jaEnd + `$`),
		func(m []string) (Statement, bool) {
			what, ok1 := object(m[1])
			x, ok2 := object(m[2])
			return Statement{Key: "favorite " + norm(what), Text: "好きな" + what + "は" + x}, ok1 && ok2
		}},
	{regexp.MustCompile(`^(?:` + jaI + `は)?(.+?)(?:が|は)嫌い` + jaEnd + `$`),
		func(m []string) (Statement, bool) {
			x, ok := object(m[1])
			return Statement{Key: "like:" + norm(x), Text: x + "が嫌い"}, ok
		}},
	{regexp.MustCompile(`^(?:` + jaI + `は)?(.+?)(?:は|が)(?:あまり|もう)?` + jaLike + `(?:じゃない|じゃありません|ではない|ではありません|じゃなくなった|ではなくなりました)` + jaEnd + `$`),
		func(m []string) (Statement, bool) {
			x, ok := object(m[1])
			return Statement{Key: "like:" + norm(x), Text: x + "は好きじゃない"}, ok
		}},
	{regexp.MustCompile(`^(?:` + jaI + `は)?(.+?)が` + jaLike + jaEnd + `$`),
		func(m []string) (Statement, bool) {
			x, ok := object(m[1])
			return Statement{Key: "like:" + norm(x), Text: x + "が好き"}, ok
		}},
	{regexp.MustCompile(`^(?:` + jaI + `は)?(.+?)に住んで(?:います|いる|る|ます|いるんです|るんだ)(?:よ|ね)?$`),
		func(m []string) (Statement, bool) {
			x, ok := object(m[1])
			return Statement{Key: "home", Text: x + "に住んでいる"}, ok
		}},
	{regexp.MustCompile(`^(?:` + jaI + `は)?([0-9０-９]{1,3})(?:歳|才)` + jaEnd + `$`),
		func(m []string) (Statement, bool) {
			return Statement{Key: "age", Text: halfWidth(m[1]) + "歳"}, true
		}},
	{regexp.MustCompile(`^(?:` + jaI + `の)?仕事は(.+?)` + jaEnd + `$`),
		func(m []string) (Statement, bool) {
			x, ok := object(m[1])
			return Statement{Key: "job", Text: "仕事は" + x}, ok
		}},
}

var (
	sentenceEnd = regexp.MustCompile(`[.!?;。！？；\n]+`)
	// "… and I like tea", "… but my job is …": a second statement.
	conj       = regexp.MustCompile(`(?i)\s*,?\s+(?:and|but)\s+(i|i'm|i've|my)\s`)
	fillersEN  = regexp.MustCompile(`(?i)^(?:(?:actually|no|nope|well|oh|ah|um|uh|so|and|but|also|yes|yeah|ok|okay|hey|hi|hello|by the way|btw|anyway)(?:\s*,\s*|\s+))+`)
	fillersJA  = regexp.MustCompile(`^(?:(?:実は|じつは|いや|いいえ|あの|あのね|えっと|ええと|あ|そうそう|ちなみに|それと|あと)、?)+`)
	enQuestion = regexp.MustCompile(`(?i)^(?:what|what's|whats|who|who's|where|when|why|how|do|does|did|is|are|am|can|could|would|will|should|shall|have|has)\b`)
)

// enIntro is a person introducing themselves with a capitalised word
// alone ("I'm Sam"): "I'm tired" is not a name, and neither is what
// notIntro lists (capitalised words that say how or what one is).
var enIntro = regexp.MustCompile(`^(?:I'm|I am|Im)\s+(\p{Lu}[\p{Ll}'-]{1,20})$`)

var notIntro = map[string]bool{"ok": true, "okay": true, "fine": true, "good": true, "back": true, "home": true, "here": true,
	"sorry": true, "done": true, "ready": true, "hungry": true, "tired": true, "happy": true, "sad": true, "bored": true, "busy": true,
	"not": true, "so": true, "very": true, "just": true, "also": true, "still": true, "new": true, "english": true, "british": true,
	"american": true, "japanese": true, "chinese": true, "french": true, "german": true, "spanish": true, "italian": true,
	"canadian": true, "australian": true, "irish": true, "scottish": true, "welsh": true, "dutch": true, "swiss": true,
	"korean": true, "indian": true, "christian": true, "muslim": true, "jewish": true, "catholic": true, "buddhist": true}

// question words that are not an answer ("my name is what").
var question = map[string]bool{"what": true, "who": true, "何": true, "なに": true, "誰": true, "だれ": true, "どこ": true, "なん": true}

// Extract finds simple self-statements in text, several per message,
// English and Japanese: "my name is X", "I'm X" (X one capitalised word,
// not a word like "Fine" or "English"), "call me X", "I like X", "I don't
// like X (anymore)", "I hate X", "my favorite X is Y", "I live in X", "I
// am N years old", "I work as X", "my job is X", "I have a X", "I have a
// Y called X", "my Y is called X", "my Y's name is X";
// "私の名前はXです", "Xと申します", "Xって呼んで", "Xが好きです", "Xが嫌いです",
// "Xは好きじゃない", "好きなYはXです", "Xに住んでいます", "N歳です",
// "仕事はXです", "Yがいます", "XというYがいます", "Yの名前はXです",
// "YはXといいます". A leading "actually," "no," "well," is ignored: a
// correction is a newer statement with the same key (what it is about,
// never its value: "Y's name", "Yの名前"). What Check refuses is not a
// statement. Questions give nothing.
func Extract(text string) []Statement {
	var out []Statement
	seen := map[string]bool{}
	parts := sentenceEnd.FindAllStringIndex(text, -1)
	start := 0
	for i := 0; i <= len(parts); i++ {
		end, term := len(text), ""
		if i < len(parts) {
			end, term = parts[i][0], text[parts[i][0]:parts[i][1]]
		}
		sentence := text[start:end]
		if i < len(parts) {
			start = parts[i][1]
		}
		if strings.ContainsAny(term, "?？") {
			continue
		}
		for _, clause := range strings.Split(conj.ReplaceAllString(sentence, "\n$1 "), "\n") {
			if st, ok := extractClause(clause); ok && !seen[st.Key+"\x00"+st.Text] {
				seen[st.Key+"\x00"+st.Text] = true
				out = append(out, st)
			}
		}
	}
	return out
}

// extractClause reads one clause, and if nothing is found there, what
// follows its first comma ("Hi Kiko, my name is Bob").
func extractClause(s string) (Statement, bool) {
	s = strings.Join(strings.Fields(strings.ReplaceAll(s, "’", "'")), " ")
	if st, ok := extractOne(s); ok {
		return st, true
	}
	for _, sep := range []string{", ", "、"} {
		if _, after, ok := strings.Cut(s, sep); ok {
			return extractOne(after)
		}
	}
	return Statement{}, false
}

func extractOne(s string) (Statement, bool) {
	s = fillersJA.ReplaceAllString(fillersEN.ReplaceAllString(s, ""), "")
	s = strings.TrimFunc(s, trailingPunct)
	if s == "" || utf8.RuneCountInString(s) > 300 {
		return Statement{}, false
	}
	if hasJapanese(s) {
		s = strings.ReplaceAll(s, " ", "")
		if strings.HasSuffix(s, "か") || strings.HasSuffix(s, "かな") {
			return Statement{}, false
		}
		return apply(jaRules, s, s)
	}
	if enQuestion.MatchString(s) {
		return Statement{}, false
	}
	if m := enIntro.FindStringSubmatch(s); m != nil && !notIntro[strings.ToLower(m[1])] {
		return apply(enRules, "my name is "+strings.ToLower(m[1]), "my name is "+m[1])
	}
	// Match on the lower-cased clause, keep the person's spelling of X
	// (unless lower-casing moved bytes: rare letters).
	lower := strings.ToLower(s)
	if len(lower) != len(s) {
		s = lower
	}
	return apply(enRules, lower, s)
}

// apply runs rules on lower (a lower-cased copy of orig of the same
// length) and cuts the submatches from orig.
func apply(rules []rule, lower, orig string) (Statement, bool) {
	for _, r := range rules {
		idx := r.re.FindStringSubmatchIndex(lower)
		if idx == nil {
			continue
		}
		m := make([]string, len(idx)/2)
		for i := range m {
			if idx[2*i] >= 0 {
				m[i] = orig[idx[2*i]:idx[2*i+1]]
			}
		}
		st, ok := r.make(m)
		if !ok || st.Key == "" || st.Text == "" {
			return Statement{}, false
		}
		key, text, err := Check(clip(st.Key, MaxKey), clip(st.Text, MaxText))
		if err != nil {
			return Statement{}, false
		}
		st.Key, st.Text = key, text
		return st, true
	}
	return Statement{}, false
}

// object cleans what a statement is about: trailing punctuation and
// fillers cut, at most maxObject characters (at a word), not a pronoun
// or a question word.
func object(x string) (string, bool) {
	x = strings.TrimFunc(oneLine(x), trailingPunct)
	lower := strings.ToLower(x)
	for _, tail := range []string{" anymore", " any more", " very much", " so much", " a lot", " too", " now", " though", " either", " these days", " lately", " by the way"} {
		if strings.HasSuffix(lower, tail) {
			x, lower = x[:len(x)-len(tail)], lower[:len(lower)-len(tail)]
		}
	}
	x = strings.TrimFunc(x, trailingPunct)
	if utf8.RuneCountInString(x) > maxObject {
		y := clip(x, maxObject+1) // with the next character: is the cut at a word?
		if i := strings.LastIndexByte(y, ' '); i > maxObject/2 {
			x = strings.TrimSpace(y[:i])
		} else {
			x = clip(x, maxObject)
		}
	}
	switch strings.ToLower(x) {
	case "", "you", "it", "that", "this", "them", "him", "her", "these", "those", "what", "something", "anything", "nothing", "everything", "それ", "これ", "あれ", "あなた", "何", "なに":
		return "", false
	}
	if question[strings.ToLower(x)] || strings.ContainsAny(x, "?？") {
		return "", false
	}
	return x, true
}

// norm is x as a key: lower case, no leading articles.
func norm(x string) string {
	x = strings.ToLower(x)
	for again := true; again; {
		again = false
		for _, a := range []string{"a ", "an ", "the ", "my "} {
			if rest, ok := strings.CutPrefix(x, a); ok {
				x, again = rest, true
			}
		}
	}
	return x
}

func trailingPunct(r rune) bool {
	return unicode.IsSpace(r) || strings.ContainsRune(`.,!?;:"'…~〜、。！？；：「」『』()（）`, r)
}

func hasJapanese(s string) bool {
	for _, r := range s {
		if unicode.In(r, unicode.Hiragana, unicode.Katakana, unicode.Han) {
			return true
		}
	}
	return false
}

func halfWidth(s string) string {
	return strings.Map(func(r rune) rune {
		if r >= '０' && r <= '９' {
			return r - '０' + '0'
		}
		return r
	}, s)
}

// Command is a request to the memory, handled by rule, never by a model.
type Command int

// Commands.
const (
	None       Command = iota
	ForgetThat         // forget what was just said: the facts of the person's last message
	ForgetMe           // forget everything about the person, on every robot of the room
	Recall             // say what is remembered about the person
)

func (c Command) String() string {
	switch c {
	case ForgetThat:
		return "forget-that"
	case ForgetMe:
		return "forget-me"
	case Recall:
		return "recall"
	}
	return "none"
}

var enCommands = map[string]Command{
	"forget that": ForgetThat, "forget it": ForgetThat, "forget this": ForgetThat, "forget about that": ForgetThat,
	"forget about it": ForgetThat, "forget what i just said": ForgetThat, "forget what i said": ForgetThat,
	"forget what i just told you": ForgetThat, "forget what i told you": ForgetThat, "forget i said that": ForgetThat,
	"forget me": ForgetMe, "forget everything about me": ForgetMe, "forget all about me": ForgetMe,
	"forget about me": ForgetMe, "forget my name": ForgetMe, "forget everything": ForgetMe, "forget everything i told you": ForgetMe,
	"forget everything i said": ForgetMe, "forget all i told you": ForgetMe, "delete my data": ForgetMe, "delete my information": ForgetMe,
	"erase my data": ForgetMe, "delete me": ForgetMe, "erase me": ForgetMe,
	"forget everything you know about me": ForgetMe, "forget all you know about me": ForgetMe,
	"delete what you know about me": ForgetMe, "delete everything you know about me": ForgetMe,
	"delete everything about me": ForgetMe, "erase what you know about me": ForgetMe, "erase everything about me": ForgetMe,
	"what do you remember about me": Recall, "what do you know about me": Recall, "what have you remembered about me": Recall,
	"what do you remember of me": Recall, "what did you remember about me": Recall, "tell me what you remember about me": Recall,
	"tell me what you know about me": Recall,
}

// English openings that ask politely, skipped.
var enPolite = []string{"please", "can you", "could you", "would you", "will you", "i want you to", "i'd like you to", "i would like you to", "hey", "ok", "okay", "now", "just"}

// A first word that is not a name: stripping it could change the meaning
// ("don't forget me").
var notName = map[string]bool{"don't": true, "dont": true, "do": true, "never": true, "not": true, "won't": true, "wont": true,
	"i": true, "you": true, "we": true, "to": true, "didn't": true, "can't": true, "cannot": true, "shouldn't": true,
	"would": true, "will": true, "can": true, "could": true, "did": true, "let's": true, "lets": true, "and": true,
	"or": true, "if": true, "ever": true, "always": true, "i'll": true, "you'll": true, "please": true, "should": true, "must": true}

var (
	jaForgetThat = regexp.MustCompile(`^(?:(?:それ|これ|今の|いまの|さっきの)(?:を|は|も)?)?忘れて$`)
	jaForgetMe   = regexp.MustCompile(`^(?:` + jaI + `(?:のこと|について)?(?:を|は|も)?(?:全部|ぜんぶ|すべて|全て|みんな)?|全部|ぜんぶ|すべて|全て|みんな)(?:を)?忘れて$`)
	jaRecall     = regexp.MustCompile(`^` + jaI + `(?:のこと|について)(?:を|は|で)?(?:何を|なにを|何|なに|どんなことを)?(?:覚えてる|覚えている|覚えています|おぼえてる|知ってる|知っている|知っています)(?:の|か|こと)?$`)
	jaPolite     = []string{"ください", "下さい", "くれる", "くれ", "ほしい", "欲しい", "もらえる", "もらえますか", "もらえませんか",
		"くれますか", "くれませんか", "いただけますか", "いただけませんか", "ね", "よ", "な"}
)

// Control reads a request to the memory: "forget that", "forget me",
// "what do you remember about me" and their Japanese forms ("今のは忘れて",
// "私のことを忘れて", "私について何を覚えてる"). It is tolerant of a leading
// name, "please", punctuation and case; a message that only mentions
// forgetting ("don't forget the milk") is None.
func Control(text string) Command {
	if utf8.RuneCountInString(text) > 200 {
		return None
	}
	// Each sentence and clause on its own ("My name is Carol. Please
	// forget me.", "Forget me, Kyoko."): the strongest command wins.
	// A clause between commas counts only as "forget me", which nothing
	// else means ("forget it, let's talk about cats" is not a command).
	best := controlOne(text)
	for _, sentence := range strings.FieldsFunc(text, func(r rune) bool { return strings.ContainsRune(".!?;\n。！？；", r) }) {
		if c := controlOne(sentence); rank(c) > rank(best) {
			best = c
		}
		for _, clause := range strings.FieldsFunc(sentence, func(r rune) bool { return strings.ContainsRune(",、，", r) }) {
			if controlOne(clause) == ForgetMe {
				best = ForgetMe
			}
		}
	}
	return best
}

// rank orders commands for a message holding more than one: forgetting
// everything wins, then forgetting the last thing, then recalling.
func rank(c Command) int {
	switch c {
	case ForgetMe:
		return 3
	case ForgetThat:
		return 2
	case Recall:
		return 1
	}
	return 0
}

// controlOne is Control for one sentence or clause.
func controlOne(text string) Command {
	if hasJapanese(text) {
		return controlJA(text)
	}
	var b strings.Builder
	for _, r := range strings.ToLower(strings.ReplaceAll(text, "’", "'")) {
		if unicode.IsLetter(r) || unicode.IsDigit(r) || r == '\'' {
			b.WriteRune(r)
		} else {
			b.WriteByte(' ')
		}
	}
	words := strings.Fields(b.String())
	for len(words) > 0 && (words[len(words)-1] == "please" || words[len(words)-1] == "now") {
		words = words[:len(words)-1]
	}
	for skipped := 0; len(words) > 0; skipped++ {
		words = stripPolite(words)
		if c, ok := enCommands[strings.Join(words, " ")]; ok {
			return c
		}
		if skipped == 2 || len(words) == 0 || notName[words[0]] {
			return None
		}
		words = words[1:] // a name: "Kiko, forget that"
	}
	return None
}

func stripPolite(words []string) []string {
	for again := true; again; {
		again = false
		for _, p := range enPolite {
			pw := strings.Fields(p)
			if len(words) > len(pw) && strings.Join(words[:len(pw)], " ") == p {
				words, again = words[len(pw):], true
			}
		}
	}
	return words
}

func controlJA(text string) Command {
	parts := strings.FieldsFunc(text, func(r rune) bool { return strings.ContainsRune("、,，。.！!？?　 ～〜…", r) })
	for i := range parts {
		if i > 2 {
			break // a leading name or "ねえ" at most twice
		}
		s := strings.Join(parts[i:], "")
		for _, p := range []string{"お願い", "おねがい", "ねえ", "ねぇ", "ちょっと"} {
			s = strings.TrimPrefix(s, p)
		}
		for again := true; again; {
			again = false
			for _, p := range jaPolite {
				if t, ok := strings.CutSuffix(s, p); ok && t != "" {
					s, again = t, true
				}
			}
		}
		switch {
		case jaForgetMe.MatchString(s):
			return ForgetMe
		case jaRecall.MatchString(s):
			return Recall
		case jaForgetThat.MatchString(s):
			return ForgetThat
		}
	}
	return None
}

func japanese(lang string) bool {
	return strings.HasPrefix(strings.ToLower(strings.TrimSpace(lang)), "ja")
}

// Describe is the spoken answer to "what do you remember about me": the
// facts, in the second person in English ("likes green tea" → "you like
// green tea"), joined with "、" in Japanese.
func Describe(lang string, facts []Fact) string {
	if japanese(lang) {
		if len(facts) == 0 {
			return "まだあなたのことは何も覚えていません。"
		}
		var ts []string
		for _, f := range facts {
			ts = append(ts, strings.TrimRight(f.Text, "。."))
		}
		return "あなたについて覚えていること：" + strings.Join(ts, "、") + "。"
	}
	if len(facts) == 0 {
		return "I don't remember anything about you yet."
	}
	var ts []string
	for _, f := range facts {
		ts = append(ts, SecondPerson(strings.TrimRight(f.Text, ".")))
	}
	return "Here is what I remember about you: " + strings.Join(ts, "; ") + "."
}

// SecondPerson turns a fact about someone ("likes green tea", "name is
// Alice") into what to say to them ("you like green tea", "your name is
// Alice").
func SecondPerson(t string) string {
	first, rest, _ := strings.Cut(t, " ")
	switch strings.ToLower(first) {
	case "is":
		return "you are " + rest
	case "was":
		return "you were " + rest
	case "has":
		return "you have " + rest
	case "doesn't":
		return "you don't " + rest
	case "does":
		return "you do " + rest
	case "name", "favorite", "favourite", "job", "birthday", "age", "home", "wife", "husband", "son", "daughter", "mother", "father", "partner", "dog", "cat", "friend":
		return "your " + t
	}
	if rest == "" || !strings.HasSuffix(first, "s") || strings.HasSuffix(first, "ss") || first != strings.ToLower(first) {
		return t
	}
	switch second, _, _ := strings.Cut(rest, " "); second {
	case "is", "are", "was", "were":
		return "your " + t // "birthday is in May"
	}
	verb := first[:len(first)-1]
	switch {
	case strings.HasSuffix(first, "ies") && len(first) > 4:
		verb = first[:len(first)-3] + "y" // studies
	case strings.HasSuffix(first, "ches"), strings.HasSuffix(first, "shes"), strings.HasSuffix(first, "sses"), strings.HasSuffix(first, "xes"), first == "goes":
		verb = first[:len(first)-2]
	}
	return "you " + verb + " " + rest
}

// Acknowledge is the spoken reply to a command that changed the memory:
// n is how many facts it concerned.
func Acknowledge(lang string, c Command, n int) string {
	ja := japanese(lang)
	switch c {
	case ForgetThat:
		if n == 0 {
			return pick(ja, "There was nothing to forget.", "忘れることは何もありませんでした。")
		}
		return pick(ja, "Forgotten.", "忘れました。")
	case ForgetMe:
		return pick(ja, "I have forgotten everything about you.", "あなたのことは全部忘れました。")
	case Recall:
		if n == 0 {
			return pick(ja, "I don't remember anything about you yet.", "まだあなたのことは何も覚えていません。")
		}
		if ja {
			return fmt.Sprintf("あなたについて%d個のことを覚えています。", n)
		}
		if n == 1 {
			return "I remember one thing about you."
		}
		return fmt.Sprintf("I remember %d things about you.", n)
	}
	return ""
}

func pick(ja bool, en, jp string) string {
	if ja {
		return jp
	}
	return en
}
