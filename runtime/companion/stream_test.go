package companion_test

import (
	"context"
	"encoding/json"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/chorus-robotics/chorus/runtime/brain"
	"github.com/chorus-robotics/chorus/runtime/brain/braintest"
	"github.com/chorus-robotics/chorus/runtime/bus/bustest"
	"github.com/chorus-robotics/chorus/runtime/companion"
	"github.com/chorus-robotics/chorus/runtime/metrics"
	"github.com/chorus-robotics/chorus/runtime/protocol"
	"github.com/chorus-robotics/chorus/runtime/query"
	"github.com/chorus-robotics/chorus/runtime/room"
)

// streamRig runs kyoko with a brain that streams (braintest.Stream) and a
// body that takes speaks still being written, on the in-memory broker;
// the test plays the user and the floor.
type streamRig struct {
	t      *testing.T
	mem    *bustest.Memory
	ctx    context.Context
	obs    *room.Room
	said   chan protocol.Message
	states chan protocol.State
	body   *moreBody
}

// moreBody is a body that takes speak.more as device/speak does: a speak
// with more ends with the append that says no more; a held one starts on
// speak.start.
type moreBody struct {
	mu      sync.Mutex
	speaks  []protocol.SpeakRequest
	appends []protocol.SpeakMore
	heard   chan string // "speak", "more", "start": each request as it comes
	ended   map[string]chan struct{}
	stopped map[string]bool
	holds   map[string]chan struct{}
}

func (b *moreBody) handleSpeak(ctx context.Context, _ string, body json.RawMessage) (any, error) {
	r, err := protocol.DecodeSpeakRequest(body, 0)
	if err != nil {
		return nil, err
	}
	b.mu.Lock()
	b.speaks = append(b.speaks, r)
	end, hold := b.chans(r.MessageID, r.Hold)
	b.mu.Unlock()
	b.heard <- "speak"
	if r.Hold != "" {
		select {
		case <-hold:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	if r.More {
		select {
		case <-end:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	b.mu.Lock()
	stopped := b.stopped[r.MessageID]
	b.mu.Unlock()
	return protocol.SpeakResult{DurationMs: 900, StartedAt: time.Now().UTC(), Stopped: stopped}, nil
}

func (b *moreBody) chans(id, hold string) (end, held chan struct{}) {
	if b.ended[id] == nil {
		b.ended[id] = make(chan struct{})
	}
	if hold != "" && b.holds[hold] == nil {
		b.holds[hold] = make(chan struct{})
	}
	return b.ended[id], b.holds[hold]
}

func (b *moreBody) handleMore(_ context.Context, _ string, body json.RawMessage) (any, error) {
	m, err := protocol.DecodeSpeakMore(body, 0)
	if err != nil {
		return nil, err
	}
	b.mu.Lock()
	b.appends = append(b.appends, m)
	end, _ := b.chans(m.MessageID, "")
	if !m.More {
		close(end)
	}
	b.mu.Unlock()
	b.heard <- "more"
	return protocol.SpeakMoreResult{Appended: true}, nil
}

func (b *moreBody) handleStart(_ context.Context, _ string, body json.RawMessage) (any, error) {
	s, err := protocol.DecodeSpeakStart(body, 0)
	if err != nil {
		return nil, err
	}
	b.mu.Lock()
	_, hold := b.chans("", s.Hold)
	close(hold)
	b.mu.Unlock()
	b.heard <- "start"
	return protocol.SpeakStartResult{Started: true}, nil
}

// handleStop ends every open speak, after its sentence, as the device does.
func (b *moreBody) handleStop(_ context.Context, _ string, body json.RawMessage) (any, error) {
	if _, err := protocol.DecodeSpeakStop(body, 0); err != nil {
		return nil, err
	}
	b.mu.Lock()
	for id, end := range b.ended {
		select {
		case <-end:
		default:
			close(end)
			b.stopped[id] = true
		}
		delete(b.ended, id)
	}
	b.mu.Unlock()
	b.heard <- "stop"
	return protocol.SpeakStopResult{Stopped: true}, nil
}

func (b *moreBody) requests() ([]protocol.SpeakRequest, []protocol.SpeakMore) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return slices.Clone(b.speaks), slices.Clone(b.appends)
}

func newStreamRig(t *testing.T, br brain.Brain, mod func(*companion.Config)) *streamRig {
	t.Helper()
	mem := bustest.NewMemory(t)
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	t.Cleanup(func() { cancel(); wg.Wait() })
	run := func(f func(context.Context) error) {
		wg.Add(1)
		go func() { defer wg.Done(); f(ctx) }()
	}
	r := &streamRig{t: t, mem: mem, ctx: ctx, said: make(chan protocol.Message, 16), states: make(chan protocol.State, 16),
		body: &moreBody{heard: make(chan string, 64), ended: map[string]chan struct{}{}, stopped: map[string]bool{}, holds: map[string]chan struct{}{}}}
	rm := room.New(nil, topicScheme(), "lr", nil, metrics.New())
	rm.SetMembers(members)
	birth, will := rm.PresenceMessages("kyoko", "kyoko")
	conn := mem.Conn(birth, will)
	rm.Bus = conn
	srv := &query.Server{Bus: conn, Scheme: rm.Scheme, Device: "kyoko"}
	srv.Handle(protocol.TypeSpeak, r.body.handleSpeak)
	srv.Handle(protocol.TypeSpeakMore, r.body.handleMore)
	srv.Handle(protocol.TypeSpeakStart, r.body.handleStart)
	srv.Handle(protocol.TypeSpeakStop, r.body.handleStop)
	run(srv.Serve)
	cfg := companion.Config{Room: rm, Card: cards()[0], Brain: br, Device: "kyoko", SpeakMore: true,
		Queries: query.NewClient(conn, rm.Scheme, "kyoko", query.ClientOptions{}), Pause: time.Millisecond, SpeakTimeout: 5 * time.Second}
	if mod != nil {
		mod(&cfg)
	}
	c, err := companion.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	run(c.Run)
	r.obs = room.New(mem.Conn(nil, nil), rm.Scheme, "lr", nil, nil)
	r.obs.OnMessage(ctx, func(m protocol.Message) {
		if m.Params.From == "kyoko" {
			r.said <- m
		}
	})
	r.obs.OnState(ctx, func(s protocol.State) { r.states <- s })
	// The ears' reports are subscribed after the room's other topics (CI saw a
	// tentative report published before it, and no think).
	waitFor(t, func() bool { return slices.Contains(mem.Subscriptions(), rm.Scheme.Heards("lr")) })
	mem.Settle()
	return r
}

func (r *streamRig) userSays(id, text string) {
	if err := r.obs.SendMessage(r.ctx, protocol.NewMessage(id, "user", nil, text, "")); err != nil {
		r.t.Fatal(err)
	}
}

func (r *streamRig) grant(id string) {
	s := "kyoko"
	if err := r.obs.SendGrant(r.ctx, protocol.TurnGrant{From: "floor", MessageID: id, Speaker: &s,
		Reason: protocol.ReasonSpeak, DecidedBy: protocol.DecidedAllVoted, Votes: []protocol.Vote{}}); err != nil {
		r.t.Fatal(err)
	}
}

func (r *streamRig) state() protocol.State {
	r.t.Helper()
	return within(r.t, r.states, "no State")
}

// heard waits until the body has been asked each of kinds, in any order
// (queries run side by side).
func (r *streamRig) heard(kinds ...string) {
	r.t.Helper()
	timeout := time.After(5 * time.Second)
	for len(kinds) > 0 {
		select {
		case k := <-r.body.heard:
			if i := slices.Index(kinds, k); i >= 0 {
				kinds = slices.Delete(kinds, i, i+1)
			}
		case <-timeout:
			r.t.Fatalf("the body was never asked %v", kinds)
		}
	}
}

func (r *streamRig) message() protocol.Message {
	r.t.Helper()
	return within(r.t, r.said, "no Message")
}

// noMessage asserts that no Message has been published by now.
func (r *streamRig) noMessage(why string) {
	r.t.Helper()
	r.mem.Settle()
	select {
	case m := <-r.said:
		r.t.Fatalf("%s: a Message went out: %q", why, m.Params.Message)
	default:
	}
}

func speaker(sentences ...string) *braintest.Stream {
	return &braintest.Stream{Thought: brain.Thought{State: protocol.Speak, Importance: 6, Closing: protocol.ClosingNone,
		Emotion: protocol.EmotionHappy}, Sentences: sentences, Gate: make(chan struct{})}
}

// The State leaves as soon as the model has written the vote, while the
// draft is still being written (issue 28, item 2). Before, the companion
// waited for the whole answer.
func TestStreamedVoteLeavesBeforeTheDraft(t *testing.T) {
	b := speaker("Good morning.", "The garden is lovely today.")
	r := newStreamRig(t, b, nil)
	r.userSays("m1", "Hello!")
	s := r.state() // the gate is shut: nothing of the draft is complete
	if s.Params.MessageID != "m1" || s.Params.State != protocol.Speak || s.Params.Importance != 6 {
		t.Fatalf("State %+v", s.Params)
	}
	close(b.Gate)
}

// A granted turn speaks the first sentence while the rest is still being
// written, appends the rest, and publishes one Message with the whole
// draft once it is complete (issue 28, item 4), in both turn modes.
func TestSpeechStartsOnTheFirstSentence(t *testing.T) {
	for _, overlap := range []bool{false, true} {
		name := map[bool]string{false: "sequential", true: "overlapped"}[overlap]
		t.Run(name, func(t *testing.T) {
			b := speaker("Good morning.", "The garden is lovely today.")
			r := newStreamRig(t, b, func(c *companion.Config) { c.Overlap = overlap })
			r.userSays("m1", "Hello!")
			r.state()
			r.grant("m1")
			if overlap {
				r.heard("speak", "start")
			} else {
				r.heard("speak")
			}
			speaks, _ := r.body.requests()
			if len(speaks) != 1 || speaks[0].Message != "Good morning." || !speaks[0].More || speaks[0].Emotion != protocol.EmotionNeutral {
				t.Fatalf("first speak %+v, want the first sentence with more, neutral until the emotion is written", speaks)
			}
			r.noMessage("the draft is not complete")
			b.Gate <- struct{}{} // the second sentence
			r.heard("more")
			r.noMessage("the draft is still not complete")
			close(b.Gate) // the end
			m := r.message()
			if m.Params.Message != "Good morning. The garden is lovely today." || m.Params.Metadata[protocol.MetaCut] != nil {
				t.Fatalf("Message %q %v", m.Params.Message, m.Params.Metadata)
			}
			speaks, appends := r.body.requests()
			var more []string
			for _, a := range appends {
				more = append(more, a.Message)
				if a.MessageID != m.Params.ID || a.MessageID != speaks[0].MessageID {
					t.Fatalf("append %+v is not for message %s", a, m.Params.ID)
				}
			}
			if len(speaks) != 1 || len(appends) != 2 || appends[0].Seq != 1 || !appends[0].More || appends[1].Seq != 2 || appends[1].More ||
				!slices.Equal(more, []string{"The garden is lovely today.", ""}) {
				t.Fatalf("speaks %+v, appends %+v", speaks, appends)
			}
			// The model writes the emotion after its words: the end mark
			// carries it, and the Message has it.
			if appends[0].Emotion != "" || appends[1].Emotion != protocol.EmotionHappy || m.Params.Emotion() != protocol.EmotionHappy {
				t.Fatalf("emotions: appends %q %q, Message %q; want the end mark and the Message happy", appends[0].Emotion, appends[1].Emotion, m.Params.Emotion())
			}
			r.noMessage("one Message per utterance")
		})
	}
}

// A model whose answer stops mid-draft: what was complete is said and no
// more, and the Message holds that, marked cut (issue 28, item 5).
func TestCutDraftSaysWhatWasComplete(t *testing.T) {
	b := speaker("Good morning.", "The garden is", "never finished.")
	b.CutAfter = 1
	r := newStreamRig(t, b, nil)
	r.userSays("m1", "Hello!")
	r.state()
	r.grant("m1")
	r.heard("speak")
	close(b.Gate)
	m := r.message()
	if m.Params.Message != "Good morning." || m.Params.Metadata[protocol.MetaCut] != true {
		t.Fatalf("Message %q %v, want the first sentence marked cut", m.Params.Message, m.Params.Metadata)
	}
	_, appends := r.body.requests()
	if len(appends) != 1 || appends[0].More || appends[0].Message != "" {
		t.Fatalf("appends %+v, want only the end", appends)
	}
}

// A stream that fails after its vote left and before any sentence takes
// the vote back (a listen State for the same message) and is never asked
// again: nothing is spoken twice.
func TestFailureAfterTheVoteTakesItBack(t *testing.T) {
	b := speaker("Never said.")
	b.FailAfterVote = true
	r := newStreamRig(t, b, nil)
	r.userSays("m1", "Hello!")
	if s := r.state(); s.Params.State != protocol.Speak {
		t.Fatalf("first State %+v", s.Params)
	}
	if s := r.state(); s.Params.State != protocol.Listen || s.Params.MessageID != "m1" {
		t.Fatalf("second State %+v, want listen for m1", s.Params)
	}
	r.grant("m1") // a grant that crossed the correction
	r.noMessage("nothing to say")
	if speaks, _ := r.body.requests(); len(speaks) != 0 {
		t.Fatalf("spoke %+v", speaks)
	}
}

// A body that does not take speak.more (behind the bridge) gets the whole
// draft in one speak, as before.
func TestBodyWithoutSpeakMoreGetsTheWholeDraft(t *testing.T) {
	b := speaker("Good morning.", "The garden is lovely today.")
	r := newStreamRig(t, b, func(c *companion.Config) { c.SpeakMore = false })
	r.userSays("m1", "Hello!")
	r.state()
	r.grant("m1")
	close(b.Gate)
	r.heard("speak")
	m := r.message()
	speaks, appends := r.body.requests()
	if len(speaks) != 1 || speaks[0].More || speaks[0].Message != m.Params.Message || len(appends) != 0 ||
		m.Params.Message != "Good morning. The garden is lovely today." {
		t.Fatalf("speaks %+v appends %+v message %q", speaks, appends, m.Params.Message)
	}
}

// A user who barges in while a robot speaks a draft still being written
// stops the words, cancels the think (its model request is closed at
// once), and the robot's turn ends with the speak: it votes on the user's
// message and, granted, answers it. Found from outside: the turn waited
// for the model's next sentence, the grant for the user's message was
// skipped ("granted while still speaking") and nobody answered.
func TestBargeInStopsAStreamingDraft(t *testing.T) {
	b := speaker("Good morning.", "The garden is lovely today.")
	b.Cancelled = make(chan struct{})
	r := newStreamRig(t, b, nil)
	r.userSays("m1", "Hello!")
	r.state()
	r.grant("m1")
	r.heard("speak")
	r.userSays("m2", "Wait, a question!")
	r.heard("stop")
	select {
	case <-b.Cancelled:
	case <-time.After(5 * time.Second):
		t.Fatal("the think of the barged-in draft was not cancelled")
	}
	if s := r.state(); s.Params.MessageID != "m2" {
		t.Fatalf("State %+v, want one for m2", s.Params)
	}
	r.noMessage("the barged-in words are not published (sequential)")
	// The floor grants m2 again until it is answered (a sentence may still
	// be playing when the first grant comes): kyoko takes it once m1's
	// speak has stopped, not when the model writes its next sentence.
	for try := 0; ; try++ {
		r.grant("m2")
		select {
		case k := <-r.body.heard:
			if k != "speak" {
				continue
			}
		case <-time.After(time.Second):
			if try < 5 {
				continue
			}
			t.Fatal("m2 was never spoken")
		}
		break
	}
	speaks, _ := r.body.requests()
	if len(speaks) != 2 || speaks[1].MessageID == speaks[0].MessageID {
		t.Fatalf("speaks %+v", speaks)
	}
	close(b.Gate)
}
