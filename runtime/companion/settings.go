// The companion's settings: its fields of a config's room section.

package companion

import (
	"time"

	"github.com/chorus-robotics/chorus/runtime/protocol"
	"github.com/chorus-robotics/chorus/runtime/settings"
)

// TurnSettings are the companion's fields of the room section: how it takes
// its turns.
type TurnSettings struct {
	Pause time.Duration `yaml:"pause"` // silence between two robots' voices
	// Turns is "overlapped" (default: the next robot thinks while one
	// talks, and starts when it ends plus the pause) or "sequential"
	// (aikyo's order: a robot's Message goes out once its audio ended).
	Turns string `yaml:"turns"`
	// BargeIn is what a user's Message does to a robot that speaks:
	// "sentence" (default: stop after the sentence), "immediate" or "off".
	BargeIn string `yaml:"barge_in"`
	History int    `yaml:"history"`
	// MaxTurn is how many States a companion votes before it forces
	// terminal (aikyo's maxTurn); default DefaultMaxTurn.
	MaxTurn int `yaml:"max_turn"`
}

// Turn orders (room.turns).
const (
	TurnsOverlapped = "overlapped"
	TurnsSequential = "sequential"
)

// SetDefaults fills every unset field.
func (s *TurnSettings) SetDefaults() {
	if s.Pause == 0 {
		s.Pause = DefaultPause
	}
	if s.Turns == "" {
		s.Turns = TurnsOverlapped
	}
	if s.BargeIn == "" {
		s.BargeIn = string(protocol.BargeInSentence)
	}
	if s.History == 0 {
		s.History = DefaultHistory
	}
	if s.MaxTurn == 0 {
		s.MaxTurn = DefaultMaxTurn
	}
}

// Check reports every bad field to p (the room section's view).
func (s TurnSettings) Check(p *settings.Problems) {
	if s.Pause < 0 || s.Pause > time.Minute {
		p.Add("pause", "must be from 0 to 1m, got %v", s.Pause)
	}
	if s.Turns != TurnsOverlapped && s.Turns != TurnsSequential {
		p.Add("turns", "must be overlapped or sequential, got %q", s.Turns)
	}
	if !protocol.BargeIn(s.BargeIn).Valid() {
		p.Add("barge_in", "must be sentence, immediate or off, got %q", s.BargeIn)
	}
	if s.History < 1 || s.History > 1000 {
		p.Add("history", "must be from 1 to 1000, got %d", s.History)
	}
	if s.MaxTurn < 0 {
		p.Add("max_turn", "must not be negative, got %d", s.MaxTurn)
	}
}
