package rule

import (
	"context"
	"strings"
	"testing"

	"github.com/chorus-robotics/chorus/runtime/brain"
	"github.com/chorus-robotics/chorus/runtime/protocol"
	"github.com/chorus-robotics/chorus/runtime/tool"
)

var card = brain.Card{ID: "kyoko", Name: "Kyoko", Personality: "cheerful", SampleLines: []string{"I love tea."}, Language: "en"}

func in(text string, to []string, turn int) brain.Input {
	return brain.Input{Card: card, Message: protocol.NewMessage("m-"+text, "user", to, text, ""), Turn: turn, Present: []string{"kyoko", "hana", "aya"}, Remaining: -1}
}

func TestThink(t *testing.T) {
	b := New(3, nil)
	tests := []struct {
		name     string
		in       brain.Input
		selected bool
		state    protocol.Speech
		closing  protocol.Closing
		minImp   float64
	}{
		{"named in to", in("hello", []string{"kyoko"}, 0), true, protocol.Speak, protocol.ClosingNone, 9},
		{"named in text", in("Kyoko, tea?", nil, 0), true, protocol.Speak, protocol.ClosingNone, 9},
		{"question raises importance", in("what is tea?", nil, 0), false, protocol.Speak, protocol.ClosingNone, 5},
		{"pre-closing at the turn", in("hi", []string{"kyoko"}, 3), true, protocol.Speak, protocol.ClosingPre, 9},
		{"closing next", in("hi", []string{"kyoko"}, 4), true, protocol.Speak, protocol.ClosingClosing, 9},
		{"terminal listens", in("hi", []string{"kyoko"}, 5), true, protocol.Listen, protocol.ClosingTerminal, 9},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := b.Think(context.Background(), tt.in)
			if err != nil {
				t.Fatal(err)
			}
			if got.Selected != tt.selected || got.State != tt.state || got.Closing != tt.closing || got.Importance < tt.minImp {
				t.Fatalf("got %+v", got)
			}
			if err := got.Validate(); err != nil {
				t.Fatal(err)
			}
			if got.Draft == "" {
				t.Fatal("empty draft")
			}
		})
	}
}

func TestDeterministicAndCardBased(t *testing.T) {
	b := New(0, nil)
	x, _ := b.Think(context.Background(), in("tell me about tea", nil, 0))
	y, _ := b.Think(context.Background(), in("tell me about tea", nil, 0))
	if x.Draft != y.Draft || x.Importance != y.Importance {
		t.Fatalf("not deterministic: %+v vs %+v", x, y)
	}
	if !strings.Contains(x.Draft, "I love tea.") || strings.Contains(x.Draft, "tell me about tea") {
		t.Fatalf("draft %q does not use the card, or quotes the message back", x.Draft)
	}
	u, _ := b.Utter(context.Background(), in("tell me about tea", nil, 0))
	if u.Text != x.Draft {
		t.Fatalf("utterance %q differs from draft %q", u.Text, x.Draft)
	}
}

func TestClosingInstructionHurriesTheEnd(t *testing.T) {
	b := New(10, nil)
	i := in("again", nil, 1)
	i.ClosingInstruction = brain.ClosingInstruction("en")
	got, _ := b.Think(context.Background(), i)
	if got.Closing != protocol.ClosingPre {
		t.Fatalf("closing %q, want pre-closing", got.Closing)
	}
}

func TestJapanese(t *testing.T) {
	c := card
	c.Language, c.SampleLines = "ja", []string{"お茶が好きです。"}
	b := New(0, nil)
	got, _ := b.Think(context.Background(), brain.Input{Card: c, Message: protocol.NewMessage("m1", "user", nil, "今日は何をしたの？", ""), Present: []string{"kyoko", "hana"}})
	if !got.Selected && got.Importance < 5 {
		t.Fatalf("a Japanese question must raise importance: %+v", got)
	}
	if !strings.Contains(got.Draft, "お茶が好きです。") || !strings.Contains(got.Draft, "hanaは") {
		t.Fatalf("draft %q", got.Draft)
	}
}

// In a realtime phase the rule brain answers when named, asks someone a
// question, listens while its question is open, and says Over after
// DefaultOverAfter utterances of its own (issue 12).
func TestTalk(t *testing.T) {
	b := New(0, nil)
	card := brain.Card{ID: "ann", Name: "Ann", SampleLines: []string{"I like tea."}, Language: "en"}
	talk := func(h ...protocol.Talk) string {
		t.Helper()
		u, err := b.Talk(context.Background(), brain.TalkInput{Card: card, Remaining: 10, History: h, Members: []string{"ann", "ben", "cat"}})
		if err != nil {
			t.Fatal(err)
		}
		return u.Text
	}
	if s := talk(protocol.Talk{Idx: 0, Agent: "user", Text: "Good morning!"}); !strings.Contains(s, "What do you think,") {
		t.Errorf("first words: %q, want a question to another member", s)
	}
	if s := talk(protocol.Talk{Idx: 1, Agent: "ben", Text: "Ann, do you like tea?"}); !strings.HasPrefix(s, "ben, ") {
		t.Errorf("named: %q, want an answer to ben", s)
	}
	if s := talk(protocol.Talk{Idx: 1, Agent: "ben", Text: "Hi."}, protocol.Talk{Idx: 2, Agent: "ann", Text: "Hi, ben. Do you like tea?"}); s != protocol.TalkListen {
		t.Errorf("right after its own question: %q, want LISTEN", s)
	}
	h := []protocol.Talk{{Agent: "ann"}, {Agent: "ben"}, {Agent: "ann"}, {Agent: "cat"}, {Agent: "ann"}, {Agent: "ben", Text: "Ann?"}}
	if s := talk(h...); s != protocol.PostOver {
		t.Errorf("after three of its own: %q, want Over", s)
	}
	ja := card
	ja.Language, ja.SampleLines = "ja", []string{"お茶が好き。"}
	u, _ := b.Talk(context.Background(), brain.TalkInput{Card: ja, Remaining: 3, History: []protocol.Talk{{Agent: "ben", Text: "annさん、元気？"}}, Members: []string{"ann", "ben"}})
	if !strings.HasPrefix(u.Text, "ben、") {
		t.Errorf("ja, named: %q", u.Text)
	}
}

// In a realtime phase the talk is question and answer: a question put to
// another is left to them, even by one that has not spoken yet; one that
// answered has its say next (a line and a question to one who has not had
// theirs, or the line alone when everyone has); one that has had its say
// says Over. Before, a robot that had not spoken talked over the question
// put to another, riddles went unanswered, and at human speed the phase
// ran into its timeout.
func TestTalkHasItsSayOnce(t *testing.T) {
	card := brain.Card{ID: "ann", Name: "Ann", SampleLines: []string{"I like tea.", "I walked to the bridge."}, Language: "en"}
	for _, tc := range []struct {
		name  string
		h     []protocol.Talk
		check func(s string) bool
	}{
		{"another asked", []protocol.Talk{{Agent: "ben", Text: "I like cake. What do you think, cat?"}},
			func(s string) bool { return s == protocol.TalkListen }},
		{"after its answer, its say", []protocol.Talk{{Agent: "ben", Text: "I like cake. Ann, do you like tea?"}, {Agent: "ann", Text: "ben, I like tea."}},
			func(s string) bool {
				return strings.Contains(s, "cat") && strings.Contains(s, "?") && !strings.Contains(s, "ben")
			}},
		{"everyone had their say: the line alone", []protocol.Talk{{Agent: "ben", Text: "I like cake. Ann, do you like tea?"}, {Agent: "ann", Text: "ben, I like tea."},
			{Agent: "cat", Text: "I like milk. What do you think, ben?"}, {Agent: "ben", Text: "cat, milk is fine."}},
			func(s string) bool {
				return s != protocol.TalkListen && s != protocol.PostOver && !strings.Contains(s, "?")
			}},
		{"had its say, answered", []protocol.Talk{{Agent: "ann", Text: "I like tea. What do you think, ben?"}, {Agent: "ben", Text: "ann, I like cake."}},
			func(s string) bool { return s == protocol.PostOver }},
		{"had its say, said last", []protocol.Talk{{Agent: "ben", Text: "I like cake. Ann, do you like tea?"}, {Agent: "ann", Text: "ben, I like tea."},
			{Agent: "ann", Text: "I walked to the bridge."}},
			func(s string) bool { return s == protocol.PostOver }},
	} {
		u, err := New(0, nil).Talk(context.Background(), brain.TalkInput{Card: card, Remaining: 4, History: tc.h, Members: []string{"ann", "ben", "cat"}})
		if err != nil {
			t.Fatal(err)
		}
		if !tc.check(u.Text) {
			t.Errorf("%s: %q", tc.name, u.Text)
		}
	}
}

// A heard sentence has no question mark: its first words say it asks;
// a typed or a robot's line is read by its punctuation only.
func TestHeardQuestion(t *testing.T) {
	voice := func(s string) protocol.MessageParams {
		return protocol.MessageParams{Message: s, Metadata: map[string]any{protocol.MetaSource: protocol.SourceVoice}}
	}
	for _, tt := range []struct {
		m    protocol.MessageParams
		want bool
	}{
		{voice("hello robots what is the weather like today"), true},
		{voice("hey robot do you like music"), true},
		{voice("good morning everyone"), false},
		{voice("oh i see what you mean"), false},
		{protocol.MessageParams{Message: "hello robots what is the weather like today"}, false},
	} {
		if got := brain.IsQuestion(tt.m.Message) || heardQuestion(tt.m); got != tt.want {
			t.Errorf("%q (%v): question %v, want %v", tt.m.Message, tt.m.Metadata, got, tt.want)
		}
	}
}

func TestNodsWhenAddressedIfTheBodyCanNod(t *testing.T) {
	nodDef := protocol.ActionDef{Name: "nod", Description: "Nod.", Schema: []byte(`{"type":"object"}`)}
	card := brain.Card{ID: "kai", Name: "Kai", Language: "en"}
	cases := []struct {
		name    string
		to      []string
		actions []protocol.ActionDef
		want    int
	}{
		{"addressed, can nod", []string{"kai"}, []protocol.ActionDef{nodDef}, 1},
		{"addressed, no nod", []string{"kai"}, nil, 0},
		{"not addressed", []string{"mia"}, []protocol.ActionDef{nodDef}, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			in := brain.Input{Card: card, Message: protocol.NewMessage("m1", "user", c.to, "How are you today?", ""), Tools: tool.Actions(c.actions), Remaining: -1}
			th, err := New(10, nil).Think(context.Background(), in)
			if err != nil {
				t.Fatal(err)
			}
			if len(th.Actions) != c.want {
				t.Fatalf("actions %+v, want %d (state %s)", th.Actions, c.want, th.State)
			}
		})
	}
}

// In a realtime room too, a companion asked a question by name nods as it
// answers, when its body can; its other words take no action.
func TestTalkNodsWhenAskedByName(t *testing.T) {
	nodDef := protocol.ActionDef{Name: "nod", Description: "Nod.", Schema: []byte(`{"type":"object"}`)}
	card := brain.Card{ID: "ann", Name: "Ann", SampleLines: []string{"I like tea."}, Language: "en"}
	cases := []struct {
		name    string
		last    protocol.Talk
		actions []protocol.ActionDef
		want    int
	}{
		{"asked by name, can nod", protocol.Talk{Idx: 1, Agent: "ben", Text: "Ann, do you like tea?"}, []protocol.ActionDef{nodDef}, 1},
		{"asked by name, no nod", protocol.Talk{Idx: 1, Agent: "ben", Text: "Ann, do you like tea?"}, nil, 0},
		{"not asked", protocol.Talk{Idx: 0, Agent: "user", Text: "Good morning!"}, []protocol.ActionDef{nodDef}, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			u, err := New(0, nil).Talk(context.Background(), brain.TalkInput{Card: card, Remaining: 10, History: []protocol.Talk{c.last},
				Members: []string{"ann", "ben", "cat"}, Tools: tool.Actions(c.actions)})
			if err != nil {
				t.Fatal(err)
			}
			if u.Text == protocol.TalkListen || u.Text == protocol.PostOver || len(u.Actions) != c.want {
				t.Fatalf("talk %+v, want words and %d actions", u, c.want)
			}
		})
	}
}

// The rule brain's events are the known ones, and its instruction the
// one their conditions choose, as the LLM brain's (brain.Events).
func TestRuleEvents(t *testing.T) {
	c := brain.Card{ID: "kyoko", Name: "Kyoko", Language: "en", Events: brain.Events{
		Params: map[string]any{"type": "object", "properties": map[string]any{
			"need_response": map[string]any{"type": "boolean", "description": "Needs an answer?"}}},
		Conditions: []brain.Condition{
			{Expression: "need_response", Instruction: "Answer."},
			{Expression: "already_replied == false", Instruction: "Introduce yourself."},
		}}}
	in := brain.Input{Card: c, Message: protocol.NewMessage("m1", "user", nil, "hello", ""), Remaining: -1,
		Events: map[string]any{"already_replied": false}}
	th, err := New(0, nil).Think(context.Background(), in)
	if err != nil {
		t.Fatal(err)
	}
	if th.Instruction != "Introduce yourself." || th.Events["already_replied"] != false || len(th.Events) != 1 {
		t.Errorf("events %v, instruction %q", th.Events, th.Instruction)
	}
	in.Events = nil
	if th, _ := New(0, nil).Think(context.Background(), in); th.Instruction != "" || th.Events != nil {
		t.Errorf("nothing known: events %v, instruction %q", th.Events, th.Instruction)
	}
}
