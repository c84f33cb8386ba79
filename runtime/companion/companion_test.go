package companion_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chorus-robotics/chorus/runtime/brain"
	"github.com/chorus-robotics/chorus/runtime/brain/braintest"
	"github.com/chorus-robotics/chorus/runtime/brain/rule"
	"github.com/chorus-robotics/chorus/runtime/bus"
	"github.com/chorus-robotics/chorus/runtime/bus/bustest"
	"github.com/chorus-robotics/chorus/runtime/companion"
	"github.com/chorus-robotics/chorus/runtime/election"
	"github.com/chorus-robotics/chorus/runtime/floor"
	"github.com/chorus-robotics/chorus/runtime/metrics"
	"github.com/chorus-robotics/chorus/runtime/protocol"
	"github.com/chorus-robotics/chorus/runtime/query"
	"github.com/chorus-robotics/chorus/runtime/room"
	"github.com/chorus-robotics/chorus/runtime/topic"
)

type roomRig struct {
	t      *testing.T
	url    string
	s      topic.Scheme
	ctx    context.Context
	wg     sync.WaitGroup
	events chan any // protocol.Message and protocol.TurnGrant, in arrival order
	mu     sync.Mutex
	spoken map[string][]string // device -> texts said through the speaker
	m      *metrics.Metrics
	user   *room.Room // the person's one connection: their messages arrive in the order said
	br     *bustest.Embedded
}

func newRig(t *testing.T) *roomRig {
	br := bustest.StartEmbedded(t, bustest.Options{ACL: true, Rosters: map[string][]string{"lr": members}})
	ctx, cancel := context.WithCancel(context.Background())
	r := &roomRig{t: t, url: br.URL(), s: topic.New(""), ctx: ctx, events: make(chan any, 1024), spoken: map[string][]string{}, m: metrics.New(), br: br}
	t.Cleanup(func() { cancel(); r.wg.Wait() })
	obs := room.New(r.dial("observer", nil, nil), r.s, "lr", nil, nil)
	obs.OnMessage(ctx, func(m protocol.Message) { r.events <- m })
	obs.OnGrant(ctx, func(g protocol.TurnGrant) { r.events <- g })
	return r
}

// members is the rig room's roster.
var members = []string{"kyoko", "hana", "aya"}

func (r *roomRig) dial(id string, birth func(time.Time) *bus.Retained, will *bus.Retained) bus.Bus {
	// A client id must be unique: a second connection under the same id
	// takes the first one over, and they would push each other out forever.
	b, err := bus.Dial(r.ctx, bus.Options{Broker: r.url, ClientID: id + "-" + protocol.NewID()[:8], Username: id, Birth: birth, Will: will,
		MaxReconnect: 200 * time.Millisecond}) // back soon after a broker restart: nothing left reconnecting when a test ends
	if err != nil {
		r.t.Fatal(err)
	}
	r.t.Cleanup(func() { b.Close() })
	return b
}

func (r *roomRig) go_(fn func(ctx context.Context) error) {
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		if err := fn(r.ctx); err != nil {
			r.t.Errorf("run: %v", err)
		}
	}()
}

func (r *roomRig) startFloor(vote time.Duration) {
	b := r.dial("floor", nil, election.Will(r.s, "lr", "f1"))
	fr := room.New(b, r.s, "lr", nil, r.m)
	fr.SetMembers(members)
	f, err := floor.New(floor.Config{Room: fr, Instance: "f1", VoteTimeout: vote, JoinWait: 50 * time.Millisecond})
	if err != nil {
		r.t.Fatal(err)
	}
	r.go_(f.Run)
}

// startCompanion runs a companion with a body that records what it says.
func (r *roomRig) startCompanion(card brain.Card, b brain.Brain, mod func(*companion.Config)) {
	rm := room.New(nil, r.s, "lr", nil, r.m)
	rm.SetMembers(members)
	birth, will := rm.PresenceMessages(card.ID, card.ID)
	rm.Bus = r.dial(card.ID, birth, will)
	srv := &query.Server{Bus: rm.Bus, Scheme: r.s, Device: card.ID}
	srv.Handle("speak", func(_ context.Context, _ string, body json.RawMessage) (any, error) {
		q, err := protocol.DecodeSpeakRequest(body, 0)
		if err != nil {
			return nil, err
		}
		r.mu.Lock()
		r.spoken[card.ID] = append(r.spoken[card.ID], q.Message)
		r.mu.Unlock()
		return map[string]any{"durationMs": 1}, nil
	})
	r.go_(srv.Serve)
	cfg := companion.Config{Room: rm, Card: card, Brain: b, Device: card.ID,
		Queries: query.NewClient(rm.Bus, r.s, card.ID, query.ClientOptions{Timeout: 5 * time.Second}), Pause: 5 * time.Millisecond}
	if mod != nil {
		mod(&cfg)
	}
	c, err := companion.New(cfg)
	if err != nil {
		r.t.Fatal(err)
	}
	r.go_(c.Run)
}

func (r *roomRig) userSays(text string, to ...string) string {
	r.mu.Lock()
	if r.user == nil {
		r.user = room.New(r.dial("user", nil, nil), r.s, "lr", nil, nil)
	}
	ur := r.user
	r.mu.Unlock()
	id := protocol.NewID()
	if err := ur.SendMessage(r.ctx, protocol.NewMessage(id, "user", to, text, "")); err != nil {
		r.t.Fatal(err)
	}
	return id
}

// untilRest collects events until the room rests: a grant of nobody for a
// message already collected. (A broker orders messages per publisher only,
// so the floor's rest grant may overtake the message it answers.)
func (r *roomRig) untilRest(limit time.Duration) (msgs []protocol.Message, grants []protocol.TurnGrant) {
	timer := time.NewTimer(limit)
	defer timer.Stop()
	seen := map[string]bool{}
	rest := ""
	for {
		select {
		case e := <-r.events:
			switch v := e.(type) {
			case protocol.Message:
				msgs = append(msgs, v)
				seen[v.Params.ID] = true
			case protocol.TurnGrant:
				grants = append(grants, v)
				if v.Speaker == nil {
					rest = v.MessageID
				}
			}
			if rest != "" && seen[rest] {
				// Keep the rest grant last, as the floor decided it.
				for i, g := range grants {
					if g.MessageID == rest && g.Speaker == nil {
						grants = append(append(grants[:i:i], grants[i+1:]...), g)
						break
					}
				}
				return msgs, grants
			}
		case <-timer.C:
			r.t.Fatalf("no rest within %v: %d messages, %d grants", limit, len(msgs), len(grants))
		}
	}
}

// within is the next value on ch; the test fails, saying what, when
// none comes within 5 s.
func within[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(5 * time.Second):
		t.Fatal(what)
	}
	var zero T
	return zero
}

// companionTurns counts the messages the companions said.
func companionTurns(msgs []protocol.Message) int {
	turns := 0
	for _, m := range msgs {
		if m.Params.From != "user" {
			turns++
		}
	}
	return turns
}

// restedAtTerminal returns the rest grant, the last of grants, and fails
// the test unless every vote in it is terminal.
func restedAtTerminal(t *testing.T, grants []protocol.TurnGrant) protocol.TurnGrant {
	t.Helper()
	last := grants[len(grants)-1]
	for _, v := range last.Votes {
		if v.Closing != protocol.ClosingTerminal {
			t.Fatalf("rested before terminal: %+v", last)
		}
	}
	return last
}

func cards() []brain.Card {
	return []brain.Card{
		{ID: "kyoko", Name: "Kyoko", SampleLines: []string{"I love tea.", "Shall we sing?"}, Language: "en"},
		{ID: "hana", Name: "Hana", SampleLines: []string{"Flowers are the best.", "I saw a bird today."}, Language: "en"},
		{ID: "aya", Name: "Aya", SampleLines: []string{"Let me think.", "Math is fun."}, Language: "en"},
	}
}

func waitPresent(t *testing.T, r *roomRig, n int) {
	t.Helper()
	got := make(chan string, 16)
	obs := room.New(r.dial("presence-watch", nil, nil), r.s, "lr", nil, nil)
	obs.OnPresence(r.ctx, func(p room.PresenceEvent) {
		if p.Presence.Online {
			got <- p.ID
		}
	})
	seen := map[string]bool{}
	timeout := time.After(5 * time.Second)
	for len(seen) < n {
		select {
		case id := <-got:
			seen[id] = true
		case <-timeout:
			t.Fatalf("only %v present", seen)
		}
	}
	time.Sleep(100 * time.Millisecond) // let floor and companions see it too
}

func TestRoomRunsToTerminalAndRestarts(t *testing.T) {
	r := newRig(t)
	r.startFloor(2 * time.Second)
	for _, c := range cards() {
		r.startCompanion(c, rule.New(3, nil), nil)
	}
	waitPresent(t, r, 3)
	r.userSays("Hello everyone, what shall we talk about?")
	msgs, grants := r.untilRest(20 * time.Second)

	if len(msgs) < 5 { // the user, turns 1..2, pre-closing, closing
		t.Fatalf("only %d messages before rest", len(msgs))
	}
	last := grants[len(grants)-1]
	for _, v := range last.Votes {
		if v.Closing != protocol.ClosingTerminal {
			t.Fatalf("room rested with a non-terminal vote: %+v", last)
		}
	}
	prev := ""
	for _, m := range msgs[1:] {
		if m.Params.From == prev {
			t.Fatalf("%s spoke twice in a row", prev)
		}
		prev = m.Params.From
	}
	// Every companion message went through its speaker first.
	r.mu.Lock()
	for _, m := range msgs[1:] {
		if !contains(r.spoken[m.Params.From], m.Params.Message) {
			t.Errorf("%s published %q without speaking it", m.Params.From, m.Params.Message)
		}
	}
	r.mu.Unlock()
	for _, g := range grants {
		if g.DecidedBy != protocol.DecidedAllVoted {
			t.Errorf("grant for %s decided by %s, want all-voted (every companion is alive)", g.MessageID, g.DecidedBy)
		}
	}

	// A user message restarts the rested room.
	r.userSays("Kyoko, are you still there?")
	msgs2, _ := r.untilRest(20 * time.Second)
	if len(msgs2) < 2 || msgs2[1].Params.From != "kyoko" {
		t.Fatalf("after the restart: %d messages, first reply from %v", len(msgs2), msgs2)
	}
}

func contains(xs []string, x string) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}

func TestBadBrainBecomesListen(t *testing.T) {
	r := newRig(t)
	r.startFloor(2 * time.Second)
	bad := &braintest.Func{
		ThinkFn: func(context.Context, brain.Input) (brain.Thought, error) {
			return brain.Thought{State: "shout", Importance: 42}, nil // invalid every time
		},
	}
	failing := &braintest.Func{
		ThinkFn: func(context.Context, brain.Input) (brain.Thought, error) {
			return brain.Thought{}, errors.New("model down")
		},
	}
	cs := cards()
	r.startCompanion(cs[0], bad, nil)
	r.startCompanion(cs[1], failing, nil)
	waitPresent(t, r, 2)
	r.userSays("anyone?")
	_, grants := r.untilRest(10 * time.Second)
	g := grants[len(grants)-1]
	if len(g.Votes) != 2 {
		t.Fatalf("votes %+v", g.Votes)
	}
	for _, v := range g.Votes {
		if v.State != protocol.Listen || v.Importance != 0 {
			t.Fatalf("vote %+v, want listen with importance 0", v)
		}
	}
	if th, _ := bad.Calls(); th != 2 {
		t.Fatalf("bad brain called %d times, want 2 (one retry)", th)
	}
	if n := metrics.Value(r.m.BrainFailures.WithLabelValues("error")); n != 2 {
		t.Fatalf("brain failures = %v, want 2", n)
	}
}

func TestMutedNeverSpeaksAndTwoCallPath(t *testing.T) {
	r := newRig(t)
	r.startFloor(2 * time.Second)
	cs := cards()
	r.startCompanion(cs[0], rule.New(3, nil), func(c *companion.Config) { c.Muted = func() bool { return true } })
	utterer := &braintest.Func{
		ThinkFn: func(_ context.Context, in brain.Input) (brain.Thought, error) {
			if in.Message.Params.From != "user" {
				return brain.Thought{State: protocol.Listen, Closing: protocol.ClosingNone}, nil
			}
			return brain.Thought{State: protocol.Speak, Importance: 5, Closing: protocol.ClosingNone, Draft: "draft"}, nil
		},
		UtterFn: func(context.Context, brain.Input) (brain.Utterance, error) {
			return brain.Utterance{Text: "from the second call"}, nil
		},
	}
	r.startCompanion(cs[1], utterer, func(c *companion.Config) { c.TwoCall = true })
	waitPresent(t, r, 2)
	r.userSays("Kyoko, please answer")
	msgs, grants := r.untilRest(10 * time.Second)
	if grants[0].SpeakerID() != "hana" {
		t.Fatalf("first grant %+v: the muted kyoko must not get the floor", grants[0])
	}
	if len(msgs) != 2 || msgs[1].Params.Message != "from the second call" {
		t.Fatalf("messages %v", msgs)
	}
	if _, u := utterer.Calls(); u != 1 {
		t.Fatalf("utter calls = %d, want 1", u)
	}
}

// TestManyUserMessagesKeepTheNewestThought guards the eviction of old
// thoughts: the turn count restarts with every user message, so it cannot
// be what orders them.
func TestManyUserMessagesKeepTheNewestThought(t *testing.T) {
	r := newRig(t)
	r.startFloor(2 * time.Second)
	only := &braintest.Func{
		ThinkFn: func(_ context.Context, in brain.Input) (brain.Thought, error) {
			if in.Message.Params.From != "user" {
				return brain.Thought{State: protocol.Listen, Closing: protocol.ClosingNone}, nil
			}
			return brain.Thought{State: protocol.Speak, Importance: 5, Closing: protocol.ClosingNone, Draft: "yes?"}, nil
		},
	}
	r.startCompanion(cards()[0], only, nil)
	waitPresent(t, r, 1)
	for i := range 34 { // more than the 32 thoughts kept
		r.userSays(fmt.Sprintf("message %d", i))
		msgs, _ := r.untilRest(5 * time.Second)
		if len(msgs) != 2 {
			t.Fatalf("round %d: %d messages, want the user's and one answer", i, len(msgs))
		}
	}
}

// TestFloodAndSpoofsDoNotStopTheRoom: a client floods the room with States
// for a message, malformed payloads and a forged grant; they are dropped
// and counted, and the conversation still runs to its end.
func TestFloodAndSpoofsDoNotStopTheRoom(t *testing.T) {
	r := newRig(t)
	r.startFloor(2 * time.Second)
	for _, c := range cards()[:2] {
		r.startCompanion(c, rule.New(2, nil), nil)
	}
	waitPresent(t, r, 2)
	// QoS 0: mochi disconnects a 3.1.1 client whose QoS 1 publish the ACL
	// denies, and paho's reconnect goroutine would outlive the test.
	evil, err := bus.Dial(r.ctx, bus.Options{Broker: r.url, ClientID: "evil-" + protocol.NewID()[:8], Username: "evil", QoS: bus.QoS(0)})
	if err != nil {
		t.Fatal(err)
	}
	defer evil.Close()
	ctx := context.Background()
	id := r.userSays("Hello, both of you!")
	for i := range 2000 {
		// States from a non-member: the broker's ACL drops them.
		st := fmt.Sprintf(`{"jsonrpc":"2.0","method":"state.send","params":{"from":"evil","messageId":%q,"state":"speak","importance":10,"selected":true}}`, id)
		evil.Publish(ctx, r.s.State("lr", "evil"), []byte(st), false)
		if i%3 == 0 { // malformed Messages, which anyone may send: every receiver drops them
			evil.Publish(ctx, r.s.Message("lr", "evil"), []byte(`{"jsonrpc":"2.0","method":"message.send","params":{`), false)
		}
	}
	// A forged grant: the broker's ACL refuses it (evil is not the floor).
	evil.Publish(ctx, r.s.Turns("lr"), []byte(fmt.Sprintf(`{"from":"floor","messageId":%q,"speaker":"evil","reason":"speak","decidedBy":"all-voted","votes":[]}`, id)), false)
	msgs, grants := r.untilRest(20 * time.Second)
	for _, g := range grants {
		if g.SpeakerID() == "evil" {
			t.Fatalf("a forged or flooded vote won: %+v", g)
		}
	}
	if len(msgs) < 3 {
		t.Fatalf("only %d messages", len(msgs))
	}
	if n := metrics.Value(r.m.BadInput.WithLabelValues("message", "syntax")); n < 100 {
		t.Fatalf("malformed messages counted %v", n)
	}
}

// A companion whose body is offline (a bridge client that went away)
// votes listen without asking its brain and is never granted, so the
// room decides with every vote in instead of waiting on its speak query;
// when the body is back it speaks again.
func TestBodyOfflineVotesListen(t *testing.T) {
	r := newRig(t)
	r.startFloor(5 * time.Second)
	cs := cards()
	var online atomic.Bool
	speaker := &braintest.Func{ThinkFn: func(_ context.Context, in brain.Input) (brain.Thought, error) {
		if in.Message.Params.From != "user" {
			return brain.Thought{State: protocol.Listen, Closing: protocol.ClosingNone}, nil
		}
		return brain.Thought{State: protocol.Speak, Importance: 9, Closing: protocol.ClosingNone, Draft: "I am here"}, nil
	}}
	r.startCompanion(cs[0], speaker, func(c *companion.Config) { c.BodyOnline = online.Load })
	waitPresent(t, r, 1)
	start := time.Now()
	r.userSays("Kyoko, are you there?")
	msgs, grants := r.untilRest(4 * time.Second)
	if len(msgs) != 1 || grants[0].SpeakerID() != "" || grants[0].DecidedBy != protocol.DecidedAllVoted || time.Since(start) > 3*time.Second {
		t.Fatalf("body offline: messages %v, grants %+v after %v", msgs, grants, time.Since(start))
	}
	if th, _ := speaker.Calls(); th != 0 {
		t.Fatalf("the brain was asked %d times for a companion with no body", th)
	}
	online.Store(true)
	r.userSays("Kyoko, now?")
	msgs, _ = r.untilRest(4 * time.Second)
	if len(msgs) != 2 || msgs[1].Params.Message != "I am here" {
		t.Fatalf("body back: messages %v", msgs)
	}
}

// A wake word the room heard (a Message with metadata wake) is nobody's
// to answer: every companion votes listen at once, without asking its
// brain, and the room rests, waiting for the person's question.
func TestWakeWordIsNotAnswered(t *testing.T) {
	r := newRig(t)
	r.startFloor(2 * time.Second)
	eager := &braintest.Func{ThinkFn: func(context.Context, brain.Input) (brain.Thought, error) {
		return brain.Thought{State: protocol.Speak, Importance: 9, Closing: protocol.ClosingNone, Draft: "Yes?"}, nil
	}}
	cs := cards()
	r.startCompanion(cs[0], eager, nil)
	waitPresent(t, r, 1)
	ur := room.New(r.dial("user", nil, nil), r.s, "lr", nil, nil)
	m := protocol.NewMessage(protocol.NewID(), "user", nil, "hey_jarvis", "")
	m.Params.Metadata[protocol.MetaSource] = protocol.SourceVoice
	m.Params.Metadata[protocol.MetaWake] = true
	if err := ur.SendMessage(r.ctx, m); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	msgs, grants := r.untilRest(5 * time.Second)
	if len(msgs) != 1 || len(grants) != 1 || grants[0].Speaker != nil || grants[0].DecidedBy != protocol.DecidedAllVoted {
		t.Fatalf("messages %v, grants %+v; want the wake word alone and a rest", msgs, grants)
	}
	if d := time.Since(start); d > time.Second {
		t.Errorf("the room took %v to rest on a wake word", d)
	}
	if thinks, _ := eager.Calls(); thinks != 0 {
		t.Fatalf("the brain was asked %d times about a wake word", thinks)
	}
}
