package llm

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/chorus-robotics/chorus/runtime/brain"
	"github.com/chorus-robotics/chorus/runtime/protocol"
)

func TestParseThought(t *testing.T) {
	tests := []struct {
		name, in string
		draft    bool
		want     string // error substring; "" = ok
	}{
		{"full", `{"state":"speak","importance":6.5,"selected":false,"closing":"pre-closing","draft":{"message":"Let's wrap up.","to":["hana"],"emotion":"neutral"}}`, true, ""},
		{"no draft asked", `{"state":"listen","importance":0,"selected":false,"closing":"none"}`, false, ""},
		{"listen with empty draft", `{"state":"listen","importance":1,"selected":false,"closing":"none","draft":{"message":"","to":[],"emotion":"neutral"}}`, true, ""},
		{"closing absent is none", `{"state":"listen","importance":1,"selected":false}`, false, ""},
		{"fenced", "```json\n{\"state\":\"listen\",\"importance\":1,\"selected\":false,\"closing\":\"none\"}\n```", false, ""},
		{"unknown field", `{"state":"listen","importance":1,"selected":false,"closing":"none","mood":"x"}`, false, "unknown field"},
		{"no selected: not asked for", `{"state":"listen","importance":1,"closing":"none"}`, false, ""},
		{"bad closing", `{"state":"listen","importance":1,"selected":false,"closing":"bye"}`, false, "closing \"bye\""},
		{"negative importance", `{"state":"listen","importance":-2,"selected":false,"closing":"none"}`, false, "outside 0..10"},
		{"importance as string", `{"state":"listen","importance":"5","selected":false,"closing":"none"}`, false, "not the JSON"},
		{"speak with empty draft", `{"state":"speak","importance":5,"selected":false,"closing":"none","draft":{"message":" ","to":[],"emotion":"happy"}}`, true, "empty utterance"},
		{"bad emotion", `{"state":"speak","importance":5,"selected":false,"closing":"none","draft":{"message":"hi","to":[],"emotion":"ecstatic"}}`, true, "emotion"},
		{"draft missing", `{"state":"speak","importance":5,"selected":false,"closing":"none"}`, true, "draft missing"},
		{"two objects", `{"state":"listen","importance":1,"selected":false,"closing":"none"}{}`, false, "trailing"},
		{"prose", `I would like to speak.`, false, "not the JSON"},
		{"events", `{"state":"listen","importance":1,"selected":false,"closing":"none","events":{"need_response":true}}`, false, ""},
		{"events not an object", `{"state":"listen","importance":1,"selected":false,"closing":"none","events":[1]}`, false, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			th, err := ParseThought(tt.in, tt.draft)
			if tt.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				if th.Validate() != nil || th.Closing == "" {
					t.Fatalf("invalid thought %+v", th)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want %q", err, tt.want)
			}
		})
	}
}

func TestParseUtteranceDropsBadAddressees(t *testing.T) {
	u, err := ParseUtterance(json.RawMessage(`{"message":"Hi!","to":["hana","a/b",""],"emotion":"sad"}`))
	if err != nil || len(u.To) != 1 || u.To[0] != "hana" || u.Emotion != protocol.EmotionSad {
		t.Fatalf("%+v %v", u, err)
	}
}

// FuzzParseThought: whatever a model writes, the parser returns a valid
// Thought or an error, never a panic.
func FuzzParseThought(f *testing.F) {
	f.Add(`{"state":"speak","importance":6.5,"selected":false,"closing":"pre-closing","draft":{"message":"x","to":["hana"],"emotion":"neutral"}}`, true)
	f.Add("```json\n{}\n```", false)
	f.Fuzz(func(t *testing.T, s string, draft bool) {
		th, err := ParseThought(s, draft)
		if err == nil {
			if err := th.Validate(); err != nil {
				t.Fatalf("accepted an invalid thought: %v", err)
			}
			if draft && th.State == protocol.Speak && strings.TrimSpace(th.Draft) == "" {
				t.Fatal("accepted speak without a draft")
			}
		}
	})
}

// script is a Chatter that records requests and answers from a script.
type script struct {
	reqs    []Request
	answers []Response
}

func (s *script) Chat(_ context.Context, r Request) (Response, error) {
	s.reqs = append(s.reqs, r)
	if len(s.answers) == 0 {
		return Response{}, errors.New("script: no more answers")
	}
	a := s.answers[0]
	s.answers = s.answers[1:]
	return a, nil
}

// The tools are described, and the vision tool's failures told, in the
// card's language, with the seed's words (issue 18, defect 7).
func TestToolsAndVisionFailuresInTheCardsLanguage(t *testing.T) {
	const state = `{"state":"speak","importance":5,"selected":false,"closing":"none","draft":{"message":"ok","to":[],"emotion":"neutral"}}`
	looks := map[string]Looker{
		"no picture": func(context.Context) (Image, error) { return Image{}, errors.New("device cam1 is offline") },
		"empty":      func(context.Context) (Image, error) { return Image{MIME: "image/jpeg"}, nil },
	}
	want := map[string]map[string]string{
		"ja": {"no picture": "視覚情報の取得に失敗しました: device cam1 is offline", "empty": "視覚情報を取得しましたが、データが空でした。",
			"tool": "目で周りを見ます。", "speak": "発言する。", "to": "会話に参加したことのある全員"},
		"en": {"no picture": "Could not get visual information: device cam1 is offline", "empty": "Got visual information, but the data was empty.",
			"tool": "Look around with your eyes.", "speak": "Say something.", "to": "everyone who has taken part"},
	}
	for _, lang := range []string{"ja", "en"} {
		for kind, look := range looks {
			s := &script{answers: []Response{{ToolCalls: []ToolCall{{ID: "c1", Name: "vision", Args: json.RawMessage(`{}`)}}}, {Text: state}}}
			b := &Brain{Chat: s, Look: look, Draft: true}
			in := brain.Input{Card: brain.Card{ID: "hana", Name: "Hana", Language: lang},
				Message: protocol.NewMessage("m1", "user", nil, "What do you see?", ""), Remaining: -1}
			if _, err := b.Think(context.Background(), in); err != nil {
				t.Fatalf("%s %s: %v", lang, kind, err)
			}
			first, second := s.reqs[0], s.reqs[1]
			if len(first.Tools) != 1 || first.Tools[0].Description != want[lang]["tool"] {
				t.Errorf("%s: vision tool %+v", lang, first.Tools)
			}
			to, _ := json.Marshal(first.Schema)
			if !strings.Contains(string(to), want[lang]["to"]) {
				t.Errorf("%s: the draft's to is not described with the seed's guidance: %s", lang, to)
			}
			last := second.Turns[len(second.Turns)-1]
			if last.Role != Tool || last.Text != want[lang][kind] {
				t.Errorf("%s %s: the tool answered %q, want %q", lang, kind, last.Text, want[lang][kind])
			}
		}
		speak := SpeakTool(lang)
		p, _ := json.Marshal(speak.Parameters)
		if speak.Description != want[lang]["speak"] || !strings.Contains(string(p), want[lang]["to"]) {
			t.Errorf("%s: speak tool %q %s", lang, speak.Description, p)
		}
	}
}

func TestParseRepetition(t *testing.T) {
	tests := []struct {
		in   string
		want float64
		err  string
	}{
		{`{"score":0.85}`, 0.85, ""},
		{"```json\n{\"score\":0}\n```", 0, ""},
		{`{"score":1.5}`, 0, "from 0 to 1"},
		{`{"score":-0.1}`, 0, "from 0 to 1"},
		{`{}`, 0, "score is missing"},
		{`{"score":0.5,"why":"same thanks"}`, 0, "unknown field"},
		{`yes, it repeats`, 0, "repetition judge"},
	}
	for _, tt := range tests {
		got, err := ParseRepetition(tt.in)
		switch {
		case tt.err == "" && (err != nil || got != tt.want):
			t.Errorf("%q: %v, %v", tt.in, got, err)
		case tt.err != "" && (err == nil || !strings.Contains(err.Error(), tt.err)):
			t.Errorf("%q: error %v, want %q", tt.in, err, tt.err)
		}
	}
}

func FuzzParseRepetition(f *testing.F) {
	f.Add(`{"score":0.85}`)
	f.Add(`{"score":1e309}`)
	f.Add("```json\n{\"score\":0}\n```")
	f.Fuzz(func(t *testing.T, s string) {
		v, err := ParseRepetition(s)
		if err == nil && (v < 0 || v > 1 || v != v) {
			t.Fatalf("accepted score %v from %q", v, s)
		}
	})
}
