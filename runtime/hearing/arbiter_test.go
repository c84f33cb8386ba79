package hearing

import (
	"context"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/chorus-robotics/chorus/runtime/bus/bustest"
	"github.com/chorus-robotics/chorus/runtime/clock"
	"github.com/chorus-robotics/chorus/runtime/metrics"
	"github.com/chorus-robotics/chorus/runtime/protocol"
	"github.com/chorus-robotics/chorus/runtime/room"
	"github.com/chorus-robotics/chorus/runtime/topic"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

var roster = []string{"aya", "hana", "kyoko"}

type harness struct {
	t      *testing.T
	mem    *bustest.Memory
	s      topic.Scheme
	clk    *clock.Fake
	m      *metrics.Metrics
	a      *Arbiter
	active atomic.Bool

	mu   sync.Mutex
	msgs []protocol.Message
}

func newHarness(t *testing.T, opts ...bustest.MemoryOptions) *harness {
	t.Helper()
	return newHarnessOf(t, nil, opts...)
}

// newHarnessOf is a harness whose room's robots may know people by voice.
func newHarnessOf(t *testing.T, people []string, opts ...bustest.MemoryOptions) *harness {
	t.Helper()
	h := &harness{t: t, mem: bustest.NewMemory(t, opts...), s: topic.New("").WithVoice("lr", "guest"),
		clk: clock.NewFake(time.Unix(1_800_000_000, 0)), m: metrics.New()}
	h.active.Store(true)
	obs := room.New(h.mem.NamedConn("observer", nil, nil), h.s, "lr", nil, nil)
	if err := obs.OnMessage(context.Background(), func(m protocol.Message) {
		h.mu.Lock()
		h.msgs = append(h.msgs, m)
		h.mu.Unlock()
	}); err != nil {
		t.Fatal(err)
	}
	r := room.New(h.mem.NamedConn("floor", nil, nil), h.s, "lr", nil, h.m)
	r.SetMembers(roster)
	a, err := New(Config{Room: r, User: "guest", People: people, Clock: h.clk, Active: h.active.Load})
	if err != nil {
		t.Fatal(err)
	}
	h.a = a
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); a.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	h.settle()
	return h
}

// settle waits until everything published has been handled, including
// what the arbiter published in turn.
func (h *harness) settle() {
	h.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for range 3 {
		h.mem.Settle()
		if err := h.a.Ping(ctx); err != nil {
			h.t.Fatal("arbiter loop did not answer")
		}
		if err := h.a.out.Flush(ctx); err != nil {
			h.t.Fatal("arbiter outbox did not drain")
		}
	}
	h.mem.Settle()
}

// hears announces companion id present, with a body that hears or not.
func (h *harness) hears(id string, on bool) {
	h.t.Helper()
	r := room.New(h.mem.NamedConn(id, nil, nil), h.s, "lr", nil, nil)
	a := r.Announce(id, id, 0)
	a.SetHears(on)
	b := a.Birth(h.clk.Now())
	if err := r.Bus.Publish(context.Background(), b.Topic, b.Payload, true); err != nil {
		h.t.Fatal(err)
	}
}

// report publishes id's heard report of speech from start to end (seconds
// after the harness's epoch).
func (h *harness) report(from, id string, start, end float64, text string, conf, level float64) {
	h.t.Helper()
	h.reportVoice(from, id, start, end, text, conf, level, nil)
}

// reportVoice is report with what the robot says of the voice.
func (h *harness) reportVoice(from, id string, start, end float64, text string, conf, level float64, v *protocol.VoiceMatch) {
	h.t.Helper()
	r := room.New(h.mem.NamedConn(from+"-"+id, nil, nil), h.s, "lr", nil, nil)
	t0 := time.Unix(1_800_000_000, 0)
	at := func(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }
	heard := protocol.Heard{From: from, ID: id, Device: from, Start: at(start), End: at(end), Text: text, Confidence: conf, Level: level, Voice: v}
	if err := r.SendHeard(context.Background(), heard); err != nil {
		h.t.Fatal(err)
	}
}

// messages are the Messages the room got, each id once (a receiver is
// idempotent: the broker may deliver one twice).
func (h *harness) messages() []protocol.Message {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []protocol.Message
	ids := map[string]bool{}
	for _, m := range h.msgs {
		if !ids[m.Params.ID] {
			ids[m.Params.ID] = true
			out = append(out, m)
		}
	}
	return out
}

func TestOneMicrophoneDoesNotWait(t *testing.T) {
	h := newHarness(t)
	h.hears("kyoko", true)
	h.hears("aya", false) // a deaf robot is not waited for
	h.settle()
	h.report("kyoko", "r1", 1, 3, "what is the weather like today", 0.8, -25)
	h.settle() // no clock advance: decided at once
	msgs := h.messages()
	if len(msgs) != 1 {
		t.Fatalf("got %d Messages, want 1 without waiting: %+v", len(msgs), msgs)
	}
	p := msgs[0].Params
	if p.From != "guest" || p.Message != "what is the weather like today" || len(p.To) != 0 {
		t.Errorf("Message = %+v", p)
	}
	if p.Metadata[protocol.MetaSource] != protocol.SourceVoice || p.Metadata[protocol.MetaHeardBy] != "kyoko" {
		t.Errorf("metadata = %v", p.Metadata)
	}
}

func TestThreeMicrophonesOneMessage(t *testing.T) {
	tests := []struct {
		name    string
		reports func(h *harness)
		advance time.Duration
		want    string // text of the one Message
		by      string
	}{
		{"all three report: no wait for the window", func(h *harness) {
			h.report("kyoko", "k1", 1.00, 3.00, "hello robots", 0.6, -30)
			h.report("hana", "h1", 1.05, 3.10, "hello robot", 0.9, -35)
			h.report("aya", "a1", 0.95, 2.90, "yellow robots", 0.5, -20)
		}, 0, "hello robot", "hana"},
		{"equal confidence: the loudest (closest) wins", func(h *harness) {
			h.report("kyoko", "k1", 1.00, 3.00, "far", 0.7, -40)
			h.report("aya", "a1", 1.02, 3.01, "near", 0.7, -18)
		}, DefaultWindow, "near", "aya"},
		{"one robot of three heard it: the window closes it", func(h *harness) {
			h.report("aya", "a1", 1, 2, "only aya heard", -1, -50)
		}, DefaultWindow, "only aya heard", "aya"},
		{"no confidence counts below any", func(h *harness) {
			h.report("aya", "a1", 1, 2, "unsure", -1, -10)
			h.report("hana", "h1", 1, 2, "sure", 0.1, -60)
		}, DefaultWindow, "sure", "hana"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t)
			for _, id := range roster {
				h.hears(id, true)
			}
			h.settle()
			tt.reports(h)
			h.settle()
			if tt.advance > 0 {
				if n := len(h.messages()); n != 0 {
					t.Fatalf("published %d before the window closed", n)
				}
				h.clk.Advance(tt.advance)
				h.settle()
			}
			msgs := h.messages()
			if len(msgs) != 1 {
				t.Fatalf("got %d Messages, want 1: %+v", len(msgs), msgs)
			}
			if msgs[0].Params.Message != tt.want || msgs[0].Params.Metadata[protocol.MetaHeardBy] != tt.by {
				t.Errorf("took %q by %v, want %q by %s", msgs[0].Params.Message, msgs[0].Params.Metadata[protocol.MetaHeardBy], tt.want, tt.by)
			}
		})
	}
}

// Reports delivered twice (QoS 1), a report after the decision (a slow
// engine), and a second sentence of the same robot: each handled as what
// it is.
func TestLateDuplicateAndNextSentence(t *testing.T) {
	h := newHarness(t, bustest.MemoryOptions{Duplicate: func(string, []byte) bool { return true }})
	h.hears("kyoko", true)
	h.hears("hana", true)
	h.settle()
	h.report("kyoko", "k1", 1, 3, "first sentence", 0.8, -25)
	h.settle()
	h.clk.Advance(DefaultWindow)
	h.settle()
	h.report("hana", "h1", 1.1, 3.1, "first sentence", 0.9, -20) // after the window: late
	h.settle()
	h.report("kyoko", "k2", 3.4, 5, "second sentence", 0.8, -25) // the same robot again: a new utterance
	h.report("hana", "h2", 3.5, 5, "second sentence", 0.7, -25)
	h.settle()
	msgs := h.messages()
	if len(msgs) != 2 || msgs[0].Params.Message != "first sentence" || msgs[1].Params.Message != "second sentence" {
		t.Fatalf("Messages = %+v, want the two sentences once each", msgs)
	}
	for outcome, want := range map[string]float64{"taken": 2, "late": 1, "same": 1, "duplicate": 4} {
		if got := metrics.Value(h.m.Heard.WithLabelValues(outcome)); got != want {
			t.Errorf("heard %s = %v, want %v", outcome, got, want)
		}
	}
}

// A standby floor's arbiter decides the same but publishes nothing; a
// robot that leaves is not waited for.
func TestStandbyAndLeaving(t *testing.T) {
	h := newHarness(t)
	h.active.Store(false)
	for _, id := range roster {
		h.hears(id, true)
	}
	h.settle()
	h.report("aya", "a1", 1, 2, "hello", 0.5, -30)
	h.settle()
	h.clk.Advance(DefaultWindow)
	h.settle()
	if n := len(h.messages()); n != 0 {
		t.Fatalf("a standby published %d Messages", n)
	}
	h.active.Store(true)
	h.report("aya", "a2", 5, 6, "are you there", 0.5, -30)
	h.report("hana", "h2", 5, 6, "are you there", 0.5, -30)
	h.settle()
	h.hears("kyoko", false) // kyoko's body stops hearing (or it leaves): nobody left to wait for
	h.settle()
	msgs := h.messages()
	if len(msgs) != 1 || msgs[0].Params.Message != "are you there" {
		t.Fatalf("Messages = %+v", msgs)
	}
}

// Bad reports never reach the arbiter: a spoof, a non-member, garbage.
func TestBadReportsAreCounted(t *testing.T) {
	h := newHarness(t)
	c := h.mem.NamedConn("mallory", nil, nil)
	ctx := context.Background()
	for _, p := range []struct{ topic, payload string }{
		{h.s.Heard("lr", "kyoko"), `{"from":"aya","id":"x","device":"aya","start":"2026-01-01T00:00:00Z","end":"2026-01-01T00:00:01Z","text":"spoof","confidence":1,"level":-1}`},
		{h.s.Heard("lr", "mallory"), `{"from":"mallory","id":"x","device":"m","start":"2026-01-01T00:00:00Z","end":"2026-01-01T00:00:01Z","text":"not a member","confidence":1,"level":-1}`},
		{h.s.Heard("lr", "aya"), `not json`},
	} {
		if err := c.Publish(ctx, p.topic, []byte(p.payload), false); err != nil {
			t.Fatal(err)
		}
	}
	h.settle()
	if n := len(h.messages()); n != 0 {
		t.Fatalf("bad reports became %d Messages", n)
	}
	for _, kind := range []string{string(protocol.KindSpoof), "not_member", string(protocol.KindSyntax)} {
		if got := metrics.Value(h.m.BadInput.WithLabelValues("heard", kind)); got != 1 {
			t.Errorf("bad heard input %s = %v, want 1", kind, got)
		}
	}
}

func TestNewRefusesACompanionAsThePerson(t *testing.T) {
	mem := bustest.NewMemory(t)
	r := room.New(mem.Conn(nil, nil), topic.New(""), "lr", nil, nil)
	r.SetMembers(roster)
	if _, err := New(Config{Room: r, User: "kyoko"}); err == nil {
		t.Fatal("a companion's identity was accepted as the person's")
	}
}

// The ears' words so far (partial reports) reach the room once, as the
// room's person: the newest words of the first robot that heard the
// utterance, only when they changed, never older ones delivered late,
// nothing once the utterance is decided, nothing from a standby floor; a
// robot's next utterance is followed at once.
func TestCaptionsForwardTheNewestWords(t *testing.T) {
	h := newHarness(t)
	for _, id := range roster {
		h.hears(id, true)
	}
	var mu sync.Mutex
	var got []protocol.Heard
	obs := room.New(h.mem.NamedConn("console", nil, nil), h.s, "lr", nil, nil)
	if err := obs.OnCaption(context.Background(), func(c protocol.Heard) {
		mu.Lock()
		got = append(got, c)
		mu.Unlock()
	}); err != nil {
		t.Fatal(err)
	}
	h.settle()
	t0 := time.Unix(1_800_000_000, 0)
	at := func(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }
	send := func(from, id, utt, state string, start, end float64, text string) {
		t.Helper()
		r := room.New(h.mem.NamedConn(from+"-"+id, nil, nil), h.s, "lr", nil, nil)
		if err := r.SendHeard(context.Background(), protocol.Heard{From: from, ID: id, Device: from, Start: at(start), End: at(end), Text: text,
			Confidence: protocol.NoConfidence, Level: -30, Utterance: utt, State: state}); err != nil {
			t.Fatal(err)
		}
		h.settle()
	}
	partial := protocol.HeardPartial
	send("kyoko", "p1", "ku1", partial, 1.0, 1.5, "what is")
	send("hana", "p2", "hu1", partial, 1.05, 1.6, "what's the") // another robot of the same utterance
	send("kyoko", "p3", "ku1", partial, 1.0, 1.6, "what is")    // unchanged
	send("kyoko", "p4", "ku1", partial, 1.0, 2.0, "what is the weather")
	send("kyoko", "p5", "ku1", partial, 1.0, 1.8, "what is the") // older, delivered late
	send("kyoko", "p4", "ku1", partial, 1.0, 2.0, "what is the weather")
	for _, id := range roster {
		send(id, "f-"+id, id[:1]+"u1", "", 1.0, 2.4, "what is the weather like")
	}
	if n := len(h.messages()); n != 1 {
		t.Fatalf("%d Messages, want 1", n)
	}
	send("kyoko", "p6", "ku1", partial, 1.0, 2.5, "what is the weather like") // after its Message
	send("kyoko", "p7", "ku2", partial, 2.6, 3.0, "thanks")                   // the next sentence, at once
	// A robot still hearing an utterance the others' transcripts decided
	// (it waits longer after "and um"): its words are not forwarded after
	// the Message.
	send("kyoko", "p9", "ku3", partial, 6.0, 6.5, "hello")
	send("kyoko", "f-k3", "ku3", "", 6.0, 7.0, "hello there")
	send("hana", "f-h3", "hu3", "", 6.05, 7.0, "hello there")
	h.clk.Advance(DefaultWindow)
	h.settle()
	send("aya", "p10", "au3", partial, 6.0, 7.2, "hello there and um")
	// The robot followed falls silent (gone, its utterance dropped):
	// another robot's words take over after captionStale.
	send("kyoko", "p11", "ku4", partial, 10.0, 10.5, "good")
	send("hana", "p12", "hu4", partial, 10.05, 10.6, "good night") // kyoko is followed
	h.clk.Advance(captionStale + time.Millisecond)
	send("hana", "p13", "hu4", partial, 10.05, 11.0, "good night robots")
	h.active.Store(false)
	send("aya", "p8", "au5", partial, 15.0, 15.5, "standby")
	mu.Lock()
	defer mu.Unlock()
	var texts []string
	for _, c := range got {
		texts = append(texts, c.Text)
		if c.From != "guest" || c.State != partial || !strings.HasPrefix(c.Utterance, "voice-"+c.Device+"-") {
			t.Errorf("caption %+v: want one from the room's person, of the utterance of the robot that heard it", c)
		}
	}
	if want := []string{"what is", "what is the weather", "thanks", "hello", "good", "good night robots"}; !slices.Equal(texts, want) {
		t.Errorf("captions %q, want %q", texts, want)
	}
	if n := metrics.Value(h.m.Heard.WithLabelValues("caption")); n != 6 {
		t.Errorf("counted %v captions, want 6", n)
	}
	// The floor hears its own captions on heard/+: not bad input.
	if n := metrics.Value(h.m.BadInput.WithLabelValues("heard", "not_member")); n != 0 {
		t.Errorf("captions counted as %v reports from a non-member", n)
	}
}
