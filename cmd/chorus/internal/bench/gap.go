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
brain: {provider: openai, base_url: "%[2]s", model: bench, timeout: 10s}
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
	fake := llmtest.New()
	defer fake.Close()
	fake.Latency, fake.ClosingAfter = c.Latency, 1<<30
	fake.Line = func(me string, turn int) string { return gapLines[lang][turn%3] }
	var cfgs []*robot.Config
	for _, y := range []string{roomFloor("gap"),
		fmt.Sprintf(gapCompanion, "ann", fake.BaseURL(), c.TTS, c.Turns, lang),
		fmt.Sprintf(gapCompanion, "ben", fake.BaseURL(), c.TTS, c.Turns, lang),
		fmt.Sprintf(gapCompanion, "cat", fake.BaseURL(), c.TTS, c.Turns, lang)} {
		cfg, err := robot.Decode(strings.NewReader(y))
		if err != nil {
			return GapResult{}, err
		}
		cfgs = append(cfgs, cfg)
	}
	r, err := localroom.Start(ctx, cfgs, localroom.Options{Quiet: true})
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
	limit := time.Duration(c.Rounds) * (5*time.Second + 2*c.Latency)
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
