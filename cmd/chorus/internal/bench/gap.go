package bench

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/chorus-robotics/chorus/cmd/chorus/internal/localroom"
	"github.com/chorus-robotics/chorus/cmd/chorus/internal/timeline"
	"github.com/chorus-robotics/chorus/device/robot"
	"github.com/chorus-robotics/chorus/runtime/brain/llm/llmtest"
	"github.com/chorus-robotics/chorus/runtime/protocol"
)

// GapCase is one room of the silence benchmark.
type GapCase struct {
	Latency time.Duration // the model server's time per call
	TTS     string        // tone (paced null audio of beeps), espeak-ng or open_jtalk
	Turns   string        // overlapped or sequential
	Rounds  int           // robot utterances to measure
	Paced                 // a model at a model's pace (Latency its time to the first token)
}

// GapResult is what one room measured.
type GapResult struct {
	Gaps     []time.Duration // from one robot's audio end to the next one's start
	Overlaps int             // two robots' audio at once
	Spoken   time.Duration   // the median utterance
}

// Pause is the room's pause between two voices in the benchmark (the
// default of room.pause).
const Pause = 200 * time.Millisecond

const gapCompanion = `version: 1
device: {id: %[1]s}
room: {name: gap, members: [ann, ben, cat], pause: 200ms, turns: %[4]s}
mqtt: {broker: "tcp://127.0.0.1:1"}
companion: {id: %[1]s, name: %[1]s, language: %[5]s}
brain: {provider: openai, base_url: "%[2]s", model: bench, timeout: 10s, stream: %[6]t}
drivers: {audio: {kind: null, paced: true}, tts: {kind: %[3]s}}
http: {listen: "off"}
`

// Lines of two to four seconds for each engine, by turn.
var gapLines = map[string][]string{
	"en": {
		"That reminds me of the garden behind our school.",
		"I think we should plan a picnic there next weekend, if it is sunny.",
		"Maybe we can bring some tea, a few sandwiches and the old guitar along.",
	},
	"ja": {
		"それは学校の裏の庭を思い出します。",
		"晴れたら来週末にそこでピクニックをしましょう。",
		"お茶とサンドイッチと古いギターを持って行きましょうか。",
	},
}

// Gap runs three companions on the OpenAI-compatible brain against the
// fake model server, with paced audio, for c.Rounds utterances, and
// measures the silences between the robots' voices from their speaking
// statuses.
func Gap(ctx context.Context, c GapCase) (GapResult, error) {
	lang := "en"
	if c.TTS == "open_jtalk" {
		lang = "ja"
	}
	fake := c.fake(c.Latency, func(me string, turn int) string { return gapLines[lang][turn%3] })
	defer fake.Close()
	r, err := startRoom(ctx, "gap", func(id string) string {
		return fmt.Sprintf(gapCompanion, id, fake.BaseURL(), c.TTS, c.Turns, lang, !c.Whole)
	})
	if err != nil {
		return GapResult{}, err
	}
	defer r.Close()
	user, ub, err := r.Dial(ctx, "user")
	if err != nil {
		return GapResult{}, err
	}
	defer ub.Close()
	rec, err := timeline.Follow(ctx, user)
	if err != nil {
		return GapResult{}, err
	}
	time.Sleep(200 * time.Millisecond) // the floor has claimed the room
	if err := user.SendMessage(ctx, protocol.NewMessage(protocol.NewID(), "user", nil, "Hello, what shall we do this weekend?", "")); err != nil {
		return GapResult{}, err
	}
	turn := 5 * time.Second // a line of the benchmark's own, spoken
	if c.TPS > 0 {
		turn = 20 * time.Second // a Talker's two sentences
	}
	limit := time.Duration(c.Rounds) * (turn + 2*c.Latency)
	deadline := time.After(limit)
	for len(rec.Utterances()) < c.Rounds+1 {
		select {
		case <-deadline:
			return GapResult{}, fmt.Errorf("gap: %d utterances within %v, want %d", len(rec.Utterances()), limit, c.Rounds+1)
		case err := <-r.Err():
			return GapResult{}, err
		case <-time.After(100 * time.Millisecond):
		}
	}
	us := rec.Utterances()[:c.Rounds+1]
	gaps := timeline.Gaps(us)
	spoken := make([]time.Duration, len(us))
	for i, u := range us {
		spoken[i] = u.Duration
	}
	if p := fake.Problems(); len(p) > 0 {
		return GapResult{}, fmt.Errorf("model server saw bad requests: %v", p)
	}
	return GapResult{Gaps: gaps, Overlaps: timeline.Overlaps(gaps), Spoken: timeline.Percentile(spoken, 50)}, nil
}

// Paced, in a benchmark's case, makes its room's fake model a Talker
// writing TPS tokens a second after its latency (the time to the first
// token), streamed, or whole with Whole (brain.stream: false). Without TPS
// the model answers at once after its latency with the benchmark's own
// short lines.
type Paced struct {
	TPS   float64
	Whole bool
	// Speak, when set, are the Talker's words and importance (a test's
	// short ones; default Talk).
	Speak func(me, lang string, turn int) (float64, string)
	// Wrote, when set, is given every state the model writes.
	Wrote func(answer string)
}

// fake starts the model server of a room: latency per call, and line for
// the words when p is not paced. Close it when done.
func (p Paced) fake(latency time.Duration, line func(me string, turn int) string) *llmtest.Server {
	s := llmtest.New()
	s.Latency, s.Line = latency, line
	if p.TPS > 0 {
		Talker(s, latency, p.TPS)
		if p.Speak != nil {
			s.Speak = p.Speak
		}
	}
	s.ClosingAfter, s.Wrote = 1<<30, p.Wrote
	return s
}

// startRoom runs a room of a floor and the companions ann, ben and cat,
// each with the config companion(id), as daemons in this process on the
// embedded broker.
func startRoom(ctx context.Context, room string, companion func(id string) string) (*localroom.Room, error) {
	var cfgs []*robot.Config
	for _, y := range []string{roomFloor(room), companion("ann"), companion("ben"), companion("cat")} {
		cfg, err := robot.Decode(strings.NewReader(y))
		if err != nil {
			return nil, err
		}
		cfgs = append(cfgs, cfg)
	}
	return localroom.Start(ctx, cfgs, localroom.Options{Quiet: true})
}

// roomFloor is the config of a room's floor device for the
// benchmarks: no companion, no broker of its own (the room's is given).
func roomFloor(room string) string {
	return fmt.Sprintf(`version: 1
device: {id: %[1]s-floor}
room: {name: %[1]s, members: [ann, ben, cat], floor: true}
mqtt: {broker: "tcp://127.0.0.1:1"}
drivers: {audio: {kind: null}, tts: {kind: tone}}
http: {listen: "off"}
`, room)
}
