// Package room is the typed view of one room on the bus: it subscribes to the
// room's topics, decodes every payload strictly, drops spoofs (a "from" that
// is not the identity the topic names, or a grant not from a floor), counts
// and logs what it rejects, and hands valid values to callbacks. It also
// publishes the room's values on the right topics, or queues them on an
// outbox for code that must not wait on the network.
//
// # Membership
//
// A room's roster (its companion ids) is configuration (docs/protocol.md, "Room
// membership is explicit"). When Members is set, presence, States and
// holds from anyone else are dropped and counted where they enter, so the
// floor and the companions only ever see members vote or be present. User
// clients may still send Messages. Every identity that arrives in a topic
// segment is validated here, once.
//
// # Concurrency
//
// Callbacks run on the bus client's delivery goroutine, one at a time: they
// must not block (push into a bounded queue and return).
package room

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"sort"
	"sync"
	"time"

	"github.com/chorus-robotics/chorus/runtime/bus"
	"github.com/chorus-robotics/chorus/runtime/metrics"
	"github.com/chorus-robotics/chorus/runtime/protocol"
	"github.com/chorus-robotics/chorus/runtime/topic"
)

// Room reads and writes one room.
type Room struct {
	Bus      bus.Bus
	Scheme   topic.Scheme
	Name     string
	MaxBytes int // payload cap; 0 means protocol.DefaultMaxBytes
	Log      *slog.Logger
	Metrics  *metrics.Metrics
	// Members is the roster; nil (an observer's view) accepts anyone.
	Members map[string]bool
}

// SetMembers sets the roster.
func (r *Room) SetMembers(ids []string) {
	r.Members = make(map[string]bool, len(ids))
	for _, id := range ids {
		r.Members[id] = true
	}
}

// IsMember reports whether id is on the roster (always true without one).
func (r *Room) IsMember(id string) bool { return r.Members == nil || r.Members[id] }

// MemberList returns the roster, sorted.
func (r *Room) MemberList() []string {
	out := make([]string, 0, len(r.Members))
	for id := range r.Members {
		out = append(out, id)
	}
	sort.Strings(out)
	return out
}

// route parses t and checks that it is kind in this room and that its
// identity segment, if any, is a valid identity; otherwise it counts and
// logs the topic as bad input.
func (r *Room) route(t string, kind topic.Kind) (topic.Route, bool) {
	return r.routeIn(t, "", kind)
}

// routeIn is route for a topic of room's channel ("" for the room).
func (r *Room) routeIn(t, channel string, kind topic.Kind) (topic.Route, bool) {
	route, ok := r.Scheme.Parse(t)
	if !ok || route.Kind != kind || route.Room != r.Name || route.Channel != channel {
		r.Metrics.Reject(r.Log, string(kind), "", "topic", fmt.Errorf("unexpected topic %q", t))
		return route, false
	}
	if route.Identity != "" {
		if why := protocol.ValidIdentity(route.Identity); why != "" {
			r.Metrics.Reject(r.Log, string(kind), "", "topic", fmt.Errorf("topic %q: identity %s", t, why))
			return route, false
		}
	}
	return route, true
}

// member drops (and counts) a value from someone off the roster, for the
// kinds only members may send.
func (r *Room) member(kind topic.Kind, id string) bool {
	if r.IsMember(id) {
		return true
	}
	r.Metrics.Reject(r.Log, string(kind), id, "not_member", fmt.Errorf("%s from %q, who is not a member of room %s", kind, id, r.Name))
	return false
}

// New returns the view of room name on b.
func New(b bus.Bus, s topic.Scheme, name string, log *slog.Logger, m *metrics.Metrics) *Room {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Room{Bus: b, Scheme: s, Name: name, Log: log, Metrics: metrics.OrNew(m)}
}

// subscribe decodes payloads on filter with decode, checks that from(value)
// matches the topic's identity (or, for topics without one, passes check),
// and calls fn with valid values.
func subscribe[T any](ctx context.Context, r *Room, filter string, kind topic.Kind,
	decode func([]byte, int) (T, error), from func(T) string, fn func(T)) error {
	return subscribeIn(ctx, r, "", filter, kind, decode, from, fn)
}

// subscribeIn is subscribe for a topic of room's channel ("" for the room).
func subscribeIn[T any](ctx context.Context, r *Room, channel, filter string, kind topic.Kind,
	decode func([]byte, int) (T, error), from func(T) string, fn func(T)) error {
	return r.Bus.Subscribe(ctx, filter, func(t string, payload []byte) {
		route, ok := r.routeIn(t, channel, kind)
		if !ok {
			return
		}
		peer := route.Identity
		v, err := decode(payload, r.MaxBytes)
		if err != nil {
			r.Metrics.Reject(r.Log, string(kind), peer, string(protocol.KindOf(err)), err)
			return
		}
		got := from(v)
		if route.Identity != "" && got != route.Identity {
			r.Metrics.Reject(r.Log, string(kind), peer, string(protocol.KindSpoof),
				fmt.Errorf("%s on %s says it is from %q", kind, t, got))
			return
		}
		if route.Identity == "" && !r.Scheme.IsFloor(got) {
			r.Metrics.Reject(r.Log, string(kind), got, string(protocol.KindSpoof),
				fmt.Errorf("%s from %q, which is not a floor", kind, got))
			return
		}
		fn(v)
	})
}

// OnMessage calls fn for every valid Message in the room.
func (r *Room) OnMessage(ctx context.Context, fn func(protocol.Message)) error {
	return subscribe(ctx, r, r.Scheme.Messages(r.Name), topic.KindMessage, protocol.DecodeMessage,
		func(m protocol.Message) string { return m.Params.From }, fn)
}

// OnState calls fn for every valid State of a member in the room.
func (r *Room) OnState(ctx context.Context, fn func(protocol.State)) error {
	return subscribe(ctx, r, r.Scheme.States(r.Name), topic.KindState, protocol.DecodeState,
		func(s protocol.State) string { return s.Params.From }, func(s protocol.State) {
			if r.member(topic.KindState, s.Params.From) {
				fn(s)
			}
		})
}

// OnGrant calls fn for every valid TurnGrant from a floor identity.
func (r *Room) OnGrant(ctx context.Context, fn func(protocol.TurnGrant)) error {
	return subscribe(ctx, r, r.Scheme.Turns(r.Name), topic.KindTurns, protocol.DecodeTurnGrant,
		func(g protocol.TurnGrant) string { return g.From }, fn)
}

// OnHold calls fn for every valid Hold of a member in the room (retained
// ones too).
func (r *Room) OnHold(ctx context.Context, fn func(protocol.Hold)) error {
	return subscribe(ctx, r, r.Scheme.FloorHolds(r.Name), topic.KindHold, protocol.DecodeHold,
		func(h protocol.Hold) string { return h.From }, func(h protocol.Hold) {
			if r.member(topic.KindHold, h.From) {
				fn(h)
			}
		})
}

// SendHold publishes (retained) whether a human holds the floor through id.
func (r *Room) SendHold(ctx context.Context, id string, held bool, now time.Time) error {
	return r.publish(ctx, r.Scheme.FloorHold(r.Name, id), protocol.Hold{From: id, Held: held, Since: now.UTC()}, true)
}

// PresenceEvent is one companion's presence; Cleared means the retained
// value was removed (an empty payload).
type PresenceEvent struct {
	ID       string
	Presence protocol.Presence
	Cleared  bool
}

// OnPresence calls fn for every presence change of a member in the room,
// including the retained ones at subscription.
func (r *Room) OnPresence(ctx context.Context, fn func(PresenceEvent)) error {
	return r.Bus.Subscribe(ctx, r.Scheme.Presences(r.Name), func(t string, payload []byte) {
		route, ok := r.route(t, topic.KindPresence)
		if !ok || !r.member(topic.KindPresence, route.Identity) {
			return
		}
		if len(payload) == 0 {
			fn(PresenceEvent{ID: route.Identity, Cleared: true})
			return
		}
		p, err := protocol.DecodePresence(payload, r.MaxBytes)
		if err != nil {
			r.Metrics.Reject(r.Log, string(topic.KindPresence), route.Identity, string(protocol.KindOf(err)), err)
			return
		}
		fn(PresenceEvent{ID: route.Identity, Presence: p})
	})
}

// Realtime mode (runtime/realtime): phases, posts, the floor's answers and
// broadcasts, in the room (channel "") or one of its whisper channels.

// OnPhase calls fn for every phase event of the channel (from a floor
// identity; retained ones too).
func (r *Room) OnPhase(ctx context.Context, channel string, fn func(protocol.Phase)) error {
	return subscribeIn(ctx, r, channel, r.Scheme.PhaseIn(r.Name, channel), topic.KindPhase, protocol.DecodePhase,
		func(p protocol.Phase) string { return p.From }, fn)
}

// OnPosts calls fn for every realtime post in the channel (the floor's
// side); membership is the floor's to judge.
func (r *Room) OnPosts(ctx context.Context, channel string, fn func(protocol.Post)) error {
	return subscribeIn(ctx, r, channel, r.Scheme.PostsIn(r.Name, channel), topic.KindFloorIn, protocol.DecodePost,
		func(p protocol.Post) string { return p.From }, fn)
}

// OnAcks calls fn for the floor's answers to companion's posts in the
// channel ("+" for everyone's, as a console shows them).
func (r *Room) OnAcks(ctx context.Context, channel, companion string, fn func(to string, a protocol.PostAck)) error {
	return r.Bus.Subscribe(ctx, r.Scheme.AckIn(r.Name, channel, companion), func(t string, payload []byte) {
		route, ok := r.routeIn(t, channel, topic.KindFloorOut)
		if !ok {
			return
		}
		a, err := protocol.DecodePostAck(payload, r.MaxBytes)
		if err != nil {
			r.Metrics.Reject(r.Log, string(topic.KindFloorOut), route.Identity, string(protocol.KindOf(err)), err)
			return
		}
		if !r.Scheme.IsFloor(a.From) {
			r.Metrics.Reject(r.Log, string(topic.KindFloorOut), a.From, string(protocol.KindSpoof),
				fmt.Errorf("post answer from %q, which is not a floor", a.From))
			return
		}
		fn(route.Identity, a)
	})
}

// OnBroadcasts calls fn for every Message in a whisper channel (the room's
// own are OnMessage's).
func (r *Room) OnBroadcasts(ctx context.Context, channel string, fn func(protocol.Message)) error {
	if channel == "" {
		return r.OnMessage(ctx, fn)
	}
	return subscribeIn(ctx, r, channel, r.Scheme.BroadcastsIn(r.Name, channel), topic.KindMessage, protocol.DecodeMessage,
		func(m protocol.Message) string { return m.Params.From }, fn)
}

// QueuePhase queues (retained: a companion that comes late learns the
// phase) a phase event in the channel.
func (r *Room) QueuePhase(o *bus.Outbox, channel string, p protocol.Phase) error {
	return r.queue(o, r.Scheme.PhaseIn(r.Name, channel), p, true)
}

// QueuePost queues a companion's post in the channel.
func (r *Room) QueuePost(o *bus.Outbox, channel string, p protocol.Post) error {
	return r.queue(o, r.Scheme.PostIn(r.Name, channel, p.From), p, false)
}

// QueueAck queues the floor's answer to companion's post in the channel.
func (r *Room) QueueAck(o *bus.Outbox, channel, companion string, a protocol.PostAck) error {
	return r.queue(o, r.Scheme.AckIn(r.Name, channel, companion), a, false)
}

// QueueBroadcast queues an accepted utterance, broadcast by the floor in
// the channel.
func (r *Room) QueueBroadcast(o *bus.Outbox, channel string, m protocol.Message) error {
	if err := m.Validate(); err != nil {
		return err
	}
	return r.queue(o, r.Scheme.BroadcastIn(r.Name, channel, m.Params.From), m, false)
}

// SpeakingEvent is a member's speaking status, or its clearing (an empty
// retained payload).
type SpeakingEvent struct {
	ID       string
	Speaking protocol.Speaking
	Cleared  bool
}

// OnSpeaking calls fn for every speaking status of a member in the room,
// including the retained ones at subscription. A status from someone off
// the roster, or with an absurd duration, is dropped and counted.
func (r *Room) OnSpeaking(ctx context.Context, fn func(SpeakingEvent)) error {
	return r.Bus.Subscribe(ctx, r.Scheme.Speakings(r.Name), func(t string, payload []byte) {
		route, ok := r.route(t, topic.KindSpeaking)
		if !ok || !r.member(topic.KindSpeaking, route.Identity) {
			return
		}
		if len(payload) == 0 {
			fn(SpeakingEvent{ID: route.Identity, Cleared: true})
			return
		}
		s, err := protocol.DecodeSpeaking(payload, r.MaxBytes)
		if err != nil {
			r.Metrics.Reject(r.Log, string(topic.KindSpeaking), route.Identity, string(protocol.KindOf(err)), err)
			return
		}
		fn(SpeakingEvent{ID: route.Identity, Speaking: s})
	})
}

// QueueSpeaking queues (retained) companion id's speaking status on o.
func (r *Room) QueueSpeaking(o *bus.Outbox, id string, s protocol.Speaking) error {
	s.StartedAt = s.StartedAt.UTC()
	return r.queue(o, r.Scheme.Speaking(r.Name, id), s, true)
}

// OnHeard calls fn for every valid report of what a member's body heard
// (docs/hearing.md); a report from someone off the roster is dropped
// and counted. The floor's captions, under the room's person, are
// OnCaption's.
func (r *Room) OnHeard(ctx context.Context, fn func(protocol.Heard)) error {
	voice := r.Scheme.Voices[r.Name]
	return subscribe(ctx, r, r.Scheme.Heards(r.Name), topic.KindHeard, protocol.DecodeHeard,
		func(h protocol.Heard) string { return h.From }, func(h protocol.Heard) {
			if voice != "" && h.From == voice {
				return // a caption (OnCaption), not a robot's report
			}
			if r.member(topic.KindHeard, h.From) {
				fn(h)
			}
		})
}

// SendHeard publishes a member's heard report.
func (r *Room) SendHeard(ctx context.Context, h protocol.Heard) error {
	h.Start, h.End = h.Start.UTC(), h.End.UTC()
	return r.publish(ctx, r.Scheme.Heard(r.Name, h.From), h, false)
}

// QueueHeard queues a member's heard report on o, or the floor's caption
// (OnCaption: From is the room's person).
func (r *Room) QueueHeard(o *bus.Outbox, h protocol.Heard) error {
	h.Start, h.End = h.Start.UTC(), h.End.UTC()
	return r.queue(o, r.Scheme.Heard(r.Name, h.From), h, false)
}

// OnCaption calls fn for the words so far of a person's utterance under
// way, as the room's floor forwards them (heard reports of state partial
// under the room's person, hearing.user: runtime/hearing). A room that
// hears nobody (no voice in its Scheme) has none.
func (r *Room) OnCaption(ctx context.Context, fn func(protocol.Heard)) error {
	user := r.Scheme.Voices[r.Name]
	if user == "" {
		return nil
	}
	return subscribe(ctx, r, r.Scheme.Heard(r.Name, user), topic.KindHeard, protocol.DecodeHeard,
		func(h protocol.Heard) string { return h.From }, func(h protocol.Heard) {
			if h.State == protocol.HeardPartial {
				fn(h)
			}
		})
}

// OnForgot calls fn for every valid report of what a member forgot about
// a person (issue 29); a report from someone off the roster is dropped
// and counted.
func (r *Room) OnForgot(ctx context.Context, fn func(protocol.Forgot)) error {
	return subscribe(ctx, r, r.Scheme.Forgots(r.Name), topic.KindForgot, protocol.DecodeForgot,
		func(f protocol.Forgot) string { return f.From }, func(f protocol.Forgot) {
			if r.member(topic.KindForgot, f.From) {
				fn(f)
			}
		})
}

// SendForgot publishes a member's report of what it forgot.
func (r *Room) SendForgot(ctx context.Context, f protocol.Forgot) error {
	return r.publish(ctx, r.Scheme.Forgot(r.Name, f.From), f, false)
}

// OnShared calls fn for every valid report of facts a member learned
// (a room that shares memory); one from someone off the roster is dropped
// and counted.
func (r *Room) OnShared(ctx context.Context, fn func(protocol.Shared)) error {
	return subscribe(ctx, r, r.Scheme.FactsOf(r.Name), topic.KindFacts, protocol.DecodeShared,
		func(s protocol.Shared) string { return s.From }, func(s protocol.Shared) {
			if r.member(topic.KindFacts, s.From) {
				fn(s)
			}
		})
}

// SendShared publishes a member's learned facts to the room's members.
func (r *Room) SendShared(ctx context.Context, s protocol.Shared) error {
	for i := range s.Facts {
		s.Facts[i].Created = s.Facts[i].Created.UTC()
	}
	return r.publish(ctx, r.Scheme.Facts(r.Name, s.From), s, false)
}

// OnForgets calls fn for every member's retained forget log (issue 29):
// who asked the room to forget them.
func (r *Room) OnForgets(ctx context.Context, fn func(protocol.ForgetLog)) error {
	return subscribe(ctx, r, r.Scheme.ForgetsOf(r.Name), topic.KindForgets, protocol.DecodeForgetLog,
		func(l protocol.ForgetLog) string { return l.From }, func(l protocol.ForgetLog) {
			if r.member(topic.KindForgets, l.From) {
				fn(l)
			}
		})
}

// QueueForgets queues (retained) a member's forget log on o.
func (r *Room) QueueForgets(o *bus.Outbox, l protocol.ForgetLog) error {
	for i := range l.Forgets {
		l.Forgets[i].At = l.Forgets[i].At.UTC()
	}
	return r.queue(o, r.Scheme.Forgets(r.Name, l.From), l, true)
}

func (r *Room) publish(ctx context.Context, t string, v any, retain bool) error {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("room %s: encode for %s: %w", r.Name, t, err)
	}
	return r.Bus.Publish(ctx, t, b, retain)
}

// queue encodes v and hands it to o; it never waits on the network.
func (r *Room) queue(o *bus.Outbox, t string, v any, retain bool) error {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("room %s: encode for %s: %w", r.Name, t, err)
	}
	if !o.Send(t, b, retain) {
		return fmt.Errorf("room %s: %s: %w", r.Name, t, bus.ErrOutboxFull)
	}
	return nil
}

// QueueMessage queues m under its sender on o.
func (r *Room) QueueMessage(o *bus.Outbox, m protocol.Message) error {
	if err := m.Validate(); err != nil {
		return err
	}
	return r.queue(o, r.Scheme.Message(r.Name, m.Params.From), m, false)
}

// QueueState queues s under its voter on o.
func (r *Room) QueueState(o *bus.Outbox, s protocol.State) error {
	return r.queue(o, r.Scheme.State(r.Name, s.Params.From), s, false)
}

// QueueGrant queues a TurnGrant on o (floor identities only).
func (r *Room) QueueGrant(o *bus.Outbox, g protocol.TurnGrant) error {
	return r.queue(o, r.Scheme.Turns(r.Name), g, false)
}

// QueueHold queues (retained) whether a human holds the floor through id.
func (r *Room) QueueHold(o *bus.Outbox, id string, held bool, now time.Time) error {
	return r.queue(o, r.Scheme.FloorHold(r.Name, id), protocol.Hold{From: id, Held: held, Since: now.UTC()}, true)
}

// SendMessage publishes m under its sender.
func (r *Room) SendMessage(ctx context.Context, m protocol.Message) error {
	if err := m.Validate(); err != nil {
		return err
	}
	return r.publish(ctx, r.Scheme.Message(r.Name, m.Params.From), m, false)
}

// SendState publishes s under its voter.
func (r *Room) SendState(ctx context.Context, s protocol.State) error {
	return r.publish(ctx, r.Scheme.State(r.Name, s.Params.From), s, false)
}

// SendGrant publishes a TurnGrant (floor identities only).
func (r *Room) SendGrant(ctx context.Context, g protocol.TurnGrant) error {
	return r.publish(ctx, r.Scheme.Turns(r.Name), g, false)
}

// PresenceMessages returns the retained birth and will messages that mark
// companion id on device online and offline, for bus.Options. The birth is
// stamped with the time of each (re)connect; the will, which the broker
// holds from the connect on, with the time it was made.
func (r *Room) PresenceMessages(id, device string) (birth func(time.Time) *bus.Retained, will *bus.Retained) {
	a := r.Announce(id, device, 0)
	return a.Birth, a.Will()
}

// Announcement is what a companion says of itself on its retained presence
// topic: online since its last (re)connect, on which device, and how long
// it expects to think before it votes (docs/protocol.md: a dead or slow robot
// never stalls the room; the floor sizes each vote's deadline from these).
// The bus publishes Birth on every connect; the companion changes the
// think time with SetThink.
//
// # Concurrency
//
// Safe for concurrent use.
type Announcement struct {
	r          *Room
	id, device string

	mu    sync.Mutex
	since time.Time
	think time.Duration
	hears bool
	sees  bool
}

// SetHears says (in every presence from now on) whether the companion's
// body reports what it hears; set it before the bus connects.
func (a *Announcement) SetHears(on bool) {
	a.mu.Lock()
	a.hears = on
	a.mu.Unlock()
}

// SetSees says (in every presence from now on) whether the companion's
// device has a camera; set it before the bus connects.
func (a *Announcement) SetSees(on bool) {
	a.mu.Lock()
	a.sees = on
	a.mu.Unlock()
}

// Announce returns the announcement of companion id on device, expecting
// to think for think.
func (r *Room) Announce(id, device string, think time.Duration) *Announcement {
	return &Announcement{r: r, id: id, device: device, think: think}
}

func (a *Announcement) payload(online bool, since time.Time, think time.Duration) []byte {
	p := protocol.Presence{Online: online, Device: a.device, Since: since.UTC()}
	if online {
		p.ThinkMs = min(int(think/time.Millisecond), protocol.MaxThinkMs)
		a.mu.Lock()
		p.Hears, p.Sees = a.hears, a.sees
		a.mu.Unlock()
	}
	b, _ := json.Marshal(p)
	return b
}

// Birth is the retained presence for a connect at now (bus.Options.Birth).
func (a *Announcement) Birth(now time.Time) *bus.Retained {
	a.mu.Lock()
	a.since = now
	think := a.think
	a.mu.Unlock()
	return &bus.Retained{Topic: a.r.Scheme.Presence(a.r.Name, a.id), Payload: a.payload(true, now, think)}
}

// Will is the retained presence the broker publishes if the connection
// dies (bus.Options.Will).
func (a *Announcement) Will() *bus.Retained {
	return &bus.Retained{Topic: a.r.Scheme.Presence(a.r.Name, a.id), Payload: a.payload(false, time.Now(), 0)}
}

// Think is the think time announced.
func (a *Announcement) Think() time.Duration {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.think
}

// SetThink announces a new think time: the retained presence is published
// again on o, with the since of the last connect.
func (a *Announcement) SetThink(d time.Duration, o *bus.Outbox) error {
	a.mu.Lock()
	a.think = d
	since := a.since
	a.mu.Unlock()
	if since.IsZero() {
		since = time.Now()
	}
	if !o.Send(a.r.Scheme.Presence(a.r.Name, a.id), a.payload(true, since, d), true) {
		return fmt.Errorf("room %s: presence of %s: %w", a.r.Name, a.id, bus.ErrOutboxFull)
	}
	return nil
}
