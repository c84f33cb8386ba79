// The hearing's settings: the room's half of a config's hearing section
// (enabled, user, window). The body's half, how one robot hears (tail,
// stt, vad, wake), is its ear's (device/ear); device/robot composes the
// two into the one section of the file, since a config of the runtime
// never imports the device.

package hearing

import (
	"time"

	"github.com/chorus-robotics/chorus/runtime/protocol"
	"github.com/chorus-robotics/chorus/runtime/settings"
)

// Settings are the room's side of hearing people (docs/hearing.md):
// whether this robot is one of the room's ears, and, on the floor's host,
// whom a heard utterance is published as and how long the floor waits for
// other robots' reports of it.
type Settings struct {
	// Enabled makes this robot hear the room and report what it heard
	// (its ear: device/ear's settings).
	Enabled bool `yaml:"enabled"`
	// User is the person's identity in the room (default "user"); not a
	// companion's.
	User   string        `yaml:"user"`
	Window time.Duration `yaml:"window"`
}

// SetDefaults fills the room's fields.
func (s *Settings) SetDefaults() {
	if s.User == "" {
		s.User = protocol.DefaultHeardUser
	}
	if s.Window == 0 {
		s.Window = DefaultWindow
	}
}

// Check reports the room's fields that are bad to p (the section's
// view).
func (s Settings) Check(p *settings.Problems) {
	p.Identity("user", s.User)
	if s.Window < 0 || s.Window > 2*time.Second {
		p.Add("window", "must be from 0 to 2s, got %v", s.Window)
	}
}
