package bench

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/chorus-robotics/chorus/runtime/protocol"
	"github.com/chorus-robotics/chorus/runtime/room"
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
%[5]s`

// gapMembers are the turn-gap room's companions.
var gapMembers = []string{"ann", "ben", "cat"}

// gapMemory is the memory section of a typed room's companion with
// TypedCase.Memory: the rules extract, and the conversation rests after
// the shortest quiet allowed, so that writes happen between rounds.
const gapMemory = `memory: {dir: %q, rest_after: 1s, extract: rules}
`

// TypedCase is one room of the typed-message benchmarks.
type TypedCase struct {
	Latency  time.Duration // the model server's time per call (with Paced: to the first token)
	TwoCalls bool          // brain.draft: false, the two-call path
	Rounds   int           // user messages
	Paced
	// Memory, when set, is the folder of the companions' memory: each
	// companion's config gets a memory section there (gapMemory).
	Memory string
	// Say, when set, is a round's user message: who says it (a person's
	// identity; each gets a connection of their own) and the words.
	// Default: "user" asks "Hello, who wants to talk?".
	Say func(round int) (from, text string)
}

// TypedResult is what a typed room measured, per user message.
type TypedResult struct {
	Message    []time.Duration // its publish → the granted companion's Message
	FirstAudio []time.Duration // its publish → the first robot audio (the speaking status's start)
	// GrantToAudio is from the floor's grant naming a speaker for the
	// message, as the user's connection received it, to the granted
	// robot's first audio (its speaking status's start).
	GrantToAudio []time.Duration
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
	say := c.Say
	if say == nil {
		say = func(int) (string, string) { return "user", "Hello, who wants to talk?" }
	}
	fake.OnlyUsers = true
	for round := range c.Rounds {
		if from, _ := say(round); from != "user" && !slices.Contains(fake.Users, from) {
			fake.Users = append(fake.Users, from)
		}
	}
	r, err := startRoom(ctx, "gap", func(id string) string {
		mem := ""
		if c.Memory != "" {
			mem = fmt.Sprintf(gapMemory, c.Memory)
		}
		return fmt.Sprintf(gapDevice, id, fake.BaseURL(), !c.TwoCalls, !c.Whole, mem)
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
	senders := map[string]*room.Room{"user": user}
	msgs := make(chan protocol.Message, 64)
	rests := make(chan string, 64)
	type granted struct {
		message, speaker string
		at               time.Time
	}
	grants := make(chan granted, 64)
	user.OnMessage(ctx, func(m protocol.Message) {
		select { // a bus handler never blocks
		case msgs <- m:
		default:
		}
	})
	user.OnGrant(ctx, func(g protocol.TurnGrant) {
		at := time.Now()
		if g.Speaker == nil {
			select {
			case rests <- g.MessageID:
			default:
			}
			return
		}
		select {
		case grants <- granted{g.MessageID, *g.Speaker, at}:
		default:
		}
	})
	w := newVoiceWatch()
	var smu sync.Mutex
	starts := map[string]time.Time{} // each robot's first audio of the round
	var since time.Time              // the round's message (a status of an earlier round is not its audio)
	if err := user.OnSpeaking(ctx, func(e room.SpeakingEvent) {
		w.speak(e)
		smu.Lock()
		if e.Speaking.Speaking && !e.Cleared && starts[e.ID].IsZero() && !e.Speaking.StartedAt.Before(since) {
			starts[e.ID] = e.Speaking.StartedAt
		}
		smu.Unlock()
	}); err != nil {
		return res, err
	}
	time.Sleep(200 * time.Millisecond) // the floor has claimed the room
	for round := range c.Rounds {
		w.drain()
		from, text := say(round)
		sender := senders[from]
		if sender == nil {
			s, sb, err := r.Dial(ctx, from)
			if err != nil {
				return res, err
			}
			defer sb.Close()
			sender, senders[from] = s, s
		}
		id := fmt.Sprintf("u%d", round)
		start := time.Now()
		smu.Lock()
		clear(starts)
		since = start
		smu.Unlock()
		if err := sender.SendMessage(ctx, protocol.NewMessage(id, from, nil, text, "")); err != nil {
			return res, err
		}
		var answer string
		for answer == "" {
			select {
			case m := <-msgs:
				if slices.Contains(gapMembers, m.Params.From) {
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
		var g granted
		for g.message != id { // the grant of the user's message, older ones drained
			select {
			case g = <-grants:
			default:
				return res, fmt.Errorf("round %d: no grant named a speaker for the message", round)
			}
		}
		smu.Lock()
		heard := starts[g.speaker]
		smu.Unlock()
		if heard.IsZero() {
			return res, fmt.Errorf("round %d: %s was granted the turn and never spoke", round, g.speaker)
		}
		res.GrantToAudio = append(res.GrantToAudio, heard.Sub(g.at))
	}
	if p := fake.Problems(); len(p) > 0 {
		return res, fmt.Errorf("model server saw bad requests: %v", p)
	}
	return res, nil
}
