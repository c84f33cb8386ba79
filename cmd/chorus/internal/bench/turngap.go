package bench

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/chorus-robotics/chorus/cmd/chorus/internal/localroom"
	"github.com/chorus-robotics/chorus/device/robot"
	"github.com/chorus-robotics/chorus/runtime/brain/llm/llmtest"
	"github.com/chorus-robotics/chorus/runtime/protocol"
)

// gapDevice is a companion of the turn-gap room: a model server for a
// brain, audio that plays at once.
const gapDevice = `version: 1
device: {id: %[1]s}
room: {name: gap, members: [ann, ben, cat], pause: 1ms}
mqtt: {broker: "tcp://127.0.0.1:1"}
companion: {id: %[1]s, name: %[1]s, language: en}
brain: {provider: openai, base_url: "%[2]s", model: bench, draft: %[3]t}
drivers: {audio: {kind: null}, tts: {kind: tone}}
http: {listen: "off"}
`

// TurnGap runs a room of a floor and three companions (daemons, as
// chorusd runs them) whose brain is an OpenAI-compatible server taking
// latency per call, and measures for each of rounds user messages the
// time from its publish to the granted companion's Message. draft false
// is the two-call path (brain.draft: false).
func TurnGap(ctx context.Context, latency time.Duration, draft bool, rounds int) ([]time.Duration, error) {
	fake := llmtest.New()
	defer fake.Close()
	fake.Latency, fake.OnlyUsers, fake.ClosingAfter = latency, true, 1<<30
	var cfgs []*robot.Config
	for _, y := range []string{roomFloor("gap"), fmt.Sprintf(gapDevice, "ann", fake.BaseURL(), draft),
		fmt.Sprintf(gapDevice, "ben", fake.BaseURL(), draft), fmt.Sprintf(gapDevice, "cat", fake.BaseURL(), draft)} {
		c, err := robot.Decode(strings.NewReader(y))
		if err != nil {
			return nil, err
		}
		cfgs = append(cfgs, c)
	}
	r, err := localroom.Start(ctx, cfgs, localroom.Options{Quiet: true})
	if err != nil {
		return nil, err
	}
	defer r.Close()
	user, ub, err := r.Dial(ctx, "user")
	if err != nil {
		return nil, err
	}
	defer ub.Close()
	msgs := make(chan protocol.Message, 64)
	rests := make(chan string, 64)
	user.OnMessage(ctx, func(m protocol.Message) {
		select { // a bus handler never blocks
		case msgs <- m:
		default:
		}
	})
	user.OnGrant(ctx, func(g protocol.TurnGrant) {
		if g.Speaker == nil {
			select {
			case rests <- g.MessageID:
			default:
			}
		}
	})
	time.Sleep(200 * time.Millisecond) // the floor has claimed the room
	out := make([]time.Duration, 0, rounds)
	for round := range rounds {
		id := fmt.Sprintf("u%d", round)
		start := time.Now()
		if err := user.SendMessage(ctx, protocol.NewMessage(id, "user", nil, "Hello, who wants to talk?", "")); err != nil {
			return out, err
		}
		var answer string
		for answer == "" {
			select {
			case m := <-msgs:
				if m.Params.From != "user" {
					out = append(out, time.Since(start))
					answer = m.Params.ID
				}
			case <-time.After(20 * time.Second):
				return out, fmt.Errorf("round %d: no answer", round)
			}
		}
		for done := false; !done; { // the answer's own vote rests the room
			select {
			case mid := <-rests:
				done = mid == answer
			case <-time.After(20 * time.Second):
				return out, fmt.Errorf("round %d: the room did not rest", round)
			}
		}
	}
	if p := fake.Problems(); len(p) > 0 {
		return out, fmt.Errorf("model server saw bad requests: %v", p)
	}
	return out, nil
}
