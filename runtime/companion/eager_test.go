package companion_test

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/chorus-robotics/chorus/runtime/brain"
	"github.com/chorus-robotics/chorus/runtime/brain/braintest"
	"github.com/chorus-robotics/chorus/runtime/companion"
	"github.com/chorus-robotics/chorus/runtime/memory"
	"github.com/chorus-robotics/chorus/runtime/protocol"
)

// heardBrain is a streaming brain that records the words of each think;
// with hold set, a think writes nothing until hold is closed, and one
// cancelled while it waits is counted (its model request closed).
type heardBrain struct {
	*braintest.Stream
	hold      chan struct{}
	mu        sync.Mutex
	words     []string
	recalled  []int // facts each think was given
	cancelled int
	toAuthor  bool // the thought is addressed to its Message's author
}

func (b *heardBrain) ThinkStream(ctx context.Context, in brain.Input, h brain.Heard) (brain.Thought, error) {
	b.mu.Lock()
	b.words = append(b.words, in.Message.Params.Message)
	b.recalled = append(b.recalled, len(in.Remembered))
	b.mu.Unlock()
	if b.hold != nil {
		select {
		case <-b.hold:
		case <-ctx.Done():
			b.mu.Lock()
			b.cancelled++
			b.mu.Unlock()
			return brain.Thought{}, ctx.Err()
		}
	}
	t, err := b.Stream.ThinkStream(ctx, in, h)
	if b.toAuthor {
		t.To = []string{in.Message.Params.From}
	}
	return t, err
}

func (b *heardBrain) wasCancelled() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.cancelled
}

func (b *heardBrain) thinks() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return slices.Clone(b.words)
}

// hanaHeard publishes hana's ear's report of utterance utt: its words so
// far (tentative), that the person went on (resumed), or its drop.
func (r *streamRig) hanaHeard(utt, state, text string) {
	r.t.Helper()
	now := time.Now()
	h := protocol.Heard{From: "hana", ID: protocol.NewID(), Device: "hana-body", Start: now.Add(-2 * time.Second), End: now.Add(-200 * time.Millisecond),
		Confidence: protocol.NoConfidence, Level: protocol.MinLevel, Utterance: utt, State: state, Text: text}
	if err := r.obs.SendHeard(r.ctx, h); err != nil {
		r.t.Fatal(err)
	}
	r.mem.Settle()
}

// personSays publishes the room's Message of what the person said, as the
// hearing arbiter does.
func (r *streamRig) personSays(id, text string) {
	r.t.Helper()
	r.voiceSays(id, protocol.DefaultHeardUser, text, "")
}

// voiceSays is personSays from `from`, with the robots' reading of the
// voice ("" when they identify none).
func (r *streamRig) voiceSays(id, from, text, reading string) {
	r.t.Helper()
	m := protocol.NewMessage(id, from, nil, text, "")
	m.Params.Metadata[protocol.MetaSource] = protocol.SourceVoice
	if reading != "" {
		m.Params.Metadata[protocol.MetaVoice] = reading
	}
	if err := r.obs.SendMessage(r.ctx, m); err != nil {
		r.t.Fatal(err)
	}
	r.mem.Settle()
}

func (r *streamRig) noState(why string) {
	r.t.Helper()
	r.mem.Settle()
	time.Sleep(50 * time.Millisecond)
	select {
	case s := <-r.states:
		r.t.Fatalf("%s: a State went out: %+v", why, s.Params)
	default:
	}
}

func waitThinks(t *testing.T, b *heardBrain, want ...string) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !slices.Equal(b.thinks(), want) {
		if time.Now().After(deadline) {
			t.Fatalf("the brain thought on %q, want %q", b.thinks(), want)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// The companion thinks on a person's words so far while they pause, says
// nothing of it, and votes on their Message at once when it says the same
// words: one model call, the vote already written.
func TestEagerThinkBecomesTheMessages(t *testing.T) {
	for _, gate := range []string{"vote written before the Message", "vote written after the Message"} {
		t.Run(gate, func(t *testing.T) {
			b := &heardBrain{Stream: speaker("It is noon.", "Time for lunch."), hold: make(chan struct{})}
			close(b.Gate)
			r := newStreamRig(t, b, nil)
			utt := protocol.NewID()
			r.hanaHeard(utt, protocol.HeardOpen, "")
			if gate == "vote written before the Message" {
				close(b.hold)
			}
			r.hanaHeard(utt, protocol.HeardTentative, "What time is it")
			waitThinks(t, b, "What time is it")
			r.noState("on words so far")
			r.noMessage("on words so far")
			r.hanaHeard(utt, "", "") // its transcript (a report without text is refused: only the Message counts)
			r.personSays("voice-1", "what time is it?")
			if gate == "vote written after the Message" {
				r.noState("the vote is not written yet")
				close(b.hold)
			}
			s := r.state()
			if s.Params.MessageID != "voice-1" || s.Params.State != protocol.Speak {
				t.Fatalf("State %+v, want the Message's", s.Params)
			}
			r.grant("voice-1")
			r.heard("speak")
			if m := r.message(); m.Params.Message != "It is noon. Time for lunch." {
				t.Fatalf("said %q", m.Params.Message)
			}
			if got := b.thinks(); len(got) != 1 {
				t.Fatalf("the brain thought %d times (%q); want once", len(got), got)
			}
		})
	}
}

// The person goes on after a pause: the think on their words so far is
// cancelled at once (its model request closed), nothing was said of it,
// and their Message is thought on anew. So is a Message that says other
// words than the words so far.
func TestEagerThinkWithdrawn(t *testing.T) {
	for _, tc := range []struct {
		name string
		then func(r *streamRig, utt string)
	}{
		{"the person went on", func(r *streamRig, utt string) { r.hanaHeard(utt, protocol.HeardResumed, "") }},
		{"the utterance was dropped", func(r *streamRig, utt string) { r.hanaHeard(utt, protocol.HeardDropped, "") }},
		{"the Message says more", func(*streamRig, string) {}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := &heardBrain{Stream: speaker("It is noon."), hold: make(chan struct{})}
			r := newStreamRig(t, b, nil)
			utt := protocol.NewID()
			r.hanaHeard(utt, protocol.HeardTentative, "What time is it")
			waitThinks(t, b, "What time is it")
			tc.then(r, utt)
			if tc.name == "the Message says more" {
				r.personSays("voice-2", "What time is it in Tokyo?")
			}
			waitFor(t, func() bool { return b.wasCancelled() == 1 }) // at once: the Message has not come
			r.noState("withdrawn")
			if tc.name != "the Message says more" {
				r.personSays("voice-2", "What time is it in Tokyo?")
			}
			waitThinks(t, b, "What time is it", "What time is it in Tokyo?")
			close(b.hold)
			close(b.Gate)
			if s := r.state(); s.Params.MessageID != "voice-2" {
				t.Fatalf("State %+v, want the Message's", s.Params)
			}
			r.noState("one State")
		})
	}
}

// Words so far told by a second robot of the same sentence start no
// second think; the same words told again neither.
func TestEagerOneThinkPerSentence(t *testing.T) {
	b := &heardBrain{Stream: speaker("It is noon.")}
	r := newStreamRig(t, b, nil)
	utt := protocol.NewID()
	r.hanaHeard(utt, protocol.HeardTentative, "What time is it")
	r.hanaHeard(utt, protocol.HeardTentative, "what time is it?")
	h := protocol.Heard{From: "aya", ID: protocol.NewID(), Device: "aya-body", Start: time.Now().Add(-time.Second), End: time.Now(),
		Confidence: protocol.NoConfidence, Level: protocol.MinLevel, Utterance: protocol.NewID(), State: protocol.HeardTentative, Text: "What dime is it"}
	if err := r.obs.SendHeard(r.ctx, h); err != nil {
		t.Fatal(err)
	}
	r.mem.Settle()
	waitThinks(t, b, "What time is it")
	time.Sleep(50 * time.Millisecond)
	waitThinks(t, b, "What time is it")
	close(b.Gate)
	r.hanaHeard(utt, "", "What time is it") // its transcript
	r.personSays("voice-3", "What time is it")
	if s := r.state(); s.Params.MessageID != "voice-3" {
		t.Fatalf("State %+v", s.Params)
	}
	// A copy of the tentative report after its utterance ended starts
	// nothing.
	r.hanaHeard(utt, protocol.HeardTentative, "What time is it")
	time.Sleep(50 * time.Millisecond)
	waitThinks(t, b, "What time is it")
}

// A think whose Message does not come a second after the utterance's
// transcript (a standby floor, a report the arbiter found late) is
// cancelled, and the next sentence's words are thought on.
func TestEagerThinkWithoutItsMessage(t *testing.T) {
	b := &heardBrain{Stream: speaker("It is noon."), hold: make(chan struct{})}
	r := newStreamRig(t, b, nil)
	utt := protocol.NewID()
	r.hanaHeard(utt, protocol.HeardTentative, "What time is it")
	waitThinks(t, b, "What time is it")
	r.hanaHeard(utt, "", "What time is it")
	waitFor(t, func() bool { return b.wasCancelled() == 1 })
	r.noState("no Message")
	next := protocol.NewID()
	r.hanaHeard(next, protocol.HeardTentative, "Is it raining")
	waitThinks(t, b, "What time is it", "Is it raining")
}

// A tentative report whose utterance never ends (its robot killed, a
// forged report) holds the words of a later sentence from nobody: words
// that begin after it are thought on.
func TestEagerLaterSentenceIsThoughtOn(t *testing.T) {
	b := &heardBrain{Stream: speaker("It is noon."), hold: make(chan struct{})}
	r := newStreamRig(t, b, nil)
	old := protocol.Heard{From: "aya", ID: protocol.NewID(), Device: "aya-body", Start: time.Now().Add(-20 * time.Second), End: time.Now().Add(-19 * time.Second),
		Confidence: protocol.NoConfidence, Level: protocol.MinLevel, Utterance: protocol.NewID(), State: protocol.HeardTentative, Text: "tell me a story"}
	if err := r.obs.SendHeard(r.ctx, old); err != nil {
		t.Fatal(err)
	}
	r.mem.Settle()
	waitThinks(t, b, "tell me a story")
	r.hanaHeard(protocol.NewID(), protocol.HeardTentative, "What time is it")
	waitThinks(t, b, "tell me a story", "What time is it")
	waitFor(t, func() bool { return b.wasCancelled() == 1 })
}

// A robot whose eager end of turn is off (hearing.vad.eager: off) thinks
// on the person's Message only.
func TestNoEagerThinksOnTheMessageOnly(t *testing.T) {
	b := &heardBrain{Stream: speaker("It is noon.")}
	close(b.Gate)
	r := newStreamRig(t, b, func(c *companion.Config) { c.NoEager = true })
	utt := protocol.NewID()
	r.hanaHeard(utt, protocol.HeardTentative, "What time is it")
	time.Sleep(50 * time.Millisecond)
	waitThinks(t, b)
	r.personSays("voice-4", "What time is it")
	if s := r.state(); s.Params.MessageID != "voice-4" {
		t.Fatalf("State %+v", s.Params)
	}
	waitThinks(t, b, "What time is it")
}

// Where the robots identify voices, a think on words so far that used the
// hearing user's facts is not the Message's when the voice is unknown:
// the Message is thought on anew, with nobody's facts. Once the room is
// known to identify voices, a think on words so far recalls nothing.
func TestEagerThinkOfAnUnknownVoiceHasNoFacts(t *testing.T) {
	b := &heardBrain{Stream: speaker("Let me think.")}
	r := eagerMemRig(t, b, memory.Fact{Person: protocol.DefaultHeardUser, MessageID: "m0", Key: "like:red wine", Text: "likes red wine"})
	utt := protocol.NewID()
	r.hanaHeard(utt, protocol.HeardOpen, "")
	r.hanaHeard(utt, protocol.HeardTentative, "what do i like")
	waitThinks(t, b, "what do i like")
	r.hanaHeard(utt, "", "")
	r.voiceSays("voice-1", protocol.DefaultHeardUser, "what do i like", protocol.VoiceUnknown)
	waitThinks(t, b, "what do i like", "what do i like")
	b.mu.Lock()
	recalled := slices.Clone(b.recalled)
	b.mu.Unlock()
	if recalled[0] == 0 || recalled[1] != 0 {
		t.Fatalf("facts given: %v; want the think on words so far the hearing user's, the unknown voice's none", recalled)
	}
	r.grant("voice-1")
	r.heard("speak")
	r.message()
	// The room identifies voices: the next words so far recall nothing.
	utt = protocol.NewID()
	r.hanaHeard(utt, protocol.HeardOpen, "")
	r.hanaHeard(utt, protocol.HeardTentative, "what else do i like")
	waitThinks(t, b, "what do i like", "what do i like", "what else do i like")
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.recalled[2] != 0 {
		t.Fatalf("a think on words so far in a room that identifies voices was given %d facts", b.recalled[2])
	}
}

// A person the robots know by voice, of whom this robot remembers
// nothing, keeps the think on words so far (one model call), and the
// answer is said to them, not to the hearing user it was thought for.
func TestEagerThinkBecomesAKnownVoicesMessage(t *testing.T) {
	b := &heardBrain{Stream: speaker("It is noon."), toAuthor: true}
	r := eagerMemRig(t, b)
	utt := protocol.NewID()
	r.hanaHeard(utt, protocol.HeardOpen, "")
	r.hanaHeard(utt, protocol.HeardTentative, "what time is it")
	waitThinks(t, b, "what time is it")
	r.hanaHeard(utt, "", "")
	r.voiceSays("voice-1", "sam", "what time is it", protocol.VoiceSure)
	s := r.state()
	if s.Params.MessageID != "voice-1" {
		t.Fatalf("State %+v, want the Message's", s.Params)
	}
	r.grant("voice-1")
	r.heard("speak")
	m := r.message()
	if got := b.thinks(); len(got) != 1 {
		t.Fatalf("the brain thought %d times (%q); want once", len(got), got)
	}
	if !slices.Equal(m.Params.To, []string{"sam"}) {
		t.Fatalf("said to %v, want sam", m.Params.To)
	}
}

// eagerMemRig is a stream rig whose companion remembers facts; b's gate
// is open.
func eagerMemRig(t *testing.T, b *heardBrain, facts ...memory.Fact) *streamRig {
	t.Helper()
	st := openStore(t, t.TempDir(), "kyoko")
	if len(facts) > 0 {
		if _, err := st.Add(facts...); err != nil {
			t.Fatal(err)
		}
	}
	close(b.Gate)
	return newStreamRig(t, b, func(c *companion.Config) { c.Memory = &companion.Memory{Store: st} })
}
