// The hearing's settings: the room's half of a config's hearing section
// (enabled, user, window). The body's half, how one robot hears (tail,
// stt, vad, wake), is its ear's (device/ear); device/robot composes the
// two into the one section of the file, since a config of the runtime
// never imports the device.

package hearing

import (
	"slices"
	"strings"
	"time"
	"unicode/utf8"

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
	// People are the people the room's robots may know by voice
	// (hearing.voice on their bodies), each identity with the names they
	// may give when they enrol by voice ("remember my voice, I'm Sam";
	// the identity always counts): the floor publishes what a known voice
	// says under its identity, and the ACL lets it (docs/hearing.md, "Who
	// is speaking").
	People map[string][]string `yaml:"people"`
}

// PeopleIDs are People's identities, sorted.
func (s Settings) PeopleIDs() []string {
	out := make([]string, 0, len(s.People))
	for id := range s.People {
		out = append(out, id)
	}
	slices.Sort(out)
	return out
}

// maxPeople bounds hearing.people.
const maxPeople = 64

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
	if len(s.People) > maxPeople {
		p.Add("people", "at most %d people, got %d", maxPeople, len(s.People))
	}
	named := map[string]string{} // a name, folded, -> whose
	for _, id := range s.PeopleIDs() {
		for _, n := range append([]string{id}, s.People[id]...) {
			if other, ok := named[strings.ToLower(n)]; ok && other != id {
				p.Add("people."+id, "the name %q is %s's too: enrolment by voice would not know whose voice it is", n, other)
			}
			named[strings.ToLower(n)] = id
		}
	}
	for _, id := range s.PeopleIDs() {
		p.Identity("people."+id, id)
		if id == s.User {
			p.Add("people."+id, "is hearing.user, the identity of a voice nobody knows")
		}
		for _, n := range s.People[id] {
			if n == "" || utf8.RuneCountInString(n) > protocol.MaxEnrolName {
				p.Add("people."+id, "a name must be 1 to %d characters, got %q", protocol.MaxEnrolName, n)
			}
		}
	}
	if s.Window < 0 || s.Window > 2*time.Second {
		p.Add("window", "must be from 0 to 2s, got %v", s.Window)
	}
}
