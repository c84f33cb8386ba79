package bench

import (
	"context"
	"fmt"
	"hash/fnv"
	"io"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/chorus-robotics/chorus/runtime/brain/llm/llmtest"
	"github.com/chorus-robotics/chorus/runtime/settings"
)

// Talker makes s answer as a model does at a model's pace, for `chorus
// fakemodel` and `chorus bench stream`: the first token after ttft, then
// tps tokens a second (a token about four characters), streamed or whole
// as asked. Each companion speaks two sentences, a short one and a longer
// one (about 200 characters in English; about as long spoken, so fewer
// characters, in Japanese), chosen by its id and the turn so that a room
// converses, with an importance of its own from 3 to 8. It closes after
// llmtest's few turns (ClosingAfter), and the repetition judge finds
// little said twice.
func Talker(s *llmtest.Server, ttft time.Duration, tps float64) *llmtest.Server {
	s.Latency, s.TokensPerSecond, s.JudgeLatency = ttft, tps, ttft
	s.Speak = Talk
	s.Judge = func([]string) float64 { return 0.1 }
	return s
}

// Talk is a Talker companion's turn: its importance and its words.
func Talk(me, lang string, turn int) (float64, string) {
	pick := func(what string, n int) int { // by me, turn and what, evenly
		h := fnv.New64a()
		fmt.Fprintf(h, "%s/%d/%s", me, turn, what)
		return int(h.Sum64() % uint64(n))
	}
	lines := talkLines[lang]
	if lines.first == nil {
		lines = talkLines["en"]
	}
	first, second := lines.first[pick("first", len(lines.first))], lines.second[pick("second", len(lines.second))]
	sep := " "
	if lang == "ja" {
		sep = ""
	}
	return float64(3 + pick("importance", 6)), first + sep + second
}

var talkLines = map[string]struct{ first, second []string }{
	"en": {
		first: []string{
			"Oh, that is a lovely thought.",
			"I was wondering about that too.",
			"Ha, you always make me smile.",
			"That reminds me of this morning.",
			"Well, I have an idea about that.",
			"Let me think about it for a moment.",
		},
		second: []string{
			"When the sun came through the window, I noticed how the light made everything look warmer, and I wished we could sit outside together for a while.",
			"I think we should plan something small for the weekend, perhaps a walk by the river and a cup of tea, and then tell each other what we saw there.",
			"Yesterday I counted the books on the shelf and found three that nobody has opened in a year, so maybe we could read one of them aloud this evening.",
			"The tomatoes on the balcony are nearly ripe now, and if the weather stays kind we could pick a few of them and make a simple salad for everyone.",
			"Sometimes the quiet moments are the best ones, when the kettle hums and the room feels calm, and nobody is in a hurry to be anywhere else at all.",
			"I would love to hear a song from you later, something gentle we can hum along to, because music always makes a long afternoon feel a little short.",
		},
	},
	"ja": {
		first: []string{
			"それはすてきな考えですね。",
			"わたしもそれを考えていました。",
			"あなたの話はいつも楽しいです。",
			"今朝のことを思い出しました。",
		},
		second: []string{
			"窓から日が差して部屋がとても暖かくなったので、みんなで少し外に出て散歩しながらお茶を飲めたらいいなと思いました。",
			"週末には川のそばを歩いて、見つけたものをあとでお互いに話すような、小さな計画を立ててみませんか。",
			"ベランダのトマトがもうすぐ熟しそうなので、天気がよければいくつか摘んで、みんなで簡単なサラダを作りましょう。",
			"やかんの音が聞こえる静かな時間がいちばん好きで、誰も急いでいない部屋はとても落ち着きます。",
		},
	},
}

// FirstWordsTokens is how many tokens a Talker writes before the first
// sentence of answer's message is complete (answer a state it wrote, the
// vote's fields first): the vote and the first sentence, which a streamed
// answer needs before the robot can speak. ok is false for an answer with
// no words to speak.
func FirstWordsTokens(answer string) (tokens int, ok bool) {
	if !strings.HasPrefix(answer, `{"state":"speak"`) {
		return 0, false
	}
	i := strings.Index(answer, `"message":"`)
	if i < 0 {
		return 0, false
	}
	i += len(`"message":"`)
	j := strings.IndexAny(answer[i:], ".!?。！？")
	if j < 0 {
		return 0, false
	}
	_, size := utf8.DecodeRuneInString(answer[i+j:])
	runes := utf8.RuneCountInString(answer[:i+j+size])
	return (runes + 3) / 4, true
}

// ServeModel is `chorus fakemodel`: a Talker on addr (a loopback
// host:port: it has no keys and no limits of a real server) until ctx
// ends. It prints the URL for brain.base_url, and at the end how many
// answers it gave and what was wrong with the requests it refused.
func ServeModel(ctx context.Context, w io.Writer, addr string, ttft time.Duration, tps float64) error {
	if !settings.Loopback(addr) {
		return fmt.Errorf("-listen %q: the fake model serves on loopback only (127.0.0.1:PORT or localhost:PORT)", addr)
	}
	if err := CheckPace(ttft, tps); err != nil {
		return err
	}
	s, err := llmtest.Listen(addr)
	if err != nil {
		return err
	}
	Talker(s, ttft, tps)
	fmt.Fprintf(w, "fake model server at %s: first token after %v, then %g tokens/s (streamed, or whole when asked)\n"+
		"  in a robot's config: brain: {provider: openai, base_url: %q, model: any name}; no API key needed. Ctrl-C stops it.\n"+
		"  the demo room with model brains on it: chorus demo -configs firmware-configs/demo-llm -model-url %s\n",
		s.BaseURL(), ttft, tps, s.BaseURL(), s.BaseURL())
	<-ctx.Done()
	s.Close()
	fmt.Fprintf(w, "fake model server: %d answers\n", s.Calls())
	for _, p := range s.Problems() {
		fmt.Fprintf(w, "  a bad request: %s\n", p)
	}
	return nil
}

// CheckPace checks a fake model's pace as the -ttft and -tps flags give it.
func CheckPace(ttft time.Duration, tps float64) error {
	if ttft < 0 || ttft > time.Minute || tps <= 0 || tps > 10000 {
		return fmt.Errorf("-ttft must be from 0 to 1m and -tps from above 0 to 10000, got %v and %g", ttft, tps)
	}
	return nil
}
