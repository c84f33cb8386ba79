package rule

import (
	"context"
	"strings"
	"testing"

	"github.com/chorus-robotics/chorus/runtime/brain"
	"github.com/chorus-robotics/chorus/runtime/protocol"
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
	if !strings.Contains(x.Draft, "I love tea.") || !strings.Contains(x.Draft, "tell me about tea") {
		t.Fatalf("draft %q does not use the card and the message", x.Draft)
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
	if !strings.Contains(got.Draft, "お茶が好きです。") || !strings.Contains(got.Draft, "hanaはどう思う？") {
		t.Fatalf("draft %q", got.Draft)
	}
}
