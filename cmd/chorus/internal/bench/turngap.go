package bench

import (
	"context"
	"fmt"
	"time"

	"github.com/chorus-robotics/chorus/runtime/protocol"
)

// gapDevice is a companion of the turn-gap room: a model server for a
// brain, audio that plays at once.
const gapDevice = `version: 1
device: {id: %[1]s}
room: {name: gap, members: [ann, ben, cat], pause: 1ms}
mqtt: {broker: "tcp://127.0.0.1:1"}
companion: {id: %[1]s, name: %[1]s, language: en}
brain: {provider: openai, base_url: "%[2]s", model: bench, draft: %[3]t, stream: %[4]t}
drivers: {audio: {kind: null}, tts: {kind: tone}}
http: {listen: "off"}
`

// TypedCase is one room of the typed-message benchmarks.
type TypedCase struct {
	Latency  time.Duration // the model server's time per call (with Paced: to the first token)
	TwoCalls bool          // brain.draft: false, the two-call path
	Rounds   int           // user messages
	Paced
}

// TypedResult is what a typed room measured, per user message.
type TypedResult struct {
	Message    []time.Duration // its publish → the granted companion's Message
	FirstAudio []time.Duration // its publish → the first robot audio (the speaking status's start)
}

// TurnGap runs a room of a floor and three companions (daemons, as
// chorusd runs them) whose brain is an OpenAI-compatible server taking
// latency per call, and measures for each of rounds user messages the
// time from its publish to the granted companion's Message. draft false
// is the two-call path (brain.draft: false).
func TurnGap(ctx context.Context, latency time.Duration, draft bool, rounds int) ([]time.Duration, error) {
	res, err := Typed(ctx, TypedCase{Latency: latency, TwoCalls: !draft, Rounds: rounds})
	return res.Message, err
}

// Typed runs the turn-gap room with c's model, and measures for each of
// c.Rounds user messages the time from its publish to the granted
// companion's Message and to the first robot audio. Each message waits
// for the room to rest after the answer before it.
func Typed(ctx context.Context, c TypedCase) (TypedResult, error) {
	var res TypedResult
	fake := c.fake(c.Latency, nil)
	defer fake.Close()
	fake.OnlyUsers = true
	r, err := startRoom(ctx, "gap", func(id string) string {
		return fmt.Sprintf(gapDevice, id, fake.BaseURL(), !c.TwoCalls, !c.Whole)
	})
	if err != nil {
		return res, err
	}
	defer r.Close()
	user, ub, err := r.Dial(ctx, "user")
	if err != nil {
		return res, err
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
	w := newVoiceWatch()
	if err := user.OnSpeaking(ctx, w.speak); err != nil {
		return res, err
	}
	time.Sleep(200 * time.Millisecond) // the floor has claimed the room
	for round := range c.Rounds {
		w.drain()
		id := fmt.Sprintf("u%d", round)
		start := time.Now()
		if err := user.SendMessage(ctx, protocol.NewMessage(id, "user", nil, "Hello, who wants to talk?", "")); err != nil {
			return res, err
		}
		var answer string
		for answer == "" {
			select {
			case m := <-msgs:
				if m.Params.From != "user" {
					res.Message = append(res.Message, time.Since(start))
					answer = m.Params.ID
				}
			case <-time.After(20 * time.Second):
				return res, fmt.Errorf("round %d: no answer", round)
			}
		}
		for done := false; !done; { // the answer's own vote rests the room
			select {
			case mid := <-rests:
				done = mid == answer
			case <-time.After(20 * time.Second):
				return res, fmt.Errorf("round %d: the room did not rest", round)
			}
		}
		select {
		case at := <-w.started:
			res.FirstAudio = append(res.FirstAudio, at.Sub(start))
		case <-time.After(5 * time.Second):
			return res, fmt.Errorf("round %d: the answer was never heard", round)
		}
	}
	if p := fake.Problems(); len(p) > 0 {
		return res, fmt.Errorf("model server saw bad requests: %v", p)
	}
	return res, nil
}
