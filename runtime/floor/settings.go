// The floor's settings: its fields of a config's room section.

package floor

import (
	"time"

	"github.com/chorus-robotics/chorus/runtime/settings"
)

// VoteSettings are the floor's fields of the room section (room.vote_timeout,
// room.vote_ceiling, room.max_pending).
type VoteSettings struct {
	VoteTimeout time.Duration `yaml:"vote_timeout"` // the shortest vote deadline
	VoteCeiling time.Duration `yaml:"vote_ceiling"` // the longest, whatever companions announce
	MaxPending  int           `yaml:"max_pending"`
}

// SetDefaults fills every unset field; the ceiling is never below the
// vote timeout.
func (s *VoteSettings) SetDefaults() {
	if s.VoteTimeout == 0 {
		s.VoteTimeout = DefaultVoteTimeout
	}
	if s.VoteCeiling == 0 {
		s.VoteCeiling = max(DefaultVoteCeiling, s.VoteTimeout)
	}
	if s.MaxPending == 0 {
		s.MaxPending = DefaultMaxPending
	}
}

// Check reports every bad field to p (the room section's view).
func (s VoteSettings) Check(p *settings.Problems) {
	if s.VoteTimeout < 10*time.Millisecond || s.VoteTimeout > time.Minute {
		p.Add("vote_timeout", "must be from 10ms to 1m, got %v", s.VoteTimeout)
	}
	if s.VoteCeiling < s.VoteTimeout || s.VoteCeiling > 10*time.Minute {
		p.Add("vote_ceiling", "must be from room.vote_timeout (%v) to 10m, got %v", s.VoteTimeout, s.VoteCeiling)
	}
	if s.MaxPending < 1 || s.MaxPending > 4096 {
		p.Add("max_pending", "must be from 1 to 4096, got %d", s.MaxPending)
	}
}
