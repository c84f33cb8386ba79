package rule

import (
	"regexp"
	"slices"
	"strings"
	"unicode"

	"github.com/chorus-robotics/chorus/runtime/brain"
	"github.com/chorus-robotics/chorus/runtime/memory"
)

// A person's message gets a reply to what they said before the
// companion's own material: their name, what they told about themselves
// (the memory's rules read it: memory.Extract), and an answer to a simple
// question about themselves from what is remembered of them.

// known is what the rule brain knows of the speaker, oldest first: the
// facts recalled about them (Input.Remembered holds only theirs, and
// others' names), then what they said of themselves in the conversation
// (before the memory is written, at its rest) and in their message.
func known(in brain.Input) []memory.Fact {
	from := in.Message.Params.From
	var out []memory.Fact
	for _, f := range in.Remembered {
		if f.Person == from {
			out = append(out, f)
		}
	}
	for _, m := range append(slices.Clone(in.History), in.Message) {
		if m.Params.From != from {
			continue
		}
		for _, st := range memory.Extract(m.Params.Message) {
			out = append(out, memory.Fact{Person: from, Key: st.Key, Text: st.Text})
		}
	}
	return out
}

// personal: a person's message tells something of themselves or asks
// about themselves.
func personal(in brain.Input) bool {
	m := in.Message.Params
	if m.From == in.Card.ID || slices.Contains(in.Members, m.From) || slices.Contains(in.Present, m.From) {
		return false
	}
	return len(memory.Extract(m.Message)) > 0 || askedAbout(in.Card.Language == "ja", m.Message) != ""
}

// nameOf is the person's name from facts ("" when none is known): the
// newest "name" fact, its text "name is Sam" or "名前はサム".
func nameOf(facts []memory.Fact) string {
	name := ""
	for _, f := range facts {
		if f.Key != "name" {
			continue
		}
		if v, ok := strings.CutPrefix(f.Text, "name is "); ok {
			name = v
		} else if v, ok := strings.CutPrefix(f.Text, "名前は"); ok {
			name = v
		}
	}
	return strings.TrimSpace(name)
}

// aboutMe is a question a person asks about themselves, and the key of
// the fact that answers it (a "like:" prefix: every like).
type aboutMe struct {
	re  *regexp.Regexp
	key string // "" takes the key from the first submatch, as "favorite " + it
}

var enAboutMe = []aboutMe{
	{regexp.MustCompile(`\b(?:what(?:'s| is)|whats|do you (?:know|remember)|tell me|say) my name\b|\bwho am i\b`), "name"},
	{regexp.MustCompile(`\bmy (?:favou?rite|fave|fav) ([a-z]+(?: [a-z]+)?)\b`), ""},
	{regexp.MustCompile(`\bwhat (?:kind of |sort of )?([a-z]+) do i (?:like|love|prefer)\b`), ""}, // "what fruit do I like"
	{regexp.MustCompile(`\bwhat do i (?:like|love|enjoy)\b`), "like:"},
	{regexp.MustCompile(`\bwhere do i live\b|\bwhere(?:'s| is) my home\b|\bwhere am i living\b`), "home"},
	{regexp.MustCompile(`\bhow old am i\b|\bmy age\b`), "age"},
	{regexp.MustCompile(`\bmy job\b|\bwhat do i do for (?:a )?(?:living|work)\b|\bwhat (?:is|'s) my work\b`), "job"},
}

var jaAboutMe = []aboutMe{
	{regexp.MustCompile(`(?:私|わたし|僕|ぼく|俺|おれ|あたし)の名前|(?:私|わたし|僕|ぼく|俺|おれ|あたし)は(?:誰|だれ)`), "name"},
	{regexp.MustCompile(`好きな(\p{Han}+|\p{Katakana}+|\p{Hiragana}{1,4}?)(?:は|って|を|が)`), ""},
	{regexp.MustCompile(`何が好き|なにが好き`), "like:"},
	{regexp.MustCompile(`どこに住んで|どこに住ん|住んでいるところ|住んでる所`), "home"},
	{regexp.MustCompile(`何歳|なんさい|年齢`), "age"},
	{regexp.MustCompile(`仕事は(?:何|なに)|何の仕事|なんの仕事`), "job"},
}

// askedAbout is the key of the fact a question of the person's asks for
// ("" when the message asks nothing about them). Only its questions are
// read ("My favourite fruit is mango. What do you think?" asks nothing
// about them); speech to text writes no question mark, so a message
// without one is read by its question words.
func askedAbout(ja bool, text string) string {
	marked := strings.ContainsAny(text, "?？")
	for _, s := range sentences(text) {
		if marked && !strings.ContainsAny(s, "?？") {
			continue
		}
		if ja {
			if !marked && !strings.ContainsAny(s, "何誰") && !strings.Contains(s, "どこ") {
				continue
			}
			if k := matchAboutMe(jaAboutMe, s); k != "" {
				return k
			}
			continue
		}
		l := strings.ToLower(strings.ReplaceAll(s, "’", "'"))
		if !marked && !enQuestionWord.MatchString(l) {
			continue
		}
		if k := matchAboutMe(enAboutMe, l); k != "" {
			return k
		}
	}
	return ""
}

var enQuestionWord = regexp.MustCompile(`\b(?:what|what's|whats|who|where|how|do you)\b`)

func matchAboutMe(rules []aboutMe, text string) string {
	for _, r := range rules {
		if m := r.re.FindStringSubmatch(text); m != nil {
			if r.key != "" {
				return r.key
			}
			switch x := strings.TrimSpace(m[1]); x {
			case "else", "things", "stuff", "thing":
				return "like:" // "what else do I like"
			default:
				return "favorite " + x
			}
		}
	}
	return ""
}

// answerAboutMe is the answer to a question about the person from facts
// (the speaker's only), honest when none answers it.
func answerAboutMe(ja bool, key string, facts []memory.Fact) string {
	var ts []string
	for _, f := range facts {
		match := f.Key == key || sameFavorite(f.Key, key)
		if key == "like:" { // what they like: their likes and favourites
			match = strings.HasPrefix(f.Key, "like:") || strings.HasPrefix(f.Key, "favorite ")
		}
		if match && !slices.Contains(ts, f.Text) {
			ts = append(ts, f.Text)
		}
	}
	if key != "like:" && len(ts) > 1 {
		ts = ts[len(ts)-1:] // the newest says it
	}
	if len(ts) > 3 {
		ts = ts[len(ts)-3:]
	}
	if len(ts) == 0 {
		return pick(ja, "まだ知らないんだ。教えてくれる？", "I don't know yet — tell me?")
	}
	if ja {
		for i, t := range ts {
			ts[i] = jaYou(t) + "よね"
		}
		return strings.Join(ts, "、") + "。"
	}
	for i, t := range ts {
		ts[i] = memory.SecondPerson(t)
	}
	return upperFirst(strings.Join(ts, ", and ")) + "."
}

// sameFavorite: a fact's key and a question's are the same favourite,
// whatever the spelling ("favorite colour", "favorite color") and
// whatever follows in the question ("favorite fruit to eat").
func sameFavorite(fact, asked string) bool {
	f, ok1 := strings.CutPrefix(fact, "favorite ")
	a, ok2 := strings.CutPrefix(asked, "favorite ")
	if !ok1 || !ok2 {
		return false
	}
	f, a = strings.ReplaceAll(f, "our", "or"), strings.ReplaceAll(a, "our", "or")
	return f == a || strings.HasPrefix(a, f+" ")
}

// jaYou is a Japanese fact said to its person: "名前はサム" →
// "あなたの名前はサムだ", "京都に住んでいる" → "京都に住んでいる".
func jaYou(t string) string {
	t = strings.TrimRight(t, "。")
	for _, p := range []string{"名前は", "好きな", "仕事は"} {
		if strings.HasPrefix(t, p) {
			t = "あなたの" + t
		}
	}
	if strings.HasSuffix(t, "る") || strings.HasSuffix(t, "ない") {
		return t
	}
	return t + "だ"
}

// replyTo is what the companion says first to a person's message: a
// greeting by name, a word on what they told about themselves, the
// answer to a question about themselves. It tells whether the message
// asked about the person (then no material of its own follows).
func replyTo(in brain.Input, ja bool, used *book, salt string) (parts []string, asked bool) {
	text := in.Message.Params.Message
	facts := known(in)
	name := nameOf(facts)
	told := memory.Extract(text)
	introduced := false
	for _, st := range told {
		introduced = introduced || st.Key == "name"
	}
	switch {
	case greets(text) && name != "":
		parts = append(parts, fresh(used, salt+"hello", pick2(ja, []string{"こんにちは、%s！", "やあ、%s！"}, []string{"Hello, %s!", "Hi, %s!"}), name))
	case greets(text):
		parts = append(parts, fresh(used, salt+"hello", pick2(ja, []string{"こんにちは！", "やあ、こんにちは！"}, []string{"Hello!", "Hi there!"})))
	case introduced:
		parts = append(parts, fresh(used, salt+"meet", pick2(ja, []string{"よろしくね、%s！", "はじめまして、%s！"}, []string{"Nice to meet you, %s!", "Lovely to meet you, %s!"}), name))
	}
	n := 0
	for _, st := range told {
		if st.Key == "name" || n == 2 {
			continue
		}
		n++
		if ja {
			t := strings.TrimRight(st.Text, "。")
			switch {
			case strings.HasSuffix(t, "る") || strings.HasSuffix(t, "ない"):
				parts = append(parts, t+"んだね！")
			case strings.HasSuffix(t, "嫌い"):
				parts = append(parts, t+"なんだね。")
			default:
				parts = append(parts, t+"なんだね、いいね！")
			}
			continue
		}
		you := memory.SecondPerson(st.Text)
		if strings.HasPrefix(you, "you don't") {
			parts = append(parts, fresh(used, salt+"told", []string{"So %s — noted.", "Ah, %s — good to know."}, you))
			continue
		}
		parts = append(parts, fresh(used, salt+"told", []string{"So %s — nice!", "Oh, %s — good to know!"}, you))
	}
	if key := askedAbout(ja, text); key != "" {
		parts = append(parts, answerAboutMe(ja, key, facts))
		asked = true
	}
	if strings.Contains(strings.ToLower(text), "favourite") { // the person's spelling
		for i := range parts {
			parts[i] = strings.ReplaceAll(parts[i], "favorite", "favourite")
		}
	}
	return parts, asked
}

func upperFirst(s string) string {
	r := []rune(s)
	if len(r) == 0 {
		return s
	}
	r[0] = unicode.ToUpper(r[0])
	return string(r)
}
