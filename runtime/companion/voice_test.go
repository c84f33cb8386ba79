package companion_test

import (
	"context"
	"encoding/json"
	"sync"
	"testing"
	"time"

	"github.com/chorus-robotics/chorus/runtime/brain"
	"github.com/chorus-robotics/chorus/runtime/brain/braintest"
	"github.com/chorus-robotics/chorus/runtime/bus"
	"github.com/chorus-robotics/chorus/runtime/bus/bustest"
	"github.com/chorus-robotics/chorus/runtime/clock"
	"github.com/chorus-robotics/chorus/runtime/companion"
	"github.com/chorus-robotics/chorus/runtime/metrics"
	"github.com/chorus-robotics/chorus/runtime/protocol"
	"github.com/chorus-robotics/chorus/runtime/query"
	"github.com/chorus-robotics/chorus/runtime/room"
	"github.com/chorus-robotics/chorus/runtime/topic"
)

// voiceRig runs hana, an overlapped companion on a fake clock, with a fake
// device that holds speaks until their start, on the in-memory broker;
// the test plays kyoko (a member whose voice hana follows), the floor and
// a user.
type voiceRig struct {
	t     *testing.T
	mem   *bustest.Memory
	s     topic.Scheme
	m     *metrics.Metrics
	clk   *clock.Fake
	ctx   context.Context
	wg    sync.WaitGroup
	dev   *fakeVoice
	kyoko *room.Room
	floor *room.Room
	user  *room.Room
	seen  chan any // hana's Messages and speaking statuses
	voted chan string
}

// fakeVoice is a device that plays for a fixed time once started.
type fakeVoice struct {
	mu      sync.Mutex
	speaks  []protocol.SpeakRequest
	starts  []string
	stops   []string
	cancels int
	release map[string]chan struct{}
	stopped chan struct{}
}

// The fake decodes what it is asked as strictly as device/speak does.
func (v *fakeVoice) handleSpeak(ctx context.Context, _ string, body json.RawMessage) (any, error) {
	c, err := protocol.DecodeSpeakRequest(body, 0)
	if err != nil {
		return nil, err
	}
	v.mu.Lock()
	v.speaks = append(v.speaks, c)
	ch := make(chan struct{})
	if c.Hold != "" {
		v.release[c.Hold] = ch
	} else {
		close(ch)
	}
	stopped := v.stopped
	v.mu.Unlock()
	select {
	case <-ch:
	case <-ctx.Done():
		v.mu.Lock()
		v.cancels++
		v.mu.Unlock()
		return nil, ctx.Err()
	}
	select { // plays until stopped or the test lets it end
	case <-stopped:
		return protocol.SpeakResult{DurationMs: 700, StartedAt: time.Now().UTC(), Stopped: true}, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func (v *fakeVoice) handleStart(_ context.Context, _ string, body json.RawMessage) (any, error) {
	b, err := protocol.DecodeSpeakStart(body, 0)
	if err != nil {
		return nil, err
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	v.starts = append(v.starts, b.Hold)
	if ch, ok := v.release[b.Hold]; ok {
		close(ch)
		delete(v.release, b.Hold)
	}
	return map[string]bool{"started": true}, nil
}

func (v *fakeVoice) handleStop(_ context.Context, _ string, body json.RawMessage) (any, error) {
	b, err := protocol.DecodeSpeakStop(body, 0)
	if err != nil {
		return nil, err
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	v.stops = append(v.stops, string(b.At))
	return map[string]bool{"stopped": true}, nil
}

// end lets the utterance that plays end.
func (v *fakeVoice) end() {
	v.mu.Lock()
	defer v.mu.Unlock()
	close(v.stopped)
	v.stopped = make(chan struct{})
}

func (v *fakeVoice) counts() (speaks, starts, stops, cancels int) {
	v.mu.Lock()
	defer v.mu.Unlock()
	return len(v.speaks), len(v.starts), len(v.stops), v.cancels
}

const pause = 200 * time.Millisecond

func newVoiceRig(t *testing.T, bargeIn protocol.BargeIn) *voiceRig {
	return newVoiceRigWith(t, bargeIn, nil)
}

// newVoiceRigWith is newVoiceRig with hana's config changed by mod.
func newVoiceRigWith(t *testing.T, bargeIn protocol.BargeIn, mod func(*companion.Config)) *voiceRig {
	ctx, cancel := context.WithCancel(context.Background())
	r := &voiceRig{t: t, mem: bustest.NewMemory(t), s: topic.New(""), m: metrics.New(), ctx: ctx,
		clk: clock.NewFake(time.Date(2026, 11, 22, 9, 0, 0, 0, time.UTC)), seen: make(chan any, 256), voted: make(chan string, 64),
		dev: &fakeVoice{release: map[string]chan struct{}{}, stopped: make(chan struct{})}}
	t.Cleanup(func() { cancel(); r.wg.Wait() })
	members := []string{"kyoko", "hana"}
	mk := func(name string, birth func(time.Time) *bus.Retained, will *bus.Retained) *room.Room {
		rm := room.New(r.mem.NamedConn(name, birth, will), r.s, "lr", nil, r.m)
		rm.SetMembers(members)
		return rm
	}
	kb, kw := room.New(nil, r.s, "lr", nil, nil).PresenceMessages("kyoko", "kyoko")
	r.kyoko = mk("kyoko", kb, kw)
	r.floor, r.user = mk("floor", nil, nil), mk("user", nil, nil)
	obs := mk("observer", nil, nil)
	obs.OnMessage(ctx, func(m protocol.Message) {
		if m.Params.From == "hana" {
			r.seen <- m
		}
	})
	obs.OnState(ctx, func(st protocol.State) {
		if st.Params.From == "hana" {
			r.voted <- st.Params.MessageID
		}
	})
	obs.OnSpeaking(ctx, func(e room.SpeakingEvent) {
		if e.ID == "hana" {
			r.seen <- e.Speaking
		}
	})

	hb, hw := room.New(nil, r.s, "lr", nil, nil).PresenceMessages("hana", "hana")
	hr := mk("hana", hb, hw)
	srv := &query.Server{Bus: hr.Bus, Scheme: r.s, Device: "hana"}
	srv.Handle(protocol.TypeSpeak, r.dev.handleSpeak)
	srv.Handle(protocol.TypeSpeakStart, r.dev.handleStart)
	srv.Handle(protocol.TypeSpeakStop, r.dev.handleStop)
	r.run(srv.Serve)
	speaks := &braintest.Func{ThinkFn: func(_ context.Context, in brain.Input) (brain.Thought, error) {
		return brain.Thought{State: protocol.Speak, Importance: 5, Closing: protocol.ClosingNone, Draft: "Hana answers."}, nil
	}}
	cfg := companion.Config{Room: hr, Card: brain.Card{ID: "hana", Name: "Hana", SampleLines: []string{"Hi."}, Language: "en"},
		Brain: speaks, Device: "hana", Queries: query.NewClient(hr.Bus, r.s, "hana", query.ClientOptions{Timeout: 5 * time.Second}),
		Pause: pause, Clock: r.clk, Overlap: true, BargeIn: bargeIn}
	if mod != nil {
		mod(&cfg)
	}
	c, err := companion.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	r.run(c.Run)
	pctx, pcancel := context.WithTimeout(ctx, 5*time.Second)
	defer pcancel()
	if err := c.Ping(pctx); err != nil { // its loop turns: subscribed
		t.Fatal(err)
	}
	r.mem.Settle()
	time.Sleep(50 * time.Millisecond) // the observer's subscriptions
	return r
}

func (r *voiceRig) run(f func(context.Context) error) {
	r.wg.Add(1)
	go func() { defer r.wg.Done(); f(r.ctx) }()
}

// kyokoSpeaks announces kyoko's voice for a new message (for d), publishes
// the message marked as being spoken, and grants hana the answer.
func (r *voiceRig) kyokoSpeaks(d time.Duration) string {
	id := protocol.NewID()
	r.kyokoVoice(protocol.Speaking{MessageID: id, Speaking: true, StartedAt: r.clk.Now(), DurationMs: int(d.Milliseconds())})
	m := protocol.NewMessage(id, "kyoko", nil, "Kyoko is talking for a while.", "")
	m.Params.Metadata[protocol.MetaSpeaking] = true
	if err := r.kyoko.SendMessage(r.ctx, m); err != nil {
		r.t.Fatal(err)
	}
	timeout := time.After(5 * time.Second)
	for { // hana voted on it
		select {
		case v := <-r.voted:
			if v == id {
				return id
			}
		case <-timeout:
			r.t.Fatal("hana never voted on kyoko's message")
		}
	}
}

func (r *voiceRig) kyokoEnds(id string) {
	r.kyokoVoice(protocol.Speaking{MessageID: id, Speaking: false, StartedAt: r.clk.Now(), DurationMs: 1000})
}

// kyokoVoice publishes kyoko's speaking status and lets hana take it in.
func (r *voiceRig) kyokoVoice(s protocol.Speaking) {
	b, _ := json.Marshal(s)
	if err := r.kyoko.Bus.Publish(r.ctx, r.s.Speaking("lr", "kyoko"), b, true); err != nil {
		r.t.Fatal(err)
	}
	r.mem.Settle()
	time.Sleep(20 * time.Millisecond)
}

func (r *voiceRig) grant(id string) {
	if err := r.floor.SendGrant(r.ctx, grantTo("hana", id)); err != nil {
		r.t.Fatal(err)
	}
	r.mem.Settle()
}

// prepared waits until hana's device holds a speak.
func (r *voiceRig) prepared() {
	r.t.Helper()
	waitFor(r.t, func() bool { n, _, _, _ := r.dev.counts(); return n == 1 })
	time.Sleep(20 * time.Millisecond) // the loop has had its chance to start early
}

func (r *voiceRig) started() bool {
	_, n, _, _ := r.dev.counts()
	return n > 0
}

// advance moves the fake clock and lets hana's loop act on it.
func (r *voiceRig) advance(d time.Duration) {
	r.clk.Advance(d)
	time.Sleep(20 * time.Millisecond)
	r.mem.Settle()
}

// hanaSaid waits for hana's Message and her speaking status.
func (r *voiceRig) hanaSaid() (protocol.Message, protocol.Speaking) {
	r.t.Helper()
	var m *protocol.Message
	var s *protocol.Speaking
	timeout := time.After(5 * time.Second)
	for m == nil || s == nil {
		select {
		case e := <-r.seen:
			switch v := e.(type) {
			case protocol.Message:
				m = &v
			case protocol.Speaking:
				if v.Speaking {
					s = &v
				}
			}
		case <-timeout:
			r.t.Fatalf("hana's message %v, status %v", m, s)
		}
	}
	return *m, *s
}

// The next speaker prepares while the one it answers still talks, and
// starts the pause after that voice ends: then its Message goes out,
// marked as being spoken, and its speaking status says so (issue 13).
func TestNextSpeakerStartsThePauseAfterTheVoiceItAnswers(t *testing.T) {
	r := newVoiceRig(t, protocol.BargeInSentence)
	id := r.kyokoSpeaks(3 * time.Second)
	r.grant(id)
	r.prepared()
	r.advance(time.Second)
	if r.started() {
		t.Fatal("hana started while kyoko was still speaking")
	}
	r.kyokoEnds(id)
	r.advance(pause - 10*time.Millisecond)
	if r.started() {
		t.Fatal("hana started before the pause after kyoko's voice had passed")
	}
	r.advance(10 * time.Millisecond)
	waitFor(t, r.started)
	m, s := r.hanaSaid()
	if sp, _ := m.Params.Metadata[protocol.MetaSpeaking].(bool); !sp || m.Params.ID != s.MessageID || s.DurationMs <= 0 {
		t.Fatalf("message %+v, status %+v", m.Params, s)
	}
	r.dev.end()
	waitFor(t, func() bool {
		select {
		case e := <-r.seen:
			v, ok := e.(protocol.Speaking)
			return ok && !v.Speaking && v.MessageID == m.Params.ID
		default:
			return false
		}
	})
}

// A person's heard Message is answered without the pause after its
// arrival: the pause is the silence after a voice, and the person's voice
// ended a hangover before their Message came (issue 40: with hangover_plain
// at 900 ms, a statement's answer waited 200 ms more for nothing). A typed
// Message still waits the pause.
func TestAnswerToAHeardMessageWaitsNoPause(t *testing.T) {
	for _, heard := range []bool{false, true} {
		t.Run(map[bool]string{false: "typed", true: "heard"}[heard], func(t *testing.T) {
			r := newVoiceRig(t, protocol.BargeInSentence)
			id := protocol.NewID()
			m := protocol.NewMessage(id, "user", nil, "Hello Hana, my sister is coming tomorrow.", "")
			if heard {
				m.Params.Metadata[protocol.MetaSource] = protocol.SourceVoice
			}
			if err := r.kyoko.SendMessage(r.ctx, m); err != nil {
				t.Fatal(err)
			}
			timeout := time.After(5 * time.Second)
			for voted := false; !voted; {
				select {
				case v := <-r.voted:
					voted = v == id
				case <-timeout:
					t.Fatal("hana never voted on the person's message")
				}
			}
			r.grant(id)
			r.prepared()
			if r.started() != heard {
				t.Fatalf("started at once: %v, want %v", r.started(), heard)
			}
			if !heard {
				r.advance(pause)
				waitFor(t, r.started)
			}
			r.dev.end()
		})
	}
}

// A body that does not know the speak hold (aikyo's clients behind the
// bridge) is sent nothing while the voice it answers plays: its one speak,
// without a hold, comes the pause after that voice ended, and the
// Message goes out with it, marked as being spoken. Before, it was sent a
// held speak at the grant and played it at once, over the other robot.
func TestBodyWithoutHoldGetsItsWordsWhenTheFloorIsFree(t *testing.T) {
	r := newVoiceRigWith(t, protocol.BargeInSentence, func(c *companion.Config) { c.NoHold = true })
	id := r.kyokoSpeaks(3 * time.Second)
	r.grant(id)
	time.Sleep(50 * time.Millisecond) // hana's words are ready
	r.advance(time.Second)
	if n, _, _, _ := r.dev.counts(); n != 0 {
		t.Fatalf("hana's body was sent %d speaks while kyoko was still speaking", n)
	}
	r.kyokoEnds(id)
	r.advance(pause - 10*time.Millisecond)
	if n, _, _, _ := r.dev.counts(); n != 0 {
		t.Fatal("hana's body was sent its speak before the pause after kyoko's voice had passed")
	}
	r.advance(10 * time.Millisecond)
	waitFor(t, func() bool { n, _, _, _ := r.dev.counts(); return n == 1 })
	r.dev.mu.Lock()
	q := r.dev.speaks[0]
	r.dev.mu.Unlock()
	if q.Hold != "" || q.Message != "Hana answers." {
		t.Fatalf("the speak %+v, want the words without a hold", q)
	}
	m, s := r.hanaSaid()
	if sp, _ := m.Params.Metadata[protocol.MetaSpeaking].(bool); !sp || m.Params.ID != s.MessageID || m.Params.ID != q.MessageID {
		t.Fatalf("message %+v, status %+v", m.Params, s)
	}
	if _, starts, _, _ := r.dev.counts(); starts != 0 {
		t.Fatalf("%d speak.start sent to a body without the hold", starts)
	}
	r.dev.end()
}

// A speaker whose device dies mid-utterance never says its voice ended:
// it holds the next speaker up for its announced duration plus the
// margin, no longer.
func TestAVoiceWhoseEndNeverComesHoldsNobodyUpPastItsBound(t *testing.T) {
	r := newVoiceRig(t, protocol.BargeInSentence)
	id := r.kyokoSpeaks(2 * time.Second)
	r.grant(id)
	r.prepared()
	r.advance(2*time.Second + protocol.VoiceMargin - 10*time.Millisecond)
	if r.started() {
		t.Fatal("hana started before kyoko's bound")
	}
	r.advance(10*time.Millisecond + pause)
	waitFor(t, r.started)
	r.hanaSaid()
}

// A grant for a message older than a user's newer one is void: nobody
// answers what the user talked over.
func TestGrantAfterANewerUserMessageIsVoid(t *testing.T) {
	r := newVoiceRig(t, protocol.BargeInSentence)
	id := r.kyokoSpeaks(time.Second)
	u := protocol.NewMessage(protocol.NewID(), "user", nil, "Wait, everyone!", "")
	if err := r.user.SendMessage(r.ctx, u); err != nil {
		t.Fatal(err)
	}
	r.mem.Settle()
	time.Sleep(20 * time.Millisecond)
	r.grant(id)
	waitFor(t, func() bool {
		return metrics.Value(r.m.IgnoredGrants.WithLabelValues("void")) == 1
	})
	r.advance(5 * time.Second)
	if n, _, _, _ := r.dev.counts(); n != 0 {
		t.Fatalf("the void grant was prepared (%d speaks)", n)
	}
}

// A user's Message while hana speaks stops her after the sentence; while
// she only waits to start, her turn is given up and nothing is said.
func TestUserBargesIn(t *testing.T) {
	t.Run("speaking", func(t *testing.T) {
		r := newVoiceRig(t, protocol.BargeInSentence)
		id := r.kyokoSpeaks(time.Second)
		r.grant(id)
		r.prepared()
		r.kyokoEnds(id)
		r.advance(pause)
		waitFor(t, r.started)
		r.hanaSaid()
		r.user.SendMessage(r.ctx, protocol.NewMessage(protocol.NewID(), "user", nil, "Stop, please.", ""))
		r.mem.Settle()
		waitFor(t, func() bool { _, _, n, _ := r.dev.counts(); return n == 1 })
		if r.dev.stops[0] != "sentence" {
			t.Fatalf("stopped %q", r.dev.stops[0])
		}
	})
	t.Run("waiting", func(t *testing.T) {
		r := newVoiceRig(t, protocol.BargeInSentence)
		id := r.kyokoSpeaks(5 * time.Second)
		r.grant(id)
		r.prepared()
		r.user.SendMessage(r.ctx, protocol.NewMessage(protocol.NewID(), "user", nil, "Stop, please.", ""))
		r.mem.Settle()
		waitFor(t, func() bool { _, _, _, n := r.dev.counts(); return n == 1 })
		r.kyokoEnds(id)
		r.advance(time.Second)
		if r.started() {
			t.Fatal("a turn given up at the barge-in started")
		}
		select {
		case e := <-r.seen:
			t.Fatalf("hana said something after giving her turn up: %+v", e)
		default:
		}
	})
}
