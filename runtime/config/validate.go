// Validation: every bad field at once, each named by its path.

package config

import (
	"fmt"
	"slices"
	"strings"

	"github.com/chorus-robotics/chorus/runtime/brain"
	"github.com/chorus-robotics/chorus/runtime/memory"
	"github.com/chorus-robotics/chorus/runtime/settings"
)

// Errors is every problem of a config, one per field.
type Errors []string

func (e Errors) Error() string { return strings.Join(e, "\n") }

// Validate reports every bad field at once: each section's own through
// its owning package's Check, then how the sections fit together.
func (c *Config) Validate() error {
	var p settings.Problems
	c.Check(&p)
	if l := p.List(); len(l) > 0 {
		return Errors(l)
	}
	return nil
}

// Check adds every bad field of the room's sections to p (a larger
// document's Validate adds its own to the same list).
func (c *Config) Check(p *settings.Problems) {
	if c.Version != Version {
		p.Add("version", "must be %d, got %d", Version, c.Version)
	}
	p.Identity("device.id", c.Device.ID)
	if c.Device.Arch != "" && !slices.Contains(Arches, c.Device.Arch) {
		p.Add("device.arch", "must be one of %s, got %q", strings.Join(Arches, ", "), c.Device.Arch)
	}
	r := c.Room
	room := p.In("room")
	room.Identity("name", r.Name)
	r.VoteSettings.Check(room)
	r.TurnSettings.Check(room)
	r.Repetition.Check(room.In("repetition"))
	if r.MaxPayload < 0 {
		room.Add("max_payload", "must not be negative, got %d", r.MaxPayload)
	}
	if r.Floor {
		room.Identity("floor_instance", r.FloorInstance)
	}
	c.validateMembers(room)
	if r.Mode != ModeTurn && r.Mode != ModeRealtime {
		room.Add("mode", "must be turn or realtime, got %q", r.Mode)
	}
	r.Realtime.Check(room.In("realtime"), r.Members)
	c.MQTT.Settings.Check(p.In("mqtt"))
	c.MQTT.Embedded.Check(p.In("mqtt.embedded"))
	if c.Companion != nil {
		if err := c.Companion.Validate(); err != nil {
			field, why, _ := strings.Cut(strings.TrimPrefix(err.Error(), "card"), ": ")
			p.Add("companion"+field, "%s", why)
		}
		if c.IsFloorID(c.Companion.ID) {
			p.Add("companion.id", "%q is a floor identity (mqtt.floor_ids); a companion needs a name of its own", c.Companion.ID)
		}
	}
	// Kinds (brain.provider, drivers.*.kind) and their own fields are
	// checked by the registry of what a build contains (device/parts).
	b := c.Brain
	b.Check(p.In("brain"))
	if c.Companion != nil && b.Timeout > r.VoteCeiling {
		p.Add("brain.timeout", "%v is longer than room.vote_ceiling %v: the floor never waits that long, so a slow answer always comes after the vote is decided; lower brain.timeout or raise room.vote_ceiling", b.Timeout, r.VoteCeiling)
	}
	c.Query.Check(p.In("query"))
	if m := c.Memory; m != nil {
		m.Check(p.In("memory"))
		if c.Companion == nil {
			p.Add("memory", "a device without a companion remembers nothing: remove the section or add a companion")
		}
		if c.Memory.Extract == memory.ExtractModel && b.Provider == brain.DefaultProvider {
			p.Add("memory.extract", "model needs a model brain (brain.provider is rule): use rules")
		}
	}
}

// validateMembers checks the room's roster (p is the room section's view).
func (c *Config) validateMembers(p *settings.Problems) {
	r := c.Room
	if len(r.Members) == 0 {
		p.Add("members", "required: the ids of the room's companions (only they vote and take the floor)")
		return
	}
	if len(r.Members) > 1024 {
		p.Add("members", "at most 1024 companions, got %d", len(r.Members))
	}
	seen := map[string]bool{}
	for i, id := range r.Members {
		f := fmt.Sprintf("members[%d]", i)
		p.Identity(f, id)
		if seen[id] {
			p.Add(f, "%q is listed twice", id)
		}
		seen[id] = true
		if c.IsFloorID(id) {
			p.Add(f, "%q is a floor identity (mqtt.floor_ids), not a companion", id)
		}
	}
	if c.Companion != nil && c.Companion.ID != "" && !seen[c.Companion.ID] {
		p.Add("members", "must include this device's companion %q", c.Companion.ID)
	}
}

// SpeaksAsRoom reports whether name is a companion or the floor of the
// room: a client under that name (a bridge's, a person heard) would speak
// as them.
func (c *Config) SpeaksAsRoom(name string) bool {
	return slices.Contains(c.Room.Members, name) || c.Scheme().IsFloor(name)
}
