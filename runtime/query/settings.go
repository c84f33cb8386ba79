// The queries' settings: a config's query section.

package query

import (
	"time"

	"github.com/chorus-robotics/chorus/runtime/protocol"
	"github.com/chorus-robotics/chorus/runtime/settings"
)

// Settings bound the device's queries.
type Settings struct {
	Timeout    time.Duration `yaml:"timeout"`
	MaxPending int           `yaml:"max_pending"`
	MaxResult  int           `yaml:"max_result"` // bytes
}

// SetDefaults fills every unset field.
func (s *Settings) SetDefaults() {
	if s.Timeout == 0 {
		s.Timeout = DefaultTimeout
	}
	if s.MaxPending == 0 {
		s.MaxPending = DefaultMaxPending
	}
	if s.MaxResult == 0 {
		s.MaxResult = protocol.DefaultMaxResultBytes
	}
}

// Check reports every bad field to p (the section's view).
func (s Settings) Check(p *settings.Problems) {
	if s.Timeout < 100*time.Millisecond || s.Timeout > 10*time.Minute {
		p.Add("timeout", "must be from 100ms to 10m, got %v", s.Timeout)
	}
	if s.MaxPending < 1 || s.MaxPending > 100000 {
		p.Add("max_pending", "must be from 1 to 100000, got %d", s.MaxPending)
	}
}
