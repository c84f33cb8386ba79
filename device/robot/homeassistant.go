// Home Assistant (docs/homeassistant.md): a robot that describes
// itself to Home Assistant by MQTT discovery and takes its commands.

package robot

import (
	"strings"
	"unicode/utf8"

	"github.com/chorus-robotics/chorus/runtime/settings"
	"github.com/chorus-robotics/chorus/runtime/topic"
)

// HomeAssistant makes the robot a Home Assistant device.
type HomeAssistant struct {
	Enabled bool `yaml:"enabled"`
	// DiscoveryPrefix is Home Assistant's discovery prefix (default
	// homeassistant).
	DiscoveryPrefix string `yaml:"discovery_prefix"`
	// NodeID names the robot's device in Home Assistant (its discovery
	// topic and unique ids); default the robot's identity.
	NodeID string `yaml:"node_id"`
	// User is the MQTT identity Home Assistant connects as: the only one
	// whose commands the robot takes, and the room's sender of what is
	// typed in the "say" box (default homeassistant).
	User string `yaml:"user"`
	// Opener is what the "start conversation" button says to the room.
	Opener string `yaml:"opener"`

	configured bool // the section was in the file: off means taken out of Home Assistant
}

// Configured reports whether the config has a homeassistant section: a
// robot with the feature off then takes itself out of Home Assistant.
func (h HomeAssistant) Configured() bool { return h.configured }

// Home Assistant defaults.
const (
	DefaultDiscoveryPrefix = "homeassistant"
	DefaultHAUser          = "homeassistant"
	DefaultOpener          = "Hello everyone! What shall we talk about?"
)

var haNode = topic.HANodePattern

func (c *Config) haDefaults() {
	h := &c.HomeAssistant
	h.configured = c.InFile("homeassistant") || *h != (HomeAssistant{})
	def(&h.DiscoveryPrefix, DefaultDiscoveryPrefix)
	def(&h.User, DefaultHAUser)
	def(&h.Opener, DefaultOpener)
	if h.NodeID == "" {
		h.NodeID = haNodeOf(c.Identity())
	}
}

// haNodeOf is the node id a robot of identity id gets by default
// (topic.HANodeOf).
func haNodeOf(id string) string { return topic.HANodeOf(id) }

// validateHA checks the section (p is its view).
func (c *Config) validateHA(p *settings.Problems) {
	h := c.HomeAssistant
	if !haNode.MatchString(h.NodeID) {
		p.Add("node_id", "must be 1 to 64 letters, digits, '_' or '-', got %q", h.NodeID)
	}
	if h.DiscoveryPrefix == "" || strings.ContainsAny(h.DiscoveryPrefix, "+#") || strings.HasPrefix(h.DiscoveryPrefix, "/") ||
		strings.HasSuffix(h.DiscoveryPrefix, "/") || h.DiscoveryPrefix == c.MQTT.Prefix || strings.HasPrefix(h.DiscoveryPrefix, c.MQTT.Prefix+"/") {
		p.Add("discovery_prefix", "must be a topic prefix outside Chorus's (%s), without wildcards, got %q", c.MQTT.Prefix, h.DiscoveryPrefix)
	}
	p.Identity("user", h.User)
	switch {
	case c.IsRoomMember(h.User):
		p.Add("user", "%q is a companion of the room; Home Assistant needs an identity of its own", h.User)
	case c.IsFloorID(h.User):
		p.Add("user", "%q is a floor identity", h.User)
	}
	if strings.TrimSpace(h.Opener) == "" || utf8.RuneCountInString(h.Opener) > 500 {
		p.Add("opener", "must be from 1 to 500 characters")
	}
	if h.Enabled && c.Companion == nil {
		p.Add("enabled", "needs a companion: a speaker-only device is not a Home Assistant robot")
	}
}
