package room_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chorus-robotics/chorus/runtime/bus"
	"github.com/chorus-robotics/chorus/runtime/bus/bustest"
	"github.com/chorus-robotics/chorus/runtime/metrics"
	"github.com/chorus-robotics/chorus/runtime/protocol"
	"github.com/chorus-robotics/chorus/runtime/room"
	"github.com/chorus-robotics/chorus/runtime/topic"
)

func dial(t *testing.T, url, id string) bus.Bus {
	t.Helper()
	b, err := bus.Dial(context.Background(), bus.Options{Broker: url, ClientID: id + "-" + t.Name(), Username: id})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	return b
}

// TestBadInputRejectedAndCounted sends malformed, oversized and spoofed
// payloads through a real broker (with the ACL off, so that only the
// receiver stands between them and the room), then a valid one, which must
// still arrive.
func TestBadInputRejectedAndCounted(t *testing.T) {
	s := topic.New("")
	bustest.ForEach(t, bustest.Options{}, func(t *testing.T, br bustest.Broker) {
		m := metrics.New()
		r := room.New(dial(t, br.URL(), "floor"), s, "lr", nil, m)
		r.MaxBytes = 1024
		states := make(chan protocol.State, 16)
		grants := make(chan protocol.TurnGrant, 16)
		ctx := context.Background()
		if err := r.OnState(ctx, func(st protocol.State) { states <- st }); err != nil {
			t.Fatal(err)
		}
		if err := r.OnGrant(ctx, func(g protocol.TurnGrant) { grants <- g }); err != nil {
			t.Fatal(err)
		}
		evil := dial(t, br.URL(), "evil")
		send := func(tp, p string) {
			if err := evil.Publish(ctx, tp, []byte(p), false); err != nil {
				t.Fatal(err)
			}
		}
		valid := `{"jsonrpc":"2.0","method":"state.send","params":{"from":"kyoko","messageId":"m1","state":"speak","importance":5,"selected":false}}`
		send(s.State("lr", "kyoko"), `{"jsonrpc":"2.0"`)                                             // truncated
		send(s.State("lr", "kyoko"), `{"jsonrpc":"2.0","method":"state.send","params":{"x":1}}`)     // unknown field
		send(s.State("lr", "kyoko"), strings.Replace(valid, `"importance":5`, `"importance":50`, 1)) // out of range
		send(s.State("lr", "kyoko"), strings.Replace(valid, `"selected":false`, `"selected":false,"pad":"`+strings.Repeat("x", 2000)+`"`, 1))
		send(s.State("lr", "hana"), valid) // kyoko's state on hana's topic: spoof
		send(s.Turns("lr"), `{"from":"kyoko","messageId":"m1","speaker":"kyoko","reason":"speak","decidedBy":"all-voted","votes":[]}`)
		send(s.State("lr", "kyoko"), valid)

		select {
		case st := <-states:
			if st.Params.From != "kyoko" || st.Params.Importance != 5 {
				t.Fatalf("got %+v", st.Params)
			}
		case <-time.After(5 * time.Second):
			t.Fatal("the valid state never arrived")
		}
		select {
		case st := <-states:
			t.Fatalf("a bad state got through: %+v", st)
		case g := <-grants:
			t.Fatalf("a grant from a non-floor got through: %+v", g)
		case <-time.After(100 * time.Millisecond):
		}
		for _, c := range []struct{ source, kind string }{
			{"state", "syntax"}, {"state", "unknown_field"}, {"state", "invalid"},
			{"state", "oversize"}, {"state", "spoof"}, {"grant", "spoof"},
		} {
			if n := metrics.Value(m.BadInput.WithLabelValues(c.source, c.kind)); n != 1 {
				t.Errorf("bad input %s/%s counted %v times, want 1", c.source, c.kind, n)
			}
		}
	})
}

func TestDevicesFollowsPresence(t *testing.T) {
	mem := bustest.NewMemory(t)
	s := topic.New("")
	r := room.New(nil, s, "lr", nil, nil)
	birth, will := r.PresenceMessages("kyoko", "pi5")
	c := mem.Conn(birth, will)
	obs := room.New(mem.Conn(nil, nil), s, "lr", nil, nil)
	d, err := room.FollowDevices(context.Background(), obs)
	if err != nil {
		t.Fatal(err)
	}
	mem.Settle()
	if on, known := d.Online("pi5"); !on || !known {
		t.Fatalf("pi5 online %v known %v", on, known)
	}
	if _, known := d.Online("pi4"); known {
		t.Fatal("a device never seen is known")
	}
	c.Kill()
	mem.Settle()
	if on, known := d.Online("pi5"); on || !known {
		t.Fatalf("after its will: online %v known %v", on, known)
	}
}

// Issue 27: a broker that stops sends every Last Will just before the
// connection goes. When the observer's connection is lost, what it knew
// is forgotten: a query after the reconnect is asked, not refused as
// "offline" on a will the device's return has not yet answered.
func TestDevicesForgetsWhatItKnewWhenTheConnectionIsLost(t *testing.T) {
	mem := bustest.NewMemory(t)
	s := topic.New("")
	r := room.New(nil, s, "lr", nil, nil)
	birth, will := r.PresenceMessages("kyoko", "pi5")
	c := mem.Conn(birth, will)
	oc := mem.Conn(nil, nil)
	d, err := room.FollowDevices(context.Background(), room.New(oc, s, "lr", nil, nil))
	if err != nil {
		t.Fatal(err)
	}
	c.Kill() // the stopping broker's will
	mem.Settle()
	if on, known := d.Online("pi5"); on || !known {
		t.Fatalf("after its will: online %v known %v", on, known)
	}
	oc.Lose()
	if on, known := d.Online("pi5"); on || known {
		t.Fatalf("after the connection was lost: online %v known %v, want unknown", on, known)
	}
}

// Presence is taken from the roster only, and a presence topic whose last
// segment is not a valid identity is dropped where it enters (issue 9,
// defect 5: one odd name made every grant undecodable).
func TestPresenceOnlyFromMembersWithValidIdentities(t *testing.T) {
	mem := bustest.NewMemory(t)
	s := topic.New("")
	m := metrics.New()
	r := room.New(mem.Conn(nil, nil), s, "lr", nil, m)
	r.SetMembers([]string{"kyoko"})
	got := make(chan room.PresenceEvent, 16)
	if err := r.OnPresence(context.Background(), func(p room.PresenceEvent) { got <- p }); err != nil {
		t.Fatal(err)
	}
	pub := mem.Conn(nil, nil)
	online := []byte(`{"online":true,"device":"x","since":"2026-01-01T00:00:00Z"}`)
	for _, tp := range []string{
		"chorus/rooms/lr/presence/mallory",   // not a member
		"chorus/rooms/lr/presence/bad name",  // not an identity
		"chorus/rooms/lr/presence/" + "\x01", // control character
		s.Presence("lr", "kyoko"),            // valid, last
	} {
		if err := pub.Publish(context.Background(), tp, online, true); err != nil {
			t.Fatal(err)
		}
	}
	select {
	case p := <-got:
		if p.ID != "kyoko" {
			t.Fatalf("presence of %q got through", p.ID)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the member's presence never arrived")
	}
	mem.Settle()
	if len(got) != 0 {
		t.Fatalf("%d more presence events got through", len(got))
	}
	if n := metrics.Value(m.BadInput.WithLabelValues("presence", "not_member")); n != 1 {
		t.Errorf("non-member presence counted %v, want 1", n)
	}
	if n := metrics.Value(m.BadInput.WithLabelValues("presence", "topic")); n != 2 {
		t.Errorf("bad presence topics counted %v, want 2", n)
	}
}

// A speaking status comes from members only and never with an absurd
// duration (issue 13): both are dropped and counted; a valid one and its
// clearing arrive.
func TestSpeakingStatusFromMembersOnly(t *testing.T) {
	mem := bustest.NewMemory(t)
	s := topic.New("")
	m := metrics.New()
	r := room.New(mem.Conn(nil, nil), s, "lr", nil, m)
	r.SetMembers([]string{"kyoko"})
	got := make(chan room.SpeakingEvent, 16)
	if err := r.OnSpeaking(context.Background(), func(e room.SpeakingEvent) { got <- e }); err != nil {
		t.Fatal(err)
	}
	pub := mem.Conn(nil, nil)
	out := &bus.Outbox{Bus: pub}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go out.Run(ctx)
	now := time.Date(2026, 11, 22, 8, 0, 0, 0, time.UTC)
	status := `{"messageId":"m1","speaking":true,"startedAt":"2026-11-22T08:00:00Z","durationMs":%d}`
	for _, p := range []struct{ topic, payload string }{
		{s.Speaking("lr", "mallory"), fmt.Sprintf(status, 2000)},     // not a member
		{s.Speaking("lr", "kyoko"), fmt.Sprintf(status, 86_400_000)}, // a day: absurd
	} {
		if err := pub.Publish(context.Background(), p.topic, []byte(p.payload), true); err != nil {
			t.Fatal(err)
		}
	}
	if err := r.QueueSpeaking(out, "kyoko", protocol.Speaking{MessageID: "m1", Speaking: true, StartedAt: now, DurationMs: 2400}); err != nil {
		t.Fatal(err)
	}
	select {
	case e := <-got:
		if e.ID != "kyoko" || !e.Speaking.Speaking || e.Speaking.DurationMs != 2400 || !e.Speaking.StartedAt.Equal(now) {
			t.Fatalf("got %+v", e)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the valid status never arrived")
	}
	pub.Publish(context.Background(), s.Speaking("lr", "kyoko"), nil, true)
	if e := <-got; !e.Cleared || e.ID != "kyoko" {
		t.Fatalf("got %+v, want kyoko's status cleared", e)
	}
	if n := metrics.Value(m.BadInput.WithLabelValues("speaking", "not_member")); n != 1 {
		t.Errorf("non-member status counted %v times", n)
	}
	if n := metrics.Value(m.BadInput.WithLabelValues("speaking", "invalid")); n != 1 {
		t.Errorf("absurd duration counted %v times", n)
	}
}

// BenchmarkRejectMalformed is what a robot spends on one malformed payload
// of a flood: decode, find it bad, count it (RELIABILITY.md).
func BenchmarkRejectMalformed(b *testing.B) {
	junk := [][]byte{
		[]byte(`{"jsonrpc":"2.0","method":"message.send","params":`),
		[]byte(`not json at all`),
		[]byte(`{"jsonrpc":"2.0","method":"message.send","params":{"id":5,"from":"user","to":[],"message":7}}`),
		[]byte(`{"jsonrpc":"2.0","method":"message.send","params":{"id":"x","from":"user","message":"hi","extra":true}}`),
		[]byte(`{"jsonrpc":"2.0","method":"message.send","params":{"id":"","from":"user","message":""}}`),
		[]byte(`[1,2,3]`),
	}
	m := metrics.New()
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		if _, err := protocol.DecodeMessage(junk[i%len(junk)], 0); err != nil {
			m.Reject(nil, "message", "user", string(protocol.KindOf(err)), err)
		}
	}
}

// A companion's presence says whether its device has a camera (a room
// console offers a camera button only for one that has) and whether it
// hears, as they were set; a presence that says it is offline says
// neither.
func TestPresenceSaysWhatTheDeviceHas(t *testing.T) {
	r := room.New(nil, topic.New(""), "lr", nil, nil)
	for _, tc := range []struct{ sees, hears bool }{{true, false}, {false, true}, {false, false}} {
		a := r.Announce("aya", "aya-pi", time.Second)
		a.SetSees(tc.sees)
		a.SetHears(tc.hears)
		p, err := protocol.DecodePresence(a.Birth(time.Now()).Payload, 0)
		if err != nil || p.Sees != tc.sees || p.Hears != tc.hears || !p.Online {
			t.Fatalf("set sees %v, hears %v: the presence %+v, %v", tc.sees, tc.hears, p, err)
		}
		if p, err := protocol.DecodePresence(a.Will().Payload, 0); err != nil || p.Sees || p.Hears || p.Online {
			t.Fatalf("offline: %+v, %v", p, err)
		}
	}
}
