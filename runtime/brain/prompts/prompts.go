// Package prompts holds the brain's prompts as embedded template files
// (Japanese and English), after the seeds' state prompt
// (aikyo-turn-taking.ja.md) and closing instruction (aikyo-closing.ja.md).
package prompts

import (
	"bytes"
	"embed"
	"encoding/json"
	"fmt"
	"strings"
	"text/template"

	"github.com/chorus-robotics/chorus/runtime/brain"
)

//go:embed *.tmpl
var files embed.FS

var tmpl = template.Must(template.New("").Funcs(template.FuncMap{
	"join": strings.Join,
	"json": func(v any) string {
		b, _ := json.MarshalIndent(v, "", "  ")
		return string(b)
	},
}).ParseFS(files, "*.tmpl"))

// Data is what the templates see.
type Data struct {
	brain.Input
	Draft bool // ask for the draft utterance in the state prompt
}

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

// Vision is the instruction sent with a camera image (the seed's
// visionKnowledge).
func Vision(lang string) (string, error) { return render("vision", lang, Data{}) }
