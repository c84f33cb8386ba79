// Package room is the typed view of one room on the bus: it subscribes to the
// room's topics, decodes every payload strictly, drops spoofs (a "from" that
// is not the identity the topic names, or a grant not from a floor), counts
// and logs what it rejects, and hands valid values to callbacks. It also
// publishes the room's values on the right topics.
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
	return r.Bus.Subscribe(ctx, filter, func(t string, payload []byte) {
		route, ok := r.Scheme.Parse(t)
		if !ok || route.Kind != kind || route.Room != r.Name {
			r.Metrics.Reject(r.Log, string(kind), t, "topic", fmt.Errorf("unexpected topic %q", t))
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

// OnState calls fn for every valid State in the room.
func (r *Room) OnState(ctx context.Context, fn func(protocol.State)) error {
	return subscribe(ctx, r, r.Scheme.States(r.Name), topic.KindState, protocol.DecodeState,
		func(s protocol.State) string { return s.Params.From }, fn)
}

// OnGrant calls fn for every valid TurnGrant from a floor identity.
func (r *Room) OnGrant(ctx context.Context, fn func(protocol.TurnGrant)) error {
	return subscribe(ctx, r, r.Scheme.Turns(r.Name), topic.KindTurns, protocol.DecodeTurnGrant,
		func(g protocol.TurnGrant) string { return g.From }, fn)
}

// OnHold calls fn for every valid Hold in the room (retained ones too).
func (r *Room) OnHold(ctx context.Context, fn func(protocol.Hold)) error {
	return subscribe(ctx, r, r.Scheme.FloorHolds(r.Name), topic.KindHold, protocol.DecodeHold,
		func(h protocol.Hold) string { return h.From }, fn)
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

// OnPresence calls fn for every presence change in the room, including the
// retained ones at subscription.
func (r *Room) OnPresence(ctx context.Context, fn func(PresenceEvent)) error {
	return r.Bus.Subscribe(ctx, r.Scheme.Presences(r.Name), func(t string, payload []byte) {
		route, ok := r.Scheme.Parse(t)
		if !ok || route.Kind != topic.KindPresence || route.Room != r.Name {
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

func (r *Room) publish(ctx context.Context, t string, v any, retain bool) error {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("room %s: encode for %s: %w", r.Name, t, err)
	}
	return r.Bus.Publish(ctx, t, b, retain)
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
// companion id on device online and offline, for bus.Options.
func (r *Room) PresenceMessages(id, device string, now time.Time) (birth, will *bus.Retained) {
	t := r.Scheme.Presence(r.Name, id)
	on, _ := json.Marshal(protocol.Presence{Online: true, Device: device, Since: now.UTC()})
	off, _ := json.Marshal(protocol.Presence{Online: false, Device: device, Since: now.UTC()})
	return &bus.Retained{Topic: t, Payload: on}, &bus.Retained{Topic: t, Payload: off}
}
