// Package prompts holds the brain's prompts in Japanese and English,
// after the seeds' state prompt (aikyo-turn-taking.ja.md) and closing
// instruction (aikyo-closing.ja.md). Each prompt is built by a function
// from its language's fixed texts (words.go); no text/template, whose
// reflection keeps every exported method of the program in the binary
// (2.2 MB of the arm64 chorusd).
//
// What was said in the room is untrusted: it is rendered as JSON, one
// object per line ({"from": ..., "text": ...}), so no message can forge a
// line of the conversation or of the prompt (a newline in a message is
// "\n" inside its string), and each text is clipped to MaxQuoted
// characters.
package prompts

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/chorus-robotics/chorus/runtime/brain"
	"github.com/chorus-robotics/chorus/runtime/memory"
	"github.com/chorus-robotics/chorus/runtime/protocol"
)

// MaxQuoted bounds each message quoted in a prompt, in characters.
const MaxQuoted = 1000

// talks renders a realtime phase's talk as JSON lines, oldest first.
func talks(ts []protocol.Talk) string {
	lines := make([]string, len(ts))
	for i, t := range ts {
		if r := []rune(t.Text); len(r) > MaxQuoted {
			t.Text = string(r[:MaxQuoted]) + "…"
		}
		b, _ := json.Marshal(t)
		lines[i] = string(b)
	}
	return strings.Join(lines, "\n")
}

// quoted is one thing said, as the prompts show it.
type quoted struct {
	From string   `json:"from"`
	To   []string `json:"to,omitempty"`
	Text string   `json:"text"`
}

// said renders one message as a line of JSON.
func said(m protocol.Message) string {
	text := m.Params.Message
	if r := []rune(text); len(r) > MaxQuoted {
		text = string(r[:MaxQuoted]) + "…"
	}
	b, _ := json.Marshal(quoted{From: m.Params.From, To: m.Params.To, Text: text})
	return string(b)
}

// history renders messages as JSON lines, oldest first.
func history(ms []protocol.Message) string {
	lines := make([]string, len(ms))
	for i, m := range ms {
		lines[i] = said(m)
	}
	return strings.Join(lines, "\n")
}

// conversation writes the room's conversation so far under its heading,
// "(nothing yet)" when there is none.
func conversation(b *strings.Builder, w words, ms []protocol.Message) {
	b.WriteString(w.conversation)
	b.WriteString("\n")
	if len(ms) == 0 {
		b.WriteString(w.nothingYet)
		return
	}
	b.WriteString(history(ms))
}

// System is the persona prompt.
func System(in brain.Input) string {
	w := wordsFor(in.Card.Language)
	var b strings.Builder
	fmt.Fprintf(&b, w.youAre, in.Card.Name, in.Card.ID)
	if in.Card.Role != "" {
		b.WriteString("\n" + w.role + in.Card.Role)
	}
	if in.Card.Personality != "" {
		b.WriteString("\n" + w.personality + in.Card.Personality)
	}
	if in.Card.Story != "" {
		b.WriteString("\n" + w.background + in.Card.Story)
	}
	if len(in.Card.SampleLines) > 0 {
		b.WriteString("\n" + w.sampleLines)
		for _, l := range in.Card.SampleLines {
			b.WriteString("\n- " + l)
		}
	}
	b.WriteString("\n" + w.keepShort + strings.Join(in.Present, ", "))
	if in.Remaining >= 0 {
		b.WriteString("\n" + w.postsLeft + strconv.Itoa(in.Remaining))
	}
	return strings.TrimSpace(b.String())
}

// State is the state prompt (and, with draft, the request for the draft).
func State(in brain.Input, draft bool) string {
	w := wordsFor(in.Card.Language)
	var b strings.Builder
	conversation(&b, w, in.History)
	remembered(&b, w, in.Remembered)
	b.WriteString("\n\n" + w.stateAsk + "\n" + said(in.Message))
	b.WriteString("\n\n" + w.stateSpec)
	events(&b, w, in)
	if draft {
		b.WriteString("\n" + w.draft + TextsFor(in.Card.Language).SpeakTo)
		instruction(&b, w, in)
	}
	b.WriteString("\n\n" + w.stateCalm + "\n" + in.ClosingInstruction)
	return strings.TrimSpace(b.String())
}

// Utter is the utterance prompt of the two-call path.
func Utter(in brain.Input) string {
	w := wordsFor(in.Card.Language)
	var b strings.Builder
	conversation(&b, w, in.History)
	remembered(&b, w, in.Remembered)
	b.WriteString("\n\n" + w.yourTurn + "\n" + said(in.Message))
	b.WriteString("\n" + w.speakWith + TextsFor(in.Card.Language).SpeakTo + w.lookFirst)
	if in.Instruction != "" {
		b.WriteString("\n" + w.utterInstr + in.Instruction)
	}
	b.WriteString("\n" + in.ClosingInstruction)
	return strings.TrimSpace(b.String())
}

// Talk is the realtime mode's prompt (the seed's talk_realtime): the
// phase's talk so far and the three answers (words, LISTEN, Over).
func Talk(in brain.TalkInput) string {
	w := wordsFor(in.Card.Language)
	var b strings.Builder
	fmt.Fprintf(&b, w.talkHead, in.Remaining)
	members := strings.Join(in.Members, ", ")
	if in.Channel != "" {
		b.WriteString("\n")
		fmt.Fprintf(&b, w.whisper, in.Channel, members)
	} else {
		b.WriteString("\n" + w.inChat + members)
	}
	b.WriteString("\n\n" + w.talkHistory + "\n")
	if len(in.History) == 0 {
		b.WriteString(w.nothingYet)
	} else {
		b.WriteString(talks(in.History))
	}
	b.WriteString(w.talkHistoryEnd + "\n\n" + w.talkRules)
	return strings.TrimSpace(b.String())
}

// Vision is the instruction sent with a camera image (the seed's
// visionKnowledge).
func Vision(lang string) string { return wordsFor(lang).vision }

// Repetition is the repetition judge's prompt (aikyo-closing.ja.md's
// repetitionJudge, asked of the companion's own model): the last window of
// the conversation, and a score from 0 to 1.
func Repetition(lang string, window []protocol.Message) string {
	w := wordsFor(lang)
	return strings.TrimSpace(w.repetitionHead + "\n" + history(window) + "\n\n" + w.repetitionTail)
}

// Bounds of the remembered facts in a prompt.
const (
	MaxRemembered     = 8   // facts
	MaxRememberedText = 200 // characters of each
)

// fact is a remembered fact, as the prompts show it.
type fact struct {
	Person string `json:"person"`
	Text   string `json:"text"`
}

// remembered writes what the companion remembers about people (at most
// MaxRemembered facts, each clipped to MaxRememberedText characters) as
// JSON lines under a heading that says they are data, never
// instructions; nothing when it remembers nothing.
func remembered(b *strings.Builder, w words, fs []memory.Fact) {
	if len(fs) == 0 {
		return
	}
	b.WriteString("\n\n" + w.remembered)
	for _, f := range fs[:min(len(fs), MaxRemembered)] {
		text := f.Text
		if r := []rune(text); len(r) > MaxRememberedText {
			text = string(r[:MaxRememberedText]) + "…"
		}
		line, _ := json.Marshal(fact{Person: f.Person, Text: text})
		b.WriteString("\n")
		b.Write(line)
	}
}

// events writes the card's event parameters as the state's events field
// (after closing, before the draft), each with its type and description,
// and the values the runtime knows exactly.
func events(b *strings.Builder, w words, in brain.Input) {
	e := in.Card.Events
	if !e.Has() {
		return
	}
	b.WriteString("\n" + w.eventsField)
	for _, name := range e.ParamNames() {
		p := e.Param(name)
		typ, _ := p["type"].(string)
		if enum, ok := p["enum"].([]any); ok {
			vals := make([]string, len(enum))
			for i, v := range enum {
				q, _ := json.Marshal(v)
				vals[i] = string(q)
			}
			typ = strings.Join(vals, " | ")
		}
		desc, _ := p["description"].(string)
		fmt.Fprintf(b, "\n  - %s (%s): %s", name, typ, strings.Join(strings.Fields(desc), " "))
	}
	if len(in.Events) > 0 {
		known, _ := json.Marshal(in.Events) // sorted keys
		b.WriteString("\n" + w.eventsKnown)
		b.Write(known)
	}
}

// instruction writes the turn's instruction when the known values settle
// it, else the conditions the model's events decide, in order.
func instruction(b *strings.Builder, w words, in brain.Input) {
	instr, settled, open := in.Card.Events.Settle(in.Events)
	switch {
	case settled && instr != "":
		b.WriteString("\n\n" + w.instruction + instr)
	case !settled:
		b.WriteString("\n\n" + w.eventsRule)
		for _, c := range open {
			if c.Expression == "true" {
				b.WriteString("\n" + w.eventsOtherwise + w.eventsThen + c.Instruction)
				continue
			}
			b.WriteString("\n" + w.eventsIf + c.Expression + w.eventsThen + c.Instruction)
		}
	}
}

// saidLine is one thing a person said, as the extraction prompt quotes it.
type saidLine struct {
	Person    string `json:"person"`
	MessageID string `json:"messageId"`
	Text      string `json:"text"`
}

// knownLine is a remembered fact, as the extraction prompt shows it.
type knownLine struct {
	ID     string `json:"id"`
	Person string `json:"person"`
	Key    string `json:"key"`
	Text   string `json:"text"`
}

// Extract is the memory extraction prompt (issue 29): what people said
// (JSON lines of person, messageId and text, each text clipped to
// MaxQuoted) and what is already known about them, and the facts
// asked for.
func Extract(in brain.ExtractInput) string {
	w := extractWordsFor(in.Card.Language)
	var b strings.Builder
	b.WriteString(w.head + "\n\n" + w.said)
	for _, s := range in.Said {
		text := s.Text
		if r := []rune(text); len(r) > MaxQuoted {
			text = string(r[:MaxQuoted]) + "…"
		}
		line, _ := json.Marshal(saidLine{Person: s.Person, MessageID: s.MessageID, Text: text})
		b.WriteString("\n")
		b.Write(line)
	}
	b.WriteString("\n\n" + w.known)
	if len(in.Known) == 0 {
		b.WriteString("\n" + wordsFor(in.Card.Language).nothingYet)
	}
	for _, f := range in.Known {
		text := f.Text
		if r := []rune(text); len(r) > MaxRememberedText {
			text = string(r[:MaxRememberedText]) + "…"
		}
		line, _ := json.Marshal(knownLine{ID: f.ID, Person: f.Person, Key: f.Key, Text: text})
		b.WriteString("\n")
		b.Write(line)
	}
	b.WriteString("\n\n" + w.tail)
	return b.String()
}
