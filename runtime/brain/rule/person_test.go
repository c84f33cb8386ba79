package rule

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/chorus-robotics/chorus/runtime/brain"
	"github.com/chorus-robotics/chorus/runtime/memory"
	"github.com/chorus-robotics/chorus/runtime/protocol"
)

// A person's message is answered before the companion's own material: by
// their remembered name (never their identity, never a counter), with a
// word on what they told, and simple questions about them from their
// facts — honestly "I don't know yet" when none answers. Before, the
// demo's riddlers answered "Hi robots, I'm Sam. My favourite fruit is
// mango." with riddles, and a robot with little material answered
// everything "Mm, I'm listening, user (0).".
func TestRuleBrainTalksToThePerson(t *testing.T) {
	sam := []memory.Fact{
		{Person: "user", Key: "name", Text: "name is Sam", Pinned: true},
		{Person: "user", Key: "favorite fruit", Text: "favorite fruit is mango"},
		{Person: "user", Key: "home", Text: "lives in Leeds"},
		{Person: "user", Key: "age", Text: "is 31 years old"},
		{Person: "user", Key: "job", Text: "works as a baker"},
		{Person: "user", Key: "like:green tea", Text: "likes green tea"},
		{Person: "pat", Key: "name", Text: "name is Patricia", Pinned: true}, // another person present: a name only
	}
	saku := []memory.Fact{
		{Person: "user", Key: "name", Text: "名前はサク", Pinned: true},
		{Person: "user", Key: "favorite 果物", Text: "好きな果物はマンゴー"},
		{Person: "user", Key: "home", Text: "京都に住んでいる"},
		{Person: "user", Key: "age", Text: "31歳"},
	}
	riddler := brain.Card{ID: "aya", Name: "Aya", Personality: "loves riddles", SampleLines: []string{"I collect pebbles."}, Language: "en"}
	sim := brain.Card{ID: "sim", Name: "Sim", Personality: "helpful", SampleLines: []string{"Beep boop, just kidding."}, Language: "en"}
	jaRiddler := brain.Card{ID: "aya", Name: "あや", Personality: "なぞなぞが好き", SampleLines: []string{"石を集めているの。"}, Language: "ja"}
	jaSim := brain.Card{ID: "sim", Name: "シム", Personality: "親切", SampleLines: []string{"ピポパ、なんちゃって。"}, Language: "ja"}
	tests := []struct {
		name       string
		card       brain.Card
		present    []string
		text       string
		remembered []memory.Fact
		history    []string // the person's earlier messages in the conversation
		want       []string // in this order
		never      []string
	}{
		{"en greeting names and favourite, then its own", riddler, []string{"aya", "hana", "kyoko"}, "Hi robots, I'm Sam. My favourite fruit is mango.", nil, nil,
			[]string{"Sam", "mango", "riddle"}, []string{"user"}},
		{"en name from memory", sim, []string{"sim"}, "Hello!", sam, nil, []string{"Sam!"}, []string{"user"}},
		{"en what is my name", sim, []string{"sim"}, "What is my name?", sam, nil, []string{"Your name is Sam."}, []string{"Patricia"}},
		{"en what fruit do I like", sim, []string{"sim"}, "What fruit do I like?", sam, nil, []string{"Your favorite fruit is mango."}, nil},
		{"en favourite colour unknown", sim, []string{"sim"}, "What is my favourite colour?", sam, nil, []string{"I don't know yet — tell me?"}, []string{"mango"}},
		{"en where do I live", sim, []string{"sim"}, "Where do I live?", sam, nil, []string{"You live in Leeds."}, nil},
		{"en how old am I", sim, []string{"sim"}, "How old am I?", sam, nil, []string{"You are 31 years old."}, nil},
		{"en my job", sim, []string{"sim"}, "What's my job?", sam, nil, []string{"You work as a baker."}, nil},
		{"en what do I like", sim, []string{"sim"}, "What do I like?", sam, nil, []string{"mango", "green tea"}, nil},
		{"en name unknown", sim, []string{"sim"}, "What is my name?", sam[6:], nil, []string{"I don't know yet — tell me?"}, []string{"Patricia", "user"}},
		{"ja greeting names and favourite, then its own", jaRiddler, []string{"aya", "hana", "kyoko"}, "こんにちは！サクといいます。好きな果物はマンゴーです。", nil, nil,
			[]string{"サク", "マンゴー", "なぞなぞ"}, []string{"user"}},
		{"ja what is my name", jaSim, []string{"sim"}, "私の名前は？", saku, nil, []string{"あなたの名前はサク"}, nil},
		{"ja favourite fruit", jaSim, []string{"sim"}, "私の好きな果物は？", saku, nil, []string{"マンゴー"}, nil},
		{"ja where do I live", jaSim, []string{"sim"}, "どこに住んでる？", saku, nil, []string{"京都に住んでいる"}, nil},
		{"ja how old", jaSim, []string{"sim"}, "私は何歳？", saku, nil, []string{"31歳"}, nil},
		{"ja unknown", jaSim, []string{"sim"}, "私の仕事は何？", saku, nil, []string{"まだ知らないんだ"}, nil},
		{"en a statement then a question to the robots", sim, []string{"sim"}, "My favourite fruit is mango. What do you think?", sam, nil,
			[]string{"So your favourite fruit is mango", "Beep boop"}, []string{"Your favourite"}},
		{"en colour asked, color told", sim, []string{"sim"}, "What's my favourite colour?", append(sam[:1:1], memory.Fact{Person: "user", Key: "favorite color", Text: "favorite color is green"}), nil,
			[]string{"Your favourite color is green."}, nil},
		{"en heard, no question mark", sim, []string{"sim"}, "hi robots what is my name", sam, nil, []string{"Sam", "Your name is Sam."}, nil},
		{"en what else do I like", sim, []string{"sim"}, "What else do I like?", sam, nil, []string{"green tea"}, []string{"I don't know"}},
		{"en a dislike is not nice", sim, []string{"sim"}, "I hate mornings.", nil, nil, []string{"you don't like mornings"}, []string{"nice"}},
		{"ja a dislike is not いいね", jaSim, []string{"sim"}, "朝が嫌いです。", nil, nil, []string{"朝が嫌いなんだね。"}, []string{"いいね"}},
		{"en said earlier, not written yet", sim, []string{"sim"}, "Hello again! What is my name?", nil, []string{"Hi robots, I'm Sam."},
			[]string{"Sam!", "Your name is Sam."}, []string{"user"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var history []protocol.Message
			for i, h := range tt.history {
				history = append(history, protocol.NewMessage(fmt.Sprint("h", i), "user", nil, h, ""))
			}
			in := brain.Input{Card: tt.card, History: history, Message: protocol.NewMessage("m1", "user", nil, tt.text, ""), Present: tt.present,
				Members: tt.present, Remembered: tt.remembered, Remaining: -1}
			got, err := New(0, nil).Think(context.Background(), in)
			if err != nil {
				t.Fatal(err)
			}
			if got.State != protocol.Speak {
				t.Errorf("%s listens to %q (importance %v)", tt.card.ID, tt.text, got.Importance)
			}
			t.Log(got.Draft)
			rest := got.Draft
			for _, w := range tt.want {
				i := strings.Index(rest, w)
				if i < 0 {
					t.Fatalf("%q: %q lacks %q (in order %q)", tt.text, got.Draft, w, tt.want)
				}
				rest = rest[i+len(w):]
			}
			for _, w := range tt.never {
				if strings.Contains(got.Draft, w) {
					t.Errorf("%q: %q says %q", tt.text, got.Draft, w)
				}
			}
		})
	}
}

// A robot with little material that has said it all acknowledges a
// person by their remembered name, or by no name — never by their
// identity, never with a counter.
func TestRuleBrainAcknowledgesWithoutCounterOrIdentity(t *testing.T) {
	digit := regexp.MustCompile(`[0-9０-９]`)
	for _, tt := range []struct {
		name       string
		card       brain.Card
		remembered []memory.Fact
		want, not  string
	}{
		{"en known", brain.Card{ID: "sim", Name: "Sim", SampleLines: []string{"Beep boop."}, Language: "en"},
			[]memory.Fact{{Person: "user", Key: "name", Text: "name is Sam"}}, "Sam", "user"},
		{"en unknown", brain.Card{ID: "sim", Name: "Sim", SampleLines: []string{"Beep boop."}, Language: "en"}, nil, "", "user"},
		{"ja known", brain.Card{ID: "sim", Name: "シム", SampleLines: []string{"ピポパ。"}, Language: "ja"},
			[]memory.Fact{{Person: "user", Key: "name", Text: "名前はサク"}}, "サク", "user"},
		{"ja unknown", brain.Card{ID: "sim", Name: "シム", SampleLines: []string{"ピポパ。"}, Language: "ja"}, nil, "", "user"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			b := New(100, nil)
			var history []protocol.Message
			for turn := range 8 {
				text := []string{"That is nice", "Tell me a story", "The sky is blue", "ok", "I see", "sure", "hmm", "right"}[turn]
				in := brain.Input{Card: tt.card, History: history, Message: protocol.NewMessage("m"+text, "user", nil, text, ""),
					Present: []string{"sim"}, Members: []string{"sim"}, Turn: 2 * turn, Remembered: tt.remembered, Remaining: -1}
				u, err := b.Utter(context.Background(), in)
				if err != nil {
					t.Fatal(err)
				}
				if digit.MatchString(u.Text) || strings.Contains(u.Text, tt.not) || !strings.Contains(u.Text, tt.want) {
					t.Fatalf("turn %d: %q (want %q in it, no digit, no %q)", turn, u.Text, tt.want, tt.not)
				}
				history = append(history, in.Message, protocol.NewMessage("r"+text, "sim", nil, u.Text, ""))
			}
		})
	}
}

// In the shipped demo room (and its Japanese twin) the robot that takes
// the floor after a person introduces themselves answers them first —
// their name, their favourite — before its own material (a riddle);
// no robot calls the person "user". Before, the demo's first reply to
// "Hi robots, I'm Sam. My favourite fruit is mango." was a riddle.
func TestDemoRoomAnswersThePersonFirst(t *testing.T) {
	for _, tt := range []struct {
		lang, opening, name, fruit string
		cards                      []brain.Card
	}{
		{"en", "Hi robots, I'm Sam. My favourite fruit is mango.", "Sam", "mango", demoCards(t)},
		{"ja", "こんにちは、ロボットたち！サクといいます。好きな果物はマンゴーです。", "サク", "マンゴー", jaCards()},
	} {
		t.Run(tt.lang, func(t *testing.T) {
			msgs := converse(t, tt.cards, tt.opening)
			if len(msgs) < 2 {
				t.Fatal("nobody answered")
			}
			for _, m := range msgs {
				t.Logf("%s → %v: %s", m.Params.From, m.Params.To, m.Params.Message)
			}
			first := msgs[1].Params.Message
			n, f := strings.Index(first, tt.name), strings.Index(first, tt.fruit)
			if n < 0 || f < n {
				t.Errorf("the first reply %q does not greet %s and then speak of %s", first, tt.name, tt.fruit)
			}
			for _, r := range riddles2(tt.lang) {
				if i := strings.Index(first, r.q); i >= 0 && i < f {
					t.Errorf("the first reply %q starts its riddle before answering the person", first)
				}
			}
			for _, m := range msgs[1:] {
				if strings.Contains(m.Params.Message, "user") {
					t.Errorf("%s called the person by their identity: %q", m.Params.From, m.Params.Message)
				}
			}
		})
	}
}
