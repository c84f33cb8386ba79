// Package seen remembers the ids seen most recently, up to a bound: what
// makes a receiver idempotent under at-least-once delivery (docs/protocol.md,
// "Delivery": a grant, State or Message seen twice acts once) without a
// map that grows with every message of a long-lived room.
//
// # Concurrency
//
// A Set is not safe for concurrent use; its owner (one event loop) holds it.
package seen

// Set is a bounded set of ids: adding beyond Max forgets the oldest.
type Set struct {
	max  int
	ids  map[string]bool
	ring []string
	next int
}

// New returns a set that remembers up to max ids (at least 1).
func New(max int) *Set {
	if max < 1 {
		max = 1
	}
	return &Set{max: max, ids: make(map[string]bool, max), ring: make([]string, 0, max)}
}

// Has reports whether id was added and not forgotten since.
func (s *Set) Has(id string) bool { return s.ids[id] }

// Add remembers id and reports whether it was new.
func (s *Set) Add(id string) bool {
	if s.ids[id] {
		return false
	}
	if len(s.ring) < s.max {
		s.ring = append(s.ring, id)
	} else {
		delete(s.ids, s.ring[s.next])
		s.ring[s.next] = id
		s.next = (s.next + 1) % s.max
	}
	s.ids[id] = true
	return true
}

// Len is the number of ids remembered.
func (s *Set) Len() int { return len(s.ids) }
