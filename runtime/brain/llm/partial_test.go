package llm

import (
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/chorus-robotics/chorus/runtime/brain"
	"github.com/chorus-robotics/chorus/runtime/protocol"
)

// feed gives p the pieces of text, checking after each that what p says
// only grows and that a vote, once given, stays. It returns the vote and
// how many bytes had been given when it came (-1: never).
func feed(t *testing.T, p *Partial, pieces []string) (brain.Thought, int) {
	t.Helper()
	var said string
	var vote brain.Thought
	at, n := -1, 0
	for _, piece := range pieces {
		p.Add(piece)
		n += len(piece)
		text, _, _ := p.Said()
		if !strings.HasPrefix(text, said) {
			t.Fatalf("said %q after %q: it does not grow", text, said)
		}
		said = text
		v, ok := p.Vote()
		switch {
		case ok && at < 0:
			vote, at = v, n
		case at >= 0 && (!ok || !equalVote(v, vote)):
			t.Fatalf("the vote changed from %+v to %+v (ok %v)", vote, v, ok)
		}
	}
	return vote, at
}

func equalVote(a, b brain.Thought) bool {
	return a.State == b.State && a.Importance == b.Importance && a.Selected == b.Selected && a.Closing == b.Closing &&
		a.Draft == "" && b.Draft == "" && a.Emotion == "" && b.Emotion == "" && a.To == nil && b.To == nil
}

// cuts are the ways a text is cut into pieces: one byte at a time, in two
// at every offset, and in random pieces of one to eight bytes.
func cuts(s string) [][]string {
	var out [][]string
	var bytes []string
	for i := range len(s) {
		bytes = append(bytes, s[i:i+1])
	}
	out = append(out, bytes)
	for i := range len(s) + 1 {
		out = append(out, []string{s[:i], s[i:]})
	}
	r := rand.New(rand.NewPCG(1, uint64(len(s))))
	for range 5 {
		var pieces []string
		for rest := s; rest != ""; {
			n := min(1+r.IntN(8), len(rest))
			pieces, rest = append(pieces, rest[:n]), rest[n:]
		}
		out = append(out, pieces)
	}
	return out
}

func TestPartial(t *testing.T) {
	tests := []struct {
		name   string
		in     string
		draft  bool
		vote   bool   // an early vote
		voteBy string // the vote is given once the text up to this is read
		said   string // at the end
		e      protocol.Emotion
	}{
		{name: "vote first", draft: true, vote: true, voteBy: `"closing":"none",`, said: "Let's wrap up. Bye!", e: protocol.EmotionHappy,
			in: `{"state":"speak","importance":6.5,"selected":false,"closing":"none","draft":{"emotion":"happy","to":["hana"],"message":"Let's wrap up. Bye!"}}`},
		{name: "draft first", draft: true, vote: true, voteBy: `"closing":"pre-closing"}`, said: "Let's wrap up.", e: protocol.EmotionNeutral,
			in: `{"draft":{"message":"Let's wrap up.","to":["hana"],"emotion":"neutral"},"importance":6,"selected":true,"state":"speak","closing":"pre-closing"}`},
		{name: "spaced and fenced", draft: true, vote: true, voteBy: `"importance" : 10 `, said: "はい。そうです！本当？", e: protocol.EmotionSad,
			in: " \n```json\n{\n  \"state\" : \"listen\",\n  \"selected\" : true,\n  \"closing\" : \"terminal\",\n  \"importance\" : 10 ,\n  \"draft\" : {\"emotion\":\"sad\",\"to\":[],\"message\":\"はい。そうです！本当？\"}\n}\n```"},
		{name: "bare fence", vote: true, voteBy: `"closing":"closing"}`,
			in: "```{\"state\":\"listen\",\"importance\":0,\"selected\":false,\"closing\":\"closing\"}```"},
		{name: "escapes", draft: true, vote: true, voteBy: `"closing":"none",`, said: "Caf\u00e9 \"Ω\" 😀 \\ done.\nYes?\t\ufffd", e: protocol.EmotionAngry,
			in: `{"state":"speak","importance":1e0,"selected":true,"closing":"none","draft":{"emotion":"angry","to":[],"message":"Caf\u00e9 \"\u03a9\" \ud83d\ude00 \\ done.\nYes?\t\udc00"}}`},
		{name: "invalid UTF-8", draft: true, vote: true, voteBy: `"closing":"none",`, said: "a\ufffdb. c", e: protocol.EmotionNeutral,
			in: "{\"state\":\"speak\",\"importance\":2,\"selected\":true,\"closing\":\"none\",\"draft\":{\"emotion\":\"\",\"to\":[],\"message\":\"a\xffb. c\"}}"},
		{name: "closing missing", draft: true, vote: false, said: "Hi.", e: protocol.EmotionNeutral,
			in: `{"state":"speak","importance":6,"selected":false,"draft":{"emotion":"neutral","to":[],"message":"Hi."}}`},
		{name: "closing null", vote: false,
			in: `{"state":"speak","importance":6,"selected":false,"closing":null}`},
		{name: "importance out of range", vote: false,
			in: `{"state":"speak","importance":10.5,"selected":false,"closing":"none"}`},
		{name: "importance as string", vote: false,
			in: `{"state":"speak","importance":"5","selected":false,"closing":"none"}`},
		{name: "importance not JSON", vote: false,
			in: `{"state":"speak","importance":05,"selected":false,"closing":"none"}`},
		{name: "bad state", vote: false,
			in: `{"state":"talk","importance":5,"selected":false,"closing":"none"}`},
		{name: "bad closing", vote: false,
			in: `{"state":"speak","importance":5,"selected":false,"closing":"bye"}`},
		{name: "selected as string", vote: false,
			in: `{"state":"speak","importance":5,"selected":"true","closing":"none"}`},
		{name: "state as object", vote: false,
			in: `{"state":{"speak":true},"importance":5,"selected":false,"closing":"none"}`},
		{name: "message null", draft: true, vote: true, voteBy: `"closing":"none",`, e: protocol.EmotionNeutral,
			in: `{"state":"listen","importance":1,"selected":false,"closing":"none","draft":{"emotion":"neutral","to":null,"message":null}}`},
		{name: "a field twice", vote: false,
			in: `{"state":"speak","state":"listen","importance":5,"selected":false,"closing":"none"}`},
		{name: "unknown key", vote: false,
			in: `{"mood":"x","state":"speak","importance":5,"selected":false,"closing":"none"}`},
		{name: "another case", vote: false,
			in: `{"State":"speak","importance":5,"selected":false,"closing":"none"}`},
		{name: "draft not asked for", vote: false,
			in: `{"draft":{},"state":"speak","importance":5,"selected":false,"closing":"none"}`},
		{name: "a duplicate after the vote", draft: true, vote: true, voteBy: `"closing":"none",`, said: "One. Two.", e: protocol.EmotionNeutral,
			in: `{"state":"speak","importance":5,"selected":false,"closing":"none","draft":{"emotion":"neutral","to":[],"message":"One. Two."},"state":"listen"}`},
		{name: "prose", draft: true, vote: false, in: `I would like to speak. {"state":"speak"}`},
		{name: "events between the vote and the draft", draft: true, vote: true, voteBy: `"closing":"none"`, said: "One. Two.", e: protocol.EmotionHappy,
			in: `{"state":"speak","importance":5,"selected":false,"closing":"none","events":{"need_response":true,"mood":"sad \"}","n":[1,{"message":"no"}]},"draft":{"emotion":"happy","to":[],"message":"One. Two."}}`},
		{name: "events without a draft", vote: true, voteBy: `"closing":"none"`,
			in: `{"state":"listen","importance":2,"selected":false,"closing":"none","events":{"already_replied":false}}`},
		{name: "events first", draft: true, vote: true, voteBy: `"closing":"terminal"`, said: "Bye.", e: protocol.EmotionSad,
			in: `{"events":{"state":"listen","closing":"none"},"state":"speak","importance":5,"selected":true,"closing":"terminal","draft":{"emotion":"sad","to":[],"message":"Bye."}}`},
		{name: "events twice", vote: false,
			in: `{"events":{},"events":{},"state":"speak","importance":5,"selected":false,"closing":"none"}`},
		{name: "broken", draft: true, vote: false, said: "", in: `{"state":"speak",,"importance":5,"selected":false,"closing":"none"}`},
		{name: "nested values skipped", draft: true, vote: true, voteBy: `"closing":"none"`, said: "ok", e: protocol.EmotionNeutral,
			in: `{"draft":{"to":["a","b\"c"],"emotion":"neutral","message":" ok "},"state":"speak","importance":0,"selected":false,"closing":"none"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			want, perr := ParseThought(tt.in, tt.draft)
			for _, pieces := range cuts(tt.in) {
				p := NewPartial(tt.draft)
				vote, at := feed(t, p, pieces)
				if (at >= 0) != tt.vote {
					t.Fatalf("%q: voted %v, want %v", pieces, at >= 0, tt.vote)
				}
				if tt.vote {
					by := strings.Index(tt.in, tt.voteBy) + len(tt.voteBy)
					n := 0 // the end of the piece that holds by
					for _, piece := range pieces {
						if n >= by {
							break
						}
						n += len(piece)
					}
					if at > n || tt.voteBy == "" {
						t.Fatalf("%q: voted at byte %d, want by %d", pieces, at, by)
					}
					if perr == nil && !equalVote(vote, want.Vote()) && !strings.Contains(tt.name, "after the vote") {
						t.Fatalf("vote %+v, ParseThought %+v", vote, want.Vote())
					}
				}
				text, e, complete := p.Said()
				if text != tt.said || e != tt.e || complete != (tt.said != "") {
					t.Fatalf("%q: said %q %q %v, want %q %q", pieces, text, e, complete, tt.said, tt.e)
				}
				if perr == nil && want.State == protocol.Speak && text != want.Draft {
					t.Fatalf("said %q, ParseThought %q", text, want.Draft)
				}
			}
		})
	}
}

// A vote field is complete only when the text shows it ended: a number at
// the character after it.
func TestPartialVoteWhenComplete(t *testing.T) {
	p := NewPartial(true)
	p.Add(`{"state":"speak","selected":true,"closing":"none","importance": 7`)
	if _, ok := p.Vote(); ok {
		t.Fatal("voted before the number ended")
	}
	p.Add("\n")
	if v, ok := p.Vote(); !ok || v.Importance != 7 || v.State != protocol.Speak || !v.Selected || v.Closing != protocol.ClosingNone {
		t.Fatalf("vote %+v %v", v, ok)
	}
	p = NewPartial(true)
	p.Add(`{"importance":3,"selected":fals`)
	p.Add(`e,"closing":"none","state":"liste`)
	if _, ok := p.Vote(); ok {
		t.Fatal("voted before the state's string closed")
	}
	p.Add(`n"`)
	if v, ok := p.Vote(); !ok || v.State != protocol.Listen || v.Selected {
		t.Fatalf("vote %+v %v", v, ok)
	}
	// selected is not asked for (brain.Addressed decides it): the vote is
	// complete at closing, the three fields the schema asks for.
	p = NewPartial(true)
	p.Add(`{"state":"speak","importance":7,"closing":"none"`)
	if v, ok := p.Vote(); !ok || v.State != protocol.Speak || v.Selected || v.Importance != 7 {
		t.Fatalf("vote without selected: %+v %v", v, ok)
	}
}

// The draft's words are said sentence by sentence as they come, the rest
// held back until its sentence ends or the message closes.
func TestPartialSaysSentences(t *testing.T) {
	steps := []struct{ add, said string }{
		{`{"state":"speak","importance":5,"selected":false,"closing":"none","draft":{"emotion":"hap`, ""},
		{`py","to":[],"message":"Hello there.`, ""}, // a period ends a sentence before a space
		{` How are`, "Hello there."},
		{` you?`, "Hello there. How are you?"},
		{` 3.5 apples, 1,000`, "Hello there. How are you?"}, // a comma after the first sentence does not end one
		{` pears`, "Hello there. How are you?"},
		{`\nこんにちは。元気`, "Hello there. How are you? 3.5 apples, 1,000 pears\nこんにちは。"},
		{`？うん`, "Hello there. How are you? 3.5 apples, 1,000 pears\nこんにちは。元気？"},
		{`"`, "Hello there. How are you? 3.5 apples, 1,000 pears\nこんにちは。元気？うん"},
	}
	p := NewPartial(true)
	for i, s := range steps {
		p.Add(s.add)
		text, e, complete := p.Said()
		if text != s.said || complete != (i == len(steps)-1) {
			t.Fatalf("after %q: said %q %v, want %q", s.add, text, complete, s.said)
		}
		if i > 0 && e != protocol.EmotionHappy {
			t.Fatalf("emotion %q", e)
		}
	}
}

// The first words go to the voice at their first clause ("Oh," "Well,"
// 「はい、」), the rest sentence by sentence; a comma inside a number, or
// before anything was said, ends nothing.
func TestPartialSaysTheFirstClause(t *testing.T) {
	for _, c := range []struct {
		name  string
		steps [][2]string // what is added, what is said then
	}{
		{"english", [][2]string{{`Oh,`, ""}, {` that is lovely, really.`, "Oh,"}, {` Yes, it`, "Oh, that is lovely, really."}, {`"`, "Oh, that is lovely, really. Yes, it"}}},
		{"japanese", [][2]string{{`はい、そう`, "はい、"}, {`ですね、本当に。`, "はい、そうですね、本当に。"}}},
		{"a number", [][2]string{{`It costs 1,0`, ""}, {`00 yen`, ""}, {`, more or less.`, "It costs 1,000 yen,"}}},
		{"a comma first", [][2]string{{` , well`, ""}, {`, hm`, " , well,"}}},
		{"no comma", [][2]string{{`I was wondering about that`, ""}, {` too.`, ""}, {` Yes,`, "I was wondering about that too."}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := NewPartial(true)
			p.Add(`{"state":"speak","importance":5,"closing":"none","draft":{"emotion":"happy","message":"`)
			for _, s := range c.steps {
				p.Add(s[0])
				if text, _, _ := p.Said(); text != strings.TrimSpace(s[1]) {
					t.Fatalf("after %q: said %q, want %q", s[0], text, strings.TrimSpace(s[1]))
				}
			}
		})
	}
}

// The draft as the schema asks for it since issue 40: the words first,
// the emotion after them; Said has no emotion until it is written.
func TestPartialEmotionAfterTheWords(t *testing.T) {
	p := NewPartial(true)
	p.Add(`{"state":"speak","importance":5,"closing":"none","draft":{"message":"Oh, what a day. Truly."`)
	if text, e, complete := p.Said(); text != "Oh, what a day. Truly." || e != "" || !complete {
		t.Fatalf("before the emotion: %q %q %v", text, e, complete)
	}
	p.Add(`,"emotion":"sad","to":[]}}`)
	if _, e, _ := p.Said(); e != protocol.EmotionSad {
		t.Fatalf("after the emotion: %q", e)
	}
}

// Reading costs time in proportion to the answer: a message ten times as
// long, given a byte at a time and asked for after each, takes about ten
// times as long, not a hundred — words, sentence ends and white space
// (which Said trims) alike.
func TestPartialLinear(t *testing.T) {
	run := func(filler string, n int) time.Duration {
		msg := strings.Repeat(filler, n/len(filler)+1)[:n] + "x"
		text := `{"state":"speak","importance":5,"selected":false,"closing":"none","draft":{"emotion":"happy","to":[],"message":"` + msg + `"}}`
		start := time.Now()
		p := NewPartial(true)
		for i := range len(text) {
			p.Add(text[i : i+1])
			p.Said()
		}
		if s, _, _ := p.Said(); s != strings.TrimSpace(strings.ReplaceAll(msg, `\n`, "\n")) {
			t.Fatalf("said %d bytes of %d", len(s), len(msg))
		}
		return time.Since(start)
	}
	// The fastest of five runs, each long enough (milliseconds, not
	// microseconds) that one preemption on a loaded machine is not most of
	// it: a loaded machine inflates a run, never the cost of the reading
	// itself (a quadratic reader takes 100× as long in every run). CI saw
	// 20 000 bytes read in 0.8 ms against 42 ms for ten times as many.
	fastest := func(filler string, n int) time.Duration {
		d := run(filler, n)
		for range 4 {
			d = min(d, run(filler, n))
		}
		return d
	}
	for _, filler := range []string{"Lorem ipsum dolor sit amet. ", "    ", `\n`, "! "} {
		run(filler, 10_000) // warm up
		small, large := fastest(filler, 50_000), fastest(filler, 500_000)
		if large > 40*small {
			t.Errorf("%q: 10× the message took %v against %v: not linear", filler, large, small)
		}
	}
}

// FuzzPartial: whatever the model writes, however it is cut, the reader
// never panics, what it says only grows, and, when ParseThought accepts
// the whole answer as speak, it has said the draft ParseThought reads
// (unless a key was written twice or in another case, which ParseThought
// may read otherwise) and voted as ParseThought does.
func FuzzPartial(f *testing.F) {
	f.Add(`{"state":"speak","importance":6.5,"selected":false,"closing":"pre-closing","draft":{"emotion":"neutral","to":["hana"],"message":"Hi. How are you?"}}`, true, uint64(1))
	f.Add(`{"draft":{"message":"こんにちは。元気？","to":[],"emotion":"happy"},"state":"speak","importance":1,"selected":true,"closing":"none"}`, true, uint64(7))
	f.Add("```json\n{\"state\":\"listen\",\"importance\":0,\"selected\":false,\"closing\":\"none\"}\n```", false, uint64(3))
	f.Add(`{"state":"speak","importance":2,"selected":false,"closing":"none","events":{"a":true,"b":"x"},"draft":{"emotion":"happy","to":[],"message":"Yes. No."}}`, true, uint64(5))
	f.Add(`{"state":"speak","importance":1e1,"selected":true,"closing":"none","draft":{"emotion":"sad","to":[],"message":"\u00e9\ud83d\ude00\"\\. x"}}`, true, uint64(0))
	f.Fuzz(func(t *testing.T, s string, draft bool, seed uint64) {
		r := rand.New(rand.NewPCG(seed, 0))
		var pieces []string
		for rest := s; rest != ""; {
			n := min(1+r.IntN(16), len(rest))
			pieces, rest = append(pieces, rest[:n]), rest[n:]
		}
		p := NewPartial(draft)
		vote, at := feed(t, p, pieces)
		th, err := ParseThought(s, draft)
		if err != nil || p.odd {
			return
		}
		if at >= 0 && !equalVote(vote, th.Vote()) {
			t.Fatalf("voted %+v, ParseThought %+v", vote, th.Vote())
		}
		if th.State == protocol.Speak && draft {
			if text, e, complete := p.Said(); text != th.Draft || !complete || e != "" && e != th.Emotion {
				t.Fatalf("said %q %q %v, ParseThought %q %q", text, e, complete, th.Draft, th.Emotion)
			}
		}
	})
}
