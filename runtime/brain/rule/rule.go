// Package rule is an offline, deterministic brain that needs no model, so the
// demo and the tests run anywhere. It logs once that it is in use.
//
// Its rules:
//   - a message that names the companion (in "to", by id or by name) makes it
//     selected, importance 9;
//   - a question (?, ？, or Japanese か at the end) raises importance by 3;
//   - otherwise importance is 2..5, a fixed hash of companion and message;
//   - it speaks lines built from its card (sample lines) and the message it
//     answers, and every other turn hands the word to another companion by
//     name;
//   - after ClosingAfter turns (sooner when the runtime asks it to close) it
//     moves through pre-closing, closing and terminal, one stage per turn.
//
// In a realtime phase (Talk) it answers when named, asks another member a
// question when nobody has spoken to it for a while, listens otherwise, and
// says Over after OverAfter utterances of its own.
package rule

import (
	"context"
	"fmt"
	"hash/fnv"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/chorus-robotics/chorus/runtime/brain"
	"github.com/chorus-robotics/chorus/runtime/protocol"
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

func addressed(card brain.Card, m protocol.MessageParams) bool {
	if slices.Contains(m.To, card.ID) {
		return true
	}
	text := strings.ToLower(m.Message)
	return strings.Contains(text, strings.ToLower(card.ID)) || (card.Name != "" && strings.Contains(text, strings.ToLower(card.Name)))
}

func isQuestion(s string) bool {
	s = strings.TrimSpace(s)
	return strings.ContainsAny(s, "?？") || strings.HasSuffix(s, "か") || strings.HasSuffix(s, "か。")
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
	if isQuestion(m.Message) {
		t.Importance += 3
	}
	if addressed(in.Card, m) {
		t.Selected, t.Importance = true, 9
	}
	if t.Selected || t.Importance >= 4 {
		t.State = protocol.Speak
	}
	if t.Closing == protocol.ClosingTerminal {
		t.State = protocol.Listen
	}
	u := b.line(in, t.Closing)
	t.Draft, t.Emotion, t.To = u.Text, u.Emotion, u.To
	return t, nil
}

// Utter implements brain.Brain: the same line the draft would be.
func (b *Brain) Utter(ctx context.Context, in brain.Input) (brain.Utterance, error) {
	if err := ctx.Err(); err != nil {
		return brain.Utterance{}, err
	}
	return b.line(in, b.stage(in)), nil
}

func snippet(s string, n int) string {
	r := []rune(strings.TrimSpace(s))
	if len(r) > n {
		return string(r[:n]) + "…"
	}
	return string(r)
}

func (b *Brain) line(in brain.Input, stage protocol.Closing) brain.Utterance {
	c, m := in.Card, in.Message.Params
	ja := c.Language == "ja"
	sample := ""
	if len(c.SampleLines) > 0 {
		sample = c.SampleLines[int(hash(c.ID, m.ID, "line")%uint32(len(c.SampleLines)))]
	}
	u := brain.Utterance{Emotion: protocol.EmotionNeutral, To: []string{m.From}}
	switch stage {
	case protocol.ClosingPre:
		u.Text, u.Emotion = pick(ja, "そろそろ時間だね。", "It's getting late, isn't it?"), protocol.EmotionNeutral
		return u
	case protocol.ClosingClosing:
		u.Text, u.Emotion = pick(ja, "今日は話せて楽しかったよ、ありがとう！", "Thank you, I really enjoyed talking with you!"), protocol.EmotionHappy
		return u
	case protocol.ClosingTerminal:
		u.Text, u.Emotion = pick(ja, "それじゃあね、またね！", "Bye for now, see you!"), protocol.EmotionHappy
		return u
	}
	var others []string
	for _, p := range in.Present {
		if p != c.ID && p != m.From {
			others = append(others, p)
		}
	}
	var parts []string
	if slices.Contains(in.Present, m.From) {
		// Answering another companion: react to them by name, never quote
		// (quotes of quotes pile up).
		r := reactions(ja)
		parts = append(parts, fmt.Sprintf(r[int(hash(c.ID, m.ID, "react")%uint32(len(r)))], m.From))
	} else if ja {
		parts = append(parts, fmt.Sprintf("「%s」かあ。", snippet(m.Message, 16)))
	} else {
		parts = append(parts, fmt.Sprintf("%q, you say.", snippet(m.Message, 24)))
	}
	if sample != "" {
		parts = append(parts, sample)
	}
	if len(others) > 0 && in.Turn%2 == 0 {
		slices.Sort(others)
		o := others[int(hash(c.ID, m.ID, "other")%uint32(len(others)))]
		parts = append(parts, pick(ja, o+"はどう思う？", "What do you think, "+o+"?"))
		u.To = []string{o}
	}
	if hash(c.ID, m.ID, "mood")%3 == 0 {
		u.Emotion = protocol.EmotionHappy
	}
	sep := " "
	if ja {
		sep = ""
	}
	u.Text = strings.Join(parts, sep)
	return u
}

func reactions(ja bool) []string {
	if ja {
		return []string{"%sの話、いいね！", "へえ、そうなんだ、%s。", "なるほどね、%s。", "%s、それ面白い！"}
	}
	return []string{"That's lovely, %s!", "Really, %s?", "Oh, I see what you mean, %s.", "Ha, that's so like you, %s."}
}

func pick(ja bool, jaText, enText string) string {
	if ja {
		return jaText
	}
	return enText
}

// QuietAfter is how long a silence the rule brain lets pass before it
// speaks up in a realtime phase (and twice that before it says Over).
const QuietAfter = 2 * time.Second

// DefaultOverAfter is how many utterances the rule brain says in a
// realtime phase before it says Over.
const DefaultOverAfter = 3

// Talk implements the realtime mode's talk (runtime/realtime): an
// utterance, protocol.TalkListen or protocol.PostOver.
func (b *Brain) Talk(ctx context.Context, in brain.TalkInput) (string, error) {
	if err := b.think(ctx, in.Card.ID); err != nil {
		return "", err
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
		return protocol.PostOver, nil
	}
	var last protocol.Talk
	if n := len(in.History); n > 0 {
		last = in.History[n-1]
	}
	if in.Quiet >= 2*QuietAfter && mine > 0 {
		return protocol.PostOver, nil // the talk has died down
	}
	if last.Agent == c.ID {
		return protocol.TalkListen, nil // let the others answer
	}
	// Named in a question: answer it (an answer names its asker too, but
	// is no question: no ping-pong).
	named := last.Agent != "" && isQuestion(last.Text) && addressed(c, protocol.MessageParams{Message: last.Text})
	since := len(in.History) // entries since its own last words
	for i := len(in.History) - 1; i >= 0; i-- {
		if in.History[i].Agent == c.ID {
			since = len(in.History) - 1 - i
			break
		}
	}
	var statements, questions []string
	for _, l := range c.SampleLines {
		if isQuestion(l) {
			questions = append(questions, l)
		} else {
			statements = append(statements, l)
		}
	}
	choose := func(ls []string, salt string) string {
		if len(ls) == 0 {
			ls = c.SampleLines
		}
		if len(ls) == 0 {
			return ""
		}
		return ls[int(hash(c.ID, last.Text, salt)%uint32(len(ls)))]
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
		if isQuestion(last.Text) && addressed(brain.Card{ID: o}, protocol.MessageParams{Message: last.Text}) {
			askedOther = true
		}
	}
	switch {
	case named: // answer, without a question back (no ping-pong)
		return strings.TrimSpace(pick(ja, last.Agent+"、"+choose(statements, "answer"), last.Agent+", "+choose(statements, "answer"))), nil
	case len(others) == 0:
		return protocol.TalkListen, nil
	case askedOther && mine > 0 && since < 4 && in.Quiet < QuietAfter:
		return protocol.TalkListen, nil // someone else was asked: let them answer
	}
	// Everyone speaks once; and a stalled talk gets a new question.
	o := others[int(hash(c.ID, fmt.Sprint(len(in.History)), "ask")%uint32(len(others)))]
	return pick(ja, choose(statements, "say")+o+"はどう思う？", strings.TrimSpace(choose(statements, "say")+" What do you think, "+o+"?")), nil
}
