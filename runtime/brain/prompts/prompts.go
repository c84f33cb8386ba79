// Package prompts holds the brain's prompts as embedded template files
// (Japanese and English), after the seeds' state prompt
// (aikyo-turn-taking.ja.md) and closing instruction (aikyo-closing.ja.md).
//
// What was said in the room is untrusted: it is rendered as JSON, one
// object per line ({"from": ..., "text": ...}), so no message can forge a
// line of the conversation or of the prompt (a newline in a message is
// "\n" inside its string), and each text is clipped to MaxQuoted
// characters.
package prompts

import (
	"bytes"
	"embed"
	"encoding/json"
	"fmt"
	"strings"
	"text/template"

	"github.com/chorus-robotics/chorus/runtime/brain"
	"github.com/chorus-robotics/chorus/runtime/protocol"
)

//go:embed *.tmpl
var files embed.FS

// MaxQuoted bounds each message quoted in a prompt, in characters.
const MaxQuoted = 1000

var tmpl = template.Must(template.New("").Funcs(template.FuncMap{
	"join":    strings.Join,
	"said":    said,
	"history": history,
	"talks":   talks,
}).ParseFS(files, "*.tmpl"))

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

// Data is what the templates see.
type Data struct {
	brain.Input
	Draft bool // ask for the draft utterance in the state prompt
}

// Say is the texts in the card's language, for the templates.
func (d Data) Say() Texts { return TextsFor(d.Card.Language) }

func render(name, lang string, d Data) (string, error) {
	if lang != "ja" {
		lang = "en"
	}
	var b bytes.Buffer
	if err := tmpl.ExecuteTemplate(&b, name+"."+lang+".tmpl", d); err != nil {
		return "", fmt.Errorf("prompt %s.%s: %w", name, lang, err)
	}
	return strings.TrimSpace(b.String()), nil
}

// System is the persona prompt.
func System(in brain.Input) (string, error) {
	return render("system", in.Card.Language, Data{Input: in})
}

// State is the state prompt (and, with draft, the request for the draft).
func State(in brain.Input, draft bool) (string, error) {
	return render("state", in.Card.Language, Data{Input: in, Draft: draft})
}

// Utter is the utterance prompt of the two-call path.
func Utter(in brain.Input) (string, error) { return render("utter", in.Card.Language, Data{Input: in}) }

// Talk is the realtime mode's prompt (the seed's talk_realtime): the
// phase's talk so far and the three answers (words, LISTEN, Over).
func Talk(in brain.TalkInput) (string, error) {
	lang := in.Card.Language
	if lang != "ja" {
		lang = "en"
	}
	var b bytes.Buffer
	if err := tmpl.ExecuteTemplate(&b, "talk."+lang+".tmpl", in); err != nil {
		return "", fmt.Errorf("prompt talk.%s: %w", lang, err)
	}
	return strings.TrimSpace(b.String()), nil
}

// Vision is the instruction sent with a camera image (the seed's
// visionKnowledge).
func Vision(lang string) (string, error) { return render("vision", lang, Data{}) }

// Repetition is the repetition judge's prompt (aikyo-closing.ja.md's
// repetitionJudge, asked of the companion's own model): the last window of
// the conversation, and a score from 0 to 1.
func Repetition(lang string, window []protocol.Message) (string, error) {
	return render("repetition", lang, Data{Input: brain.Input{History: window}})
}
