// The repetition judge's settings: a config's room.repetition section.

package repetition

import (
	"time"

	"github.com/chorus-robotics/chorus/runtime/settings"
)

// Settings configure the repetition judge (aikyo-closing.ja.md).
type Settings struct {
	Threshold float64 `yaml:"threshold"`
	Window    int     `yaml:"window"`
	// Judge is "model" (default: the companion's model is asked whether
	// the window repeats, with the local score as fallback; a rule brain
	// has no model and uses the local score), "local" (the character-bigram
	// score only) or "off" (no repetition judge: the seed's
	// enableRepetitionJudge false).
	Judge string `yaml:"judge"`
	// JudgeEvery is the fewest messages between two questions to the
	// model; JudgeTimeout how long one may take.
	JudgeEvery   int           `yaml:"judge_every"`
	JudgeTimeout time.Duration `yaml:"judge_timeout"`
}

// Repetition judges.
const (
	JudgeModel = "model"
	JudgeLocal = "local"
	JudgeOff   = "off"
)

// The model judge's defaults.
const (
	DefaultJudgeEvery   = 4
	DefaultJudgeTimeout = 10 * time.Second
)

// SetDefaults fills every unset field.
func (s *Settings) SetDefaults() {
	if s.Threshold == 0 {
		s.Threshold = DefaultThreshold
	}
	if s.Window == 0 {
		s.Window = DefaultWindow
	}
	if s.Judge == "" {
		s.Judge = JudgeModel
	}
	if s.JudgeEvery == 0 {
		s.JudgeEvery = DefaultJudgeEvery
	}
	if s.JudgeTimeout == 0 {
		s.JudgeTimeout = DefaultJudgeTimeout
	}
}

// Check reports every bad field to p (the section's view).
func (s Settings) Check(p *settings.Problems) {
	if s.Threshold <= 0 || s.Threshold > 1 {
		p.Add("threshold", "must be above 0 and at most 1, got %v", s.Threshold)
	}
	if s.Window < 2 || s.Window > 100 {
		p.Add("window", "must be from 2 to 100, got %d", s.Window)
	}
	switch s.Judge {
	case JudgeModel, JudgeLocal, JudgeOff:
	default:
		p.Add("judge", "must be model, local or off, got %q", s.Judge)
	}
	if s.JudgeEvery < 1 || s.JudgeEvery > 1000 {
		p.Add("judge_every", "must be from 1 to 1000, got %d", s.JudgeEvery)
	}
	if s.JudgeTimeout < 0 {
		p.Add("judge_timeout", "must not be negative, got %v", s.JudgeTimeout)
	}
}
