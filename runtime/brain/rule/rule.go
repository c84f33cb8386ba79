// Package rule is an offline, deterministic brain that needs no model, so the
// demo and the tests run anywhere. It logs once that it is in use.
//
// Its rules:
//   - a message for this companion alone (its only "to"), or one that asks
//     it a question by id or name, makes it selected, importance 9; being
//     one of several addressees raises importance to 6;
//   - a question (?, ？, or Japanese か at the end) raises importance by 3;
//   - otherwise importance is 2..5, a fixed hash of companion and message;
//   - its material comes from the card: sample lines and story are what it
//     says of itself; a card that speaks of riddles or puzzles tells riddles
//     (from a small stock, with answers, in English and Japanese);
//   - a person's message is answered first (person.go): by the name they
//     gave (from Input.Remembered or the conversation; never their
//     identity), a word on what they told of themselves, and a simple
//     question about themselves ("what is my name?", 「私の好きな果物は？」)
//     from their facts, or "I don't know yet — tell me?";
//   - a reply names the companion whose message it answers and is
//     addressed to it; it answers what it was asked — a riddle with the
//     answer, "what do you think" with an opinion, any other question with
//     its own line on the topic (the one sharing most words with it) —
//     and never quotes the message back; every other turn (a riddler:
//     every turn) it hands the word to another companion by name;
//   - no line, and no sentence of its material, is said twice in the
//     conversation it sees (its history); when all is said, a short
//     acknowledgement, never a counter;
//   - after ClosingAfter turns (sooner when the runtime asks it to close) it
//     moves through pre-closing, closing and terminal, one stage per turn.
//
// In a realtime phase (Talk) it answers when asked by name (and only
// then), listens while a question put to another is unanswered, has its
// say once — a line of its own and a question to a member who has not had
// theirs — and then says Over; it never says a line of the phase twice,
// and says Over after OverAfter utterances of its own or when it has
// nothing new to say. So the phase is question and answer, and it ends
// all_over at human speed too, not at its timeout.
package rule

import (
	"context"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode"

	"github.com/chorus-robotics/chorus/runtime/brain"
	"github.com/chorus-robotics/chorus/runtime/protocol"
	"github.com/chorus-robotics/chorus/runtime/tool"
)

// DefaultClosingAfter is the turn at which the rule brain starts closing.
const DefaultClosingAfter = 6

// Brain is the rule brain.
type Brain struct {
	ClosingAfter int
	// Delay is simulated thinking time before each Think answers, so a demo
	// paces like a model and tests can catch a companion mid-vote.
	Delay time.Duration
	Log   *slog.Logger
	once  sync.Once
}

var _ brain.Brain = (*Brain)(nil)

// New returns a rule brain that starts closing after closingAfter turns
// (0 means DefaultClosingAfter).
func New(closingAfter int, log *slog.Logger) *Brain {
	if closingAfter <= 0 {
		closingAfter = DefaultClosingAfter
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Brain{ClosingAfter: closingAfter, Log: log}
}

func hash(parts ...string) uint32 {
	h := fnv.New32a()
	for _, p := range parts {
		h.Write([]byte(p))
		h.Write([]byte{0})
	}
	return h.Sum32()
}

func (b *Brain) stage(in brain.Input) protocol.Closing {
	turn := in.Turn
	if in.ClosingInstruction != "" && turn < b.ClosingAfter {
		turn = b.ClosingAfter
	}
	switch {
	case turn < b.ClosingAfter:
		return protocol.ClosingNone
	case turn == b.ClosingAfter:
		return protocol.ClosingPre
	case turn == b.ClosingAfter+1:
		return protocol.ClosingClosing
	}
	return protocol.ClosingTerminal
}

// heardQuestion: speech to text writes no question mark, so a question
// the room heard (metadata source "voice") is known by how it starts,
// after a greeting ("hello robots what is the weather like today").
// Typed and robots' lines keep their punctuation and are not read so.
func heardQuestion(m protocol.MessageParams) bool {
	if !m.Heard() {
		return false
	}
	for _, w := range strings.Fields(strings.ToLower(m.Message)) {
		switch strings.Trim(w, ",.!") {
		case "hello", "hi", "hey", "robots", "robot", "everyone", "ok", "okay", "so", "":
			continue
		case "what", "who", "why", "where", "when", "how", "which", "whose",
			"is", "are", "do", "does", "did", "can", "could", "will", "would", "shall":
			return true
		}
		return false
	}
	return false
}

// think says once that the rule brain is in use, then takes its thinking
// time (brain.delay) unless ctx ends first.
func (b *Brain) think(ctx context.Context, companion string) error {
	b.once.Do(func() {
		b.Log.Info("brain: using the offline rule brain (no model); its lines are built from the card", "companion", companion)
	})
	if b.Delay > 0 {
		t := time.NewTimer(b.Delay)
		defer t.Stop()
		select {
		case <-t.C:
		case <-ctx.Done():
		}
	}
	return ctx.Err()
}

// Think implements brain.Brain.
func (b *Brain) Think(ctx context.Context, in brain.Input) (brain.Thought, error) {
	if err := b.think(ctx, in.Card.ID); err != nil {
		return brain.Thought{}, err
	}
	m := in.Message.Params
	t := brain.Thought{State: protocol.Listen, Importance: float64(2 + hash(in.Card.ID, m.ID)%4), Closing: b.stage(in)}
	if brain.IsQuestion(m.Message) || heardQuestion(m) {
		t.Importance += 3
	}
	if slices.Contains(m.To, in.Card.ID) {
		t.Importance = max(t.Importance, 6)
	}
	if brain.Addressed(in.Card, m) {
		t.Selected, t.Importance = true, 9
	}
	if personal(in) {
		t.Importance = max(t.Importance, 6) // a person told of themselves, or asked about themselves: answer them
	}
	if t.Selected || t.Importance >= 4 {
		t.State = protocol.Speak
	}
	if t.Closing == protocol.ClosingTerminal {
		t.State = protocol.Listen
	}
	u := b.line(in, t.Closing)
	t.Draft, t.Emotion, t.To = u.Text, u.Emotion, u.To
	if t.State == protocol.Speak && (slices.Contains(m.To, in.Card.ID) || brain.Addressed(in.Card, m)) {
		t.Actions = nod(in.Tools)
	}
	// The card's events: only what the runtime knows (the rule brain
	// judges no parameter), and the instruction they choose — which the
	// rule brain's lines do not follow.
	t.Events = brain.Merge(nil, in.Events)
	t.Instruction = in.Card.Events.Instruction(t.Events)
	return t, nil
}

// nod is the rule brain's one gesture: a companion spoken to nods as it
// answers, when its body has an action named nod (the emotion of its words
// shows on the body by itself).
func nod(tools []tool.Tool) []protocol.ActionRequest {
	for _, a := range tools {
		if a.Name == "nod" && a.Kind == tool.WithWords {
			return []protocol.ActionRequest{{Name: "nod", Args: json.RawMessage("{}")}}
		}
	}
	return nil
}

// Utter implements brain.Brain: the same line the draft would be.
func (b *Brain) Utter(ctx context.Context, in brain.Input) (brain.Utterance, error) {
	if err := ctx.Err(); err != nil {
		return brain.Utterance{}, err
	}
	return b.line(in, b.stage(in)), nil
}

// material is what a persona can say, from its card: statements (its
// sample lines and its story), the riddles it tells (a persona whose card
// speaks of riddles or puzzles), and the language's stock phrases.
type material struct {
	ja         bool
	statements []string
	questions  []string
	riddler    bool
}

// riddle is a riddle and its answer.
type riddle struct{ q, a string }

var riddles = map[bool][]riddle{
	false: {
		{"What has hands but cannot clap?", "a clock"},
		{"What has keys but opens no locks?", "a piano"},
		{"What gets wetter the more it dries?", "a towel"},
		{"What has a neck but no head?", "a bottle"},
	},
	true: {
		{"パンはパンでも食べられないパンはなーんだ？", "フライパン"},
		{"上は大水、下は大火事、なーんだ？", "お風呂"},
		{"使うほど小さくなるものはなーんだ？", "消しゴム"},
		{"見えているのに、さわれないものはなーんだ？", "影"},
	},
}

func isRiddleTalk(s string) bool {
	l := strings.ToLower(s)
	return strings.Contains(l, "riddle") || strings.Contains(l, "puzzle") || strings.Contains(s, "なぞなぞ")
}

func materialOf(c brain.Card) material {
	m := material{ja: c.Language == "ja"}
	m.riddler = isRiddleTalk(c.Personality)
	for _, l := range c.SampleLines {
		l = strings.TrimSpace(l)
		switch {
		case l == "":
		case isRiddleTalk(l) && !strings.ContainsAny(l, "?？"):
			m.riddler = true // "Here is a riddle for you." is never said without the riddle
		case brain.IsQuestion(l):
			m.questions = append(m.questions, l)
		default:
			m.statements = append(m.statements, l)
		}
	}
	if st := strings.TrimSpace(c.Story); st != "" {
		if m.ja {
			m.statements = append(m.statements, "わたしは"+strings.TrimSuffix(st, "。")+"なんだ。")
		} else if rest, ok := strings.CutPrefix(st, "A "); ok {
			m.statements = append(m.statements, "I'm a "+rest)
		} else if rest, ok := strings.CutPrefix(st, "An "); ok {
			m.statements = append(m.statements, "I'm an "+rest)
		}
	}
	return m
}

// book is everything said in the conversation so far, for never saying a
// line twice: a text counts as said when it was said as part of any line.
type book struct{ all string }

func said(in brain.Input) *book {
	var b strings.Builder
	for _, h := range in.History {
		b.WriteString(norm(h.Params.Message) + "\n")
	}
	b.WriteString(norm(in.Message.Params.Message) + "\n")
	return &book{all: b.String()}
}

func (b *book) has(text string) bool { return strings.Contains(b.all, norm(text)) }
func (b *book) add(text string)      { b.all += norm(text) + "\n" }

func norm(s string) string {
	return strings.ToLower(strings.Join(strings.Fields(s), " "))
}

// sentences splits a text after . ! ? and their Japanese forms.
func sentences(text string) []string {
	var out []string
	var b strings.Builder
	for _, r := range text {
		b.WriteRune(r)
		if strings.ContainsRune(".!?。！？", r) {
			if s := strings.TrimSpace(b.String()); s != "" {
				out = append(out, s)
			}
			b.Reset()
		}
	}
	if s := strings.TrimSpace(b.String()); s != "" {
		out = append(out, s)
	}
	return out
}

// fresh returns the first of options (in an order fixed by salt) whose
// text, formatted with args, was not said yet; "" when all were.
func fresh(used *book, salt string, options []string, args ...any) string {
	n := len(options)
	if n == 0 {
		return ""
	}
	start := int(hash(salt) % uint32(n))
	for i := range n {
		o := options[(start+i)%n]
		if len(args) > 0 {
			o = fmt.Sprintf(o, args...)
		}
		if !used.has(o) {
			return o
		}
	}
	return ""
}

// topical picks the unused statement that shares most words with the
// question (so "what did you do today?" gets a line about today).
func topical(used *book, question string, statements []string, salt string) string {
	words := map[string]bool{}
	for _, w := range strings.FieldsFunc(strings.ToLower(question), func(r rune) bool { return !unicode.IsLetter(r) }) {
		if len(w) > 3 && !stopWords[w] {
			words[w] = true
		}
	}
	best, score := "", -1
	for i, st := range statements {
		if used.has(st) {
			continue
		}
		n := 0
		for _, w := range strings.FieldsFunc(strings.ToLower(st), func(r rune) bool { return !unicode.IsLetter(r) }) {
			if words[w] {
				n++
			}
		}
		for _, k := range []string{"今日", "朝", "好き"} {
			if strings.Contains(question, k) && strings.Contains(st, k) {
				n++
			}
		}
		// ties go to a fixed, per-message order
		if n > score || (n == score && hash(salt, st)%2 == 0 && i > 0) {
			best, score = st, n
		}
	}
	return best
}

// stopWords carry no topic.
var stopWords = map[string]bool{"what": true, "hello": true, "everyone": true, "with": true, "that": true, "this": true,
	"your": true, "have": true, "about": true, "think": true, "would": true, "there": true, "they": true, "were": true}

// answerRiddle recognises a riddle of the stock and answers it.
func answerRiddle(ja bool, text string) string {
	for _, r := range riddles[ja] {
		if strings.Contains(text, r.q) {
			if ja {
				return "わかった、" + r.a + "でしょう！"
			}
			return "I know, it's " + r.a + "!"
		}
	}
	return ""
}

// line is the rule brain's utterance: at a closing stage, that stage's
// words; else it names the one it answers, answers what it was asked
// (a riddle, an opinion, a question about itself, with its own material),
// says something of its own, and every other turn hands the word to
// another companion — a riddle when the persona tells riddles. No line,
// and no sentence of its material, is said twice in a conversation.
func (b *Brain) line(in brain.Input, stage protocol.Closing) brain.Utterance {
	c, m := in.Card, in.Message.Params
	mat := materialOf(c)
	ja := mat.ja
	used := said(in)
	salt := c.ID + "/" + m.ID
	u := brain.Utterance{Emotion: protocol.EmotionNeutral, To: []string{m.From}}
	if m.From == c.ID {
		u.To = nil
	}
	switch stage {
	case protocol.ClosingPre:
		u.Text = fresh(used, salt, pick2(ja, []string{"そろそろ時間だね。", "ところで、もうこんな時間だね。", "今日はたくさん話したね。"},
			[]string{"It's getting late, isn't it?", "By the way, look at the time.", "We've talked a lot today, haven't we?"}))
		return done(u, ja, "pre")
	case protocol.ClosingClosing:
		u.Text, u.Emotion = fresh(used, salt, pick2(ja, []string{"今日は話せて楽しかったよ、ありがとう！", "ありがとう、いい時間だったね。", "話せてうれしかったよ、ありがとう。"},
			[]string{"Thank you, I really enjoyed talking with you!", "Thanks, that was a lovely chat.", "It was fun talking with you, thank you."})), protocol.EmotionHappy
		return done(u, ja, "closing")
	case protocol.ClosingTerminal:
		u.Text, u.Emotion = fresh(used, salt, pick2(ja, []string{"それじゃあね、またね！", "またね！", "じゃあ、またあとでね。"},
			[]string{"Bye for now, see you!", "See you!", "Goodbye, until next time!"})), protocol.EmotionHappy
		return done(u, ja, "terminal")
	}
	companion := m.From != c.ID && (slices.Contains(in.Members, m.From) || slices.Contains(in.Present, m.From))
	var parts []string
	// 1. Name the one it answers: a companion by its id, a person by
	// their remembered name (or none: never their raw identity), with a
	// word on what they told of themselves.
	aboutMe, name := false, ""
	if companion {
		name = m.From
		parts = append(parts, fresh(used, salt+"react", reactions(ja), m.From))
	} else if m.From != c.ID {
		var reply []string
		reply, aboutMe = replyTo(in, ja, used, salt)
		parts = append(parts, reply...)
		name = nameOf(known(in))
	}
	// 2. Answer what it was asked; 3. say something of its own.
	own := ""
	switch {
	case aboutMe: // answered from memory above: no material of its own
	case answerRiddle(ja, m.Message) != "":
		parts = append(parts, answerRiddle(ja, m.Message))
	case brain.IsQuestion(m.Message) && thinkQuestion(m.Message):
		parts = append(parts, fresh(used, salt+"opinion", opinions(ja)))
		own = topical(used, m.Message, mat.statements, salt)
	case brain.IsQuestion(m.Message):
		own = topical(used, m.Message, mat.statements, salt) // the answer is its own line on the topic
	default:
		own = topical(used, m.Message, mat.statements, salt)
	}
	if own != "" {
		parts = append(parts, own)
		used.add(own)
	}
	// 4. Every other turn, hand the word to another companion.
	var others []string
	for _, p := range in.Present {
		if p != c.ID && p != m.From && slices.Contains(append(slices.Clone(in.Members), in.Present...), p) {
			others = append(others, p)
		}
	}
	slices.Sort(others)
	if len(others) > 0 && (in.Turn%2 == 0 || mat.riddler) {
		o := others[int(hash(salt, "other")%uint32(len(others)))]
		ask := ""
		if mat.riddler {
			var qs []string
			for _, r := range riddles[ja] {
				qs = append(qs, r.q)
			}
			if q := fresh(used, salt+"riddle", qs); q != "" {
				ask = fmt.Sprintf(pick(ja, "%sに、なぞなぞだよ。%s", "Here is a riddle for you, %s: %s"), o, q)
			}
		}
		if ask == "" {
			ask = fresh(used, salt+"ask", pick2(ja, []string{"%sはどう思う？", "%sはどうかな？", "%sのおすすめは？"},
				[]string{"What do you think, %s?", "How about you, %s?", "And you, %s, what would you say?"}), o)
		}
		if ask != "" {
			parts = append(parts, ask)
			u.To = append(u.To, o)
		}
	}
	if hash(salt, "mood")%3 == 0 {
		u.Emotion = protocol.EmotionHappy
	}
	sep := " "
	if ja {
		sep = ""
	}
	var kept []string
	for _, p := range parts {
		if p != "" {
			kept = append(kept, p)
		}
	}
	u.Text = strings.Join(kept, sep)
	if u.Text == "" || used.has(u.Text) {
		// Everything it could say was said: a short acknowledgement, by
		// name when a name is known — never a counter, never an identity.
		u.Text = listening(used, salt, ja, name)
	}
	return u
}

// listening is a short acknowledgement not said yet (when every one was,
// the first again: a line said twice rather than a counter spoken).
func listening(used *book, salt string, ja bool, name string) string {
	var options []string
	switch {
	case name != "" && ja:
		options = []string{"うんうん、%sの言うとおりだね。", "なるほどね、%s。", "%s、もっと聞かせて。", "そうなんだ、%s。", "%s、それで？"}
	case name != "":
		options = []string{"Mm, I'm listening, %s.", "I see, %s.", "Tell me more, %s.", "Go on, %s.", "Right, %s."}
	case ja:
		options = []string{"うんうん、そうだね。", "なるほどね。", "もっと聞かせて。", "そうなんだ。", "それで？"}
	default:
		options = []string{"Mm, I'm listening.", "I see.", "Tell me more.", "Go on.", "Right."}
	}
	args := []any{}
	if name != "" {
		args = append(args, name)
	}
	if s := fresh(used, salt+"listening", options, args...); s != "" {
		return s
	}
	return fmt.Sprintf(options[0], args...)
}

// done fills a closing stage's words when every variant was said.
func done(u brain.Utterance, ja bool, stage string) brain.Utterance {
	if u.Text == "" {
		u.Text = pick(ja, "またね。", "Bye.")
	}
	return u
}

func greets(s string) bool {
	l := strings.ToLower(s)
	for _, g := range []string{"hello", "hi ", "good morning", "こんにちは", "おはよう", "こんばんは"} {
		if strings.Contains(l, g) {
			return true
		}
	}
	return false
}

// thinkQuestion: the message asks for an opinion.
func thinkQuestion(s string) bool {
	l := strings.ToLower(s)
	return strings.Contains(l, "what do you think") || strings.Contains(l, "what would you say") || strings.Contains(s, "どう思う")
}

func opinions(ja bool) []string {
	if ja {
		return []string{"わたしもそう思うよ。", "それ、いい考えだね。", "そういう見方もあるんだね。"}
	}
	return []string{"I think so too.", "I like that idea.", "I'd never thought of it that way."}
}

func reactions(ja bool) []string {
	if ja {
		return []string{"%sの話、いいね！", "へえ、そうなんだ、%s。", "なるほどね、%s。", "%s、それ面白い！", "%s、聞かせてくれてありがとう。"}
	}
	return []string{"That's lovely, %s!", "Oh, I see what you mean, %s.", "Ha, that's so like you, %s.", "That's interesting, %s!", "Thanks for telling us, %s."}
}

// lowerFirst lower-cases the first letter of an English sentence that
// follows a name ("ren, the sunflowers…"), but not "I".
func lowerFirst(s string) string {
	if s == "" || strings.HasPrefix(s, "I ") || strings.HasPrefix(s, "I'") {
		return s
	}
	r := []rune(s)
	r[0] = unicode.ToLower(r[0])
	return string(r)
}

func pick(ja bool, jaText, enText string) string {
	if ja {
		return jaText
	}
	return enText
}

func pick2(ja bool, jaTexts, enTexts []string) []string {
	if ja {
		return jaTexts
	}
	return enTexts
}

// QuietAfter is how long a silence the rule brain lets pass before it
// speaks up in a realtime phase (and twice that before it says Over).
const QuietAfter = 2 * time.Second

// DefaultOverAfter is how many utterances the rule brain says in a
// realtime phase before it says Over.
const DefaultOverAfter = 3

// Talk implements the realtime mode's talk (runtime/realtime): an
// utterance, protocol.TalkListen or protocol.PostOver. A companion named
// in a question nods as it answers, as in turn mode, when its body has a
// nod.
func (b *Brain) Talk(ctx context.Context, in brain.TalkInput) (brain.Utterance, error) {
	said, answered, err := b.talk(ctx, in)
	u := brain.Utterance{Text: said}
	if answered {
		u.Actions = nod(in.Tools)
	}
	return u, err
}

// talk is Talk's words, and whether they answer a question put to the
// companion by name.
func (b *Brain) talk(ctx context.Context, in brain.TalkInput) (said string, answered bool, err error) {
	if err := b.think(ctx, in.Card.ID); err != nil {
		return "", false, err
	}
	c := in.Card
	ja := c.Language == "ja"
	mine := 0
	for _, t := range in.History {
		if t.Agent == c.ID {
			mine++
		}
	}
	if mine >= DefaultOverAfter || in.Remaining <= 0 {
		return protocol.PostOver, false, nil
	}
	var last protocol.Talk
	if n := len(in.History); n > 0 {
		last = in.History[n-1]
	}
	if in.Quiet >= 2*QuietAfter && mine > 0 {
		return protocol.PostOver, false, nil // the talk has died down
	}
	if last.Agent == c.ID {
		switch {
		case hadSay(c, in.History) && !brain.IsQuestion(last.Text):
			return protocol.PostOver, false, nil // its say is done and asks nobody anything
		case hadSay(c, in.History) || !answer(c, in.History, len(in.History)-1):
			return protocol.TalkListen, false, nil // let the one it asked answer (after an answer, it has its say)
		}
	}
	// Named in a question: answer it (an answer names its asker too, but
	// is no question: no ping-pong).
	named := last.Agent != "" && brain.IsQuestion(last.Text) && brain.Addressed(c, protocol.MessageParams{Message: last.Text})
	var statements, questions []string
	for _, l := range c.SampleLines {
		if brain.IsQuestion(l) {
			questions = append(questions, l)
		} else {
			statements = append(statements, l)
		}
	}
	// Never a line twice in a phase: what was said is in the history.
	var b2 strings.Builder
	for _, t := range in.History {
		b2.WriteString(norm(t.Text) + "\n")
	}
	used := &book{all: b2.String()}
	choose := func(ls []string, salt string) string {
		if len(ls) == 0 {
			ls = c.SampleLines
		}
		if salt == "answer" {
			return topical(used, last.Text, ls, c.ID+last.Text)
		}
		return fresh(used, c.ID+last.Text+salt, ls)
	}
	var others []string
	for _, m := range in.Members {
		if m != c.ID {
			others = append(others, m)
		}
	}
	slices.Sort(others)
	askedOther := false
	for _, o := range others {
		if brain.IsQuestion(last.Text) && brain.Addressed(brain.Card{ID: o}, protocol.MessageParams{Message: last.Text}) {
			askedOther = true
		}
	}
	switch {
	case named: // answer, without a question back (no ping-pong)
		a := answerRiddle(ja, last.Text)
		if a == "" {
			a = choose(statements, "answer")
		}
		if a == "" {
			a = fresh(used, c.ID+last.Text, opinions(ja))
		}
		if a == "" {
			return protocol.TalkListen, false, nil
		}
		return strings.TrimSpace(pick(ja, last.Agent+"、"+a, last.Agent+", "+lowerFirst(a))), true, nil
	case len(others) == 0:
		return protocol.TalkListen, false, nil
	case askedOther && in.Quiet < QuietAfter:
		return protocol.TalkListen, false, nil // someone else was asked: let them answer
	case hadSay(c, in.History):
		return protocol.PostOver, false, nil // it has had its say
	}
	// Everyone has a say: a line of its own and a question to one who has
	// not had theirs (none left: the line alone). Who has nothing new
	// left to say says Over.
	var waiting []string
	for _, o := range others {
		if !hadSay(brain.Card{ID: o}, in.History) {
			waiting = append(waiting, o)
		}
	}
	say := choose(statements, "say")
	if say == "" {
		return protocol.PostOver, false, nil
	}
	if len(waiting) == 0 {
		return say, false, nil
	}
	o := waiting[int(hash(c.ID, fmt.Sprint(len(in.History)), "ask")%uint32(len(waiting)))]
	ask := fresh(used, c.ID+say, pick2(ja, []string{"%sはどう思う？", "%sはどうかな？", "%sのおすすめは？"},
		[]string{"What do you think, %s?", "How about you, %s?", "And you, %s, what would you say?"}), o)
	if materialOf(c).riddler {
		var qs []string
		for _, r := range riddles[ja] {
			qs = append(qs, r.q)
		}
		if q := fresh(used, c.ID+say, qs); q != "" {
			ask = fmt.Sprintf(pick(ja, "%sに、なぞなぞだよ。%s", "Here is a riddle for you, %s: %s"), o, q)
		}
	}
	sep := " "
	if ja {
		sep = ""
	}
	return strings.TrimSpace(say + sep + ask), false, nil
}

// answer reports whether the phase's entry i answers a question put to
// its speaker c by name in the entry before it.
func answer(c brain.Card, h []protocol.Talk, i int) bool {
	return i > 0 && h[i].Agent == c.ID && brain.IsQuestion(h[i-1].Text) && brain.Addressed(c, protocol.MessageParams{Message: h[i-1].Text})
}

// hadSay reports whether c has had its say in the phase: words of its own
// that were not the answer to a question put to it.
func hadSay(c brain.Card, h []protocol.Talk) bool {
	for i, t := range h {
		if t.Agent == c.ID && !answer(c, h, i) {
			return true
		}
	}
	return false
}
