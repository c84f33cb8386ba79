// The realtime room's settings: a config's room.realtime section.

package realtime

import (
	"fmt"
	"slices"
	"time"

	"github.com/chorus-robotics/chorus/runtime/settings"
)

// Settings are the realtime mode's limits (the aiwolf realtime design's
// tuning table). An unset field keeps its default (DefaultSettings); a
// zero or negative one is an error naming it, never replaced.
type Settings struct {
	PhaseTimeout   time.Duration `yaml:"phase_timeout"`   // a phase ends after this
	SilenceTimeout time.Duration `yaml:"silence_timeout"` // ... or this long after the last accepted utterance
	RateLimit      time.Duration `yaml:"rate_limit"`      // the shortest gap between two accepted posts of one companion
	MaxCount       struct {
		PerAgent int `yaml:"per_agent"` // each companion's accepted utterances in one phase
		PerDay   int `yaml:"per_day"`   // the room's accepted utterances in one phase (one "day" of talk)
	} `yaml:"max_count"`
	MaxLength struct {
		PerTalk int `yaml:"per_talk"` // characters (runes): longer text is cut, and its author told
	} `yaml:"max_length"`
	PollInterval  time.Duration `yaml:"poll_interval"`  // a companion asks its brain at least this often
	SpeakCooldown time.Duration `yaml:"speak_cooldown"` // ... and never sooner than this after its last post
	// Overlap false (default: a room of voices) accepts a post only while
	// nobody speaks; true behaves as the seed (text rooms).
	Overlap bool `yaml:"overlap"`
	// Whisper lists the room's whisper channels and their members.
	Whisper map[string][]string `yaml:"whisper"`
}

// DefaultSettings are the seed's tuning table: what a config decodes
// its room.realtime section onto.
func DefaultSettings() Settings {
	var s Settings
	l := DefaultLimits()
	s.PhaseTimeout, s.SilenceTimeout, s.RateLimit = l.PhaseTimeout, l.SilenceTimeout, l.RateLimit
	s.MaxCount.PerAgent, s.MaxCount.PerDay, s.MaxLength.PerTalk = l.PerAgent, l.PerDay, l.PerTalk
	s.PollInterval, s.SpeakCooldown = DefaultPollInterval, DefaultSpeakCooldown
	return s
}

// Limits are the floor's limits of a phase these settings give.
func (s Settings) Limits() Limits {
	return Limits{PhaseTimeout: s.PhaseTimeout, SilenceTimeout: s.SilenceTimeout, RateLimit: s.RateLimit,
		PerAgent: s.MaxCount.PerAgent, PerDay: s.MaxCount.PerDay, PerTalk: s.MaxLength.PerTalk, Overlap: s.Overlap}
}

// Check reports every bad field to p (the section's view); a whisper
// channel's members must be among the room's members.
func (s Settings) Check(p *settings.Problems, members []string) {
	for _, d := range []struct {
		field string
		v     time.Duration
	}{
		{"phase_timeout", s.PhaseTimeout}, {"silence_timeout", s.SilenceTimeout},
		{"rate_limit", s.RateLimit}, {"poll_interval", s.PollInterval}, {"speak_cooldown", s.SpeakCooldown},
	} {
		if d.v <= 0 {
			p.Add(d.field, "must be above zero, got %v", d.v)
		}
	}
	for _, n := range []struct {
		field string
		v     int
	}{
		{"max_count.per_agent", s.MaxCount.PerAgent}, {"max_count.per_day", s.MaxCount.PerDay}, {"max_length.per_talk", s.MaxLength.PerTalk},
	} {
		if n.v <= 0 {
			p.Add(n.field, "must be above zero, got %d", n.v)
		}
	}
	if s.SpeakCooldown > 0 && s.SpeakCooldown < s.RateLimit {
		p.Add("speak_cooldown", "must be at least room.realtime.rate_limit (%v), got %v: a companion would post faster than the floor accepts", s.RateLimit, s.SpeakCooldown)
	}
	if len(s.Whisper) > 64 {
		p.Add("whisper", "at most 64 channels, got %d", len(s.Whisper))
	}
	for ch, ms := range s.Whisper {
		f := "whisper." + ch
		p.Identity(f, ch)
		if len(ms) == 0 {
			p.Add(f, "a whisper channel needs its members")
		}
		for i, m := range ms {
			if !slices.Contains(members, m) {
				p.Add(fmt.Sprintf("%s[%d]", f, i), "%q is not a member of the room (room.members)", m)
			}
		}
	}
}
