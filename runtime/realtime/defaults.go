package realtime

import "time"

// The seed's tuning table (aiwolf realtime design): config's
// room.realtime defaults are these (runtime/config holds them equal).
const (
	DefaultPhaseTimeout   = 120 * time.Second
	DefaultSilenceTimeout = 15 * time.Second
	DefaultRateLimit      = 2 * time.Second
	DefaultPerAgent       = 10
	DefaultPerDay         = 50
	DefaultPerTalk        = 200 // runes
	DefaultPollInterval   = 500 * time.Millisecond
	DefaultSpeakCooldown  = 3 * time.Second
)

// DefaultLimits are the seed's limits of a phase.
func DefaultLimits() Limits {
	return Limits{PhaseTimeout: DefaultPhaseTimeout, SilenceTimeout: DefaultSilenceTimeout, RateLimit: DefaultRateLimit,
		PerAgent: DefaultPerAgent, PerDay: DefaultPerDay, PerTalk: DefaultPerTalk}
}
