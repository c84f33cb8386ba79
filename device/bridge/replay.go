package bridge

import (
	"encoding/json"

	"github.com/chorus-robotics/chorus/runtime/protocol"
)

// The room's recent Messages, kept for the clients that connect later: a
// console opened (or reloaded) mid-conversation shows the conversation so
// far. They go to a new client in one bridge.replay notification, after
// the room as it is and before anything live:
//
//	{"jsonrpc":"2.0","method":"bridge.replay","params":{"messages":[M...]}}
//
// each M the Message frame as it went out live, oldest first. A client
// that knows no bridge.replay ignores it, as JSON-RPC has a client ignore
// a notification it does not know, and sees no old Message as new.

// MethodReplay is the notification that carries the room's recent
// Messages to a new client.
const MethodReplay = "bridge.replay"

// The bridge's defaults for what it keeps: the room's last 200 Messages,
// and of those no more than 256 KiB (the oldest go first). A conversation
// of the demo is a dozen; 200 short ones are about 80 KiB.
const (
	DefaultReplay      = 200
	DefaultReplayBytes = 256 << 10
)

// recent is the room's last Messages, each kept once (delivery is at
// least once: a copy of one kept is not kept again). Bounded by count and
// bytes; guarded by Bridge.mu.
type recent struct {
	max, maxBytes int
	frames        [][]byte // oldest first
	ids           []string // frames[i] is the Message ids[i]
	kept          map[string]bool
	bytes         int
}

func newRecent(max, maxBytes int) *recent {
	return &recent{max: max, maxBytes: maxBytes, kept: map[string]bool{}}
}

// add keeps f, the frame of the Message id, and forgets the oldest past
// the bounds; a frame larger than all the bytes kept is not kept. It
// returns false for a Message kept already.
func (r *recent) add(id string, f []byte) bool {
	if r.kept[id] {
		return false
	}
	if len(f) > r.maxBytes || r.max <= 0 {
		return true
	}
	r.frames, r.ids = append(r.frames, f), append(r.ids, id)
	r.kept[id] = true
	r.bytes += len(f)
	for len(r.frames) > r.max || r.bytes > r.maxBytes {
		r.bytes -= len(r.frames[0])
		delete(r.kept, r.ids[0])
		r.frames[0] = nil
		r.frames, r.ids = r.frames[1:], r.ids[1:]
	}
	return true
}

// frame is the bridge.replay notification of what is kept.
func (r *recent) frame() []byte {
	ms := make([]json.RawMessage, len(r.frames))
	for i, f := range r.frames {
		ms[i] = f
	}
	return frame(MethodReplay, map[string]any{"messages": ms})
}

// keepMessage keeps the frame f of Message m for later clients and
// returns the clients it goes to live: under one lock, so that a client
// connecting meanwhile gets m either in its replay or live, never both
// and never neither.
func (b *Bridge) keepMessage(m protocol.Message, f []byte) []*client {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.recent.add(m.Params.ID, f)
	return b.liveLocked()
}
