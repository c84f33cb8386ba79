// The hearing section: one mapping of the file, of two halves with their
// owners' defaults and checks, the room's (runtime/hearing) and the
// body's (device/ear), and how it fits the rest of the file.

package robot

import (
	"github.com/chorus-robotics/chorus/device/ear"
	"github.com/chorus-robotics/chorus/runtime/hearing"
	"github.com/chorus-robotics/chorus/runtime/settings"
)

// Hearing is the config's hearing section (docs/hearing.md): the room's
// half, whether this robot hears and how the room's floor publishes what
// it heard (enabled, user, window: runtime/hearing's), and the body's,
// how this robot hears (tail, stt, vad, wake: its ear's).
type Hearing struct {
	hearing.Settings `yaml:",inline"`
	Ear              ear.Settings `yaml:",inline"`
}

func (c *Config) hearingDefaults() {
	c.Hearing.Settings.SetDefaults()
	c.Hearing.Ear.SetDefaults()
}

// validateHearing checks the room's half of the section and how the
// section fits the rest (p is the file's): the person heard speaks as
// nobody of the room; a robot that hears reports as its companion,
// through a speech-to-text engine. The engine's kind and its own fields,
// like every kind, are the parts registry's (device/parts); the body's
// half is its ear's (Validate checks it beside the drivers).
func (c *Config) validateHearing(p *settings.Problems) {
	h := c.Hearing
	h.Settings.Check(p.In("hearing"))
	if c.SpeaksAsRoom(h.User) {
		p.Add("hearing.user", "%q is a companion or the floor of room %s: the person heard needs an identity of their own", h.User, c.Room.Name)
	}
	for _, id := range h.PeopleIDs() {
		if c.SpeaksAsRoom(id) {
			p.Add("hearing.people."+id, "is a companion or the floor of room %s: a person needs an identity of their own", c.Room.Name)
		}
	}
	if h.Ear.Voice.On() {
		if c.Memory == nil {
			p.Add("hearing.voice", "needs the memory section: the voiceprints are kept in memory.dir")
		}
		if len(h.People) == 0 {
			p.Add("hearing.people", "hearing.voice is on: name the people the robots may know by voice")
		}
	}
	if !h.Enabled {
		return
	}
	if c.Companion == nil {
		p.Add("hearing.enabled", "a device without a companion has nobody to report what it hears as")
	}
	if h.Ear.STT.Kind == "" {
		p.Add("hearing.stt.kind", "hearing is enabled: name a speech-to-text engine (pocketsphinx, wyoming, openai)")
	}
}
