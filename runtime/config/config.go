// Package config is a robot's configuration: one YAML file per device,
// decoded strictly (an unknown key is an error) and validated as a whole
// before anything touches hardware. Validate reports every bad field at
// once, each by its path ("drivers.camera.device: must be ..."). Secrets
// never live in the YAML: it names the environment variable or file that
// holds them.
//
// # Usage
//
//	cfg, err := config.Load("firmware-configs/livingroom/pi5-robot.yaml")
//	if err != nil { ... }          // every problem, one per line
//	pw, err := cfg.MQTT.Password() // from the environment or a file
package config

import (
	"path/filepath"
	"slices"

	"github.com/chorus-robotics/chorus/runtime/brain"
	"github.com/chorus-robotics/chorus/runtime/broker"
	"github.com/chorus-robotics/chorus/runtime/bus"
	"github.com/chorus-robotics/chorus/runtime/companion"
	"github.com/chorus-robotics/chorus/runtime/floor"
	"github.com/chorus-robotics/chorus/runtime/memory"
	"github.com/chorus-robotics/chorus/runtime/query"
	"github.com/chorus-robotics/chorus/runtime/realtime"
	"github.com/chorus-robotics/chorus/runtime/repetition"
	"github.com/chorus-robotics/chorus/runtime/topic"
)

// Version is the config format this build reads.
const Version = 1

// Config is a device's room settings: the sections of its config file
// that the conversation runtime reads (a robot's file adds its hearing
// section, half the room's and half its ear's, and its body's:
// device/robot inlines this one).
type Config struct {
	Version   int            `yaml:"version"`
	Device    Device         `yaml:"device"`
	Room      Room           `yaml:"room"`
	MQTT      MQTT           `yaml:"mqtt"`
	Companion *brain.Card    `yaml:"companion"` // absent on a speaker-only device
	Brain     brain.Settings `yaml:"brain"`
	Query     query.Settings `yaml:"query"`
	// Memory turns the companion's long-term memory on (issue 29); nil
	// (no memory section) remembers nothing.
	Memory *memory.Settings `yaml:"memory"`

	path     string
	sections map[string]bool // the file's top-level keys
}

// Device names the body.
type Device struct {
	ID    string `yaml:"id"`
	Model string `yaml:"model"`
	// Arch is the board's CPU as its OS runs it (Arches), so that
	// `chorus install` refuses a chorusd built for another; empty: any.
	Arch string `yaml:"arch"`
}

// Arches are the values of device.arch: arm64 (a Pi 3/4/5 or Zero 2 W on
// a 64-bit OS), armv7 and armv6 (32-bit Raspberry Pi OS; armv6 for the Pi
// Zero and 1), amd64.
var Arches = []string{"arm64", "armv7", "armv6", "amd64"}

// Room is the conversation this device takes part in. Its votes are the
// floor's settings, its turns the companion's, its repetition judge
// repetition's and its realtime mode realtime's.
type Room struct {
	Name string `yaml:"name"`
	// Members is the room's roster: the ids of its companions. Only they
	// are present, vote and take the floor; anyone else who may connect is
	// a user (docs/protocol.md, "Room membership is explicit").
	Members                []string `yaml:"members"`
	Floor                  bool     `yaml:"floor"`          // run a floor for the room here
	FloorInstance          string   `yaml:"floor_instance"` // default: the device id
	floor.VoteSettings     `yaml:",inline"`
	companion.TurnSettings `yaml:",inline"`
	Repetition             repetition.Settings `yaml:"repetition"`
	MaxPayload             int                 `yaml:"max_payload"` // bytes; 0 means 64 KiB
	// Mode is "turn" (default: the floor grants each turn after a vote)
	// or "realtime" (the aiwolf free floor: anyone posts, the floor
	// enforces hard limits).
	Mode     string            `yaml:"mode"`
	Realtime realtime.Settings `yaml:"realtime"`
}

// Room modes.
const (
	ModeTurn     = "turn"
	ModeRealtime = "realtime"
)

// MQTT is how the device reaches its room's broker, and the broker it
// may run itself.
type MQTT struct {
	bus.Settings `yaml:",inline"`
	Embedded     broker.Settings `yaml:"embedded"`
}

// Path is the file the config came from, if any.
func (c *Config) Path() string { return c.path }

// Identity is the name the device publishes under: its companion's id, or
// the device id on a speaker-only device.
func (c *Config) Identity() string {
	if c.Companion != nil && c.Companion.ID != "" {
		return c.Companion.ID
	}
	return c.Device.ID
}

// Scheme is the topic scheme of this device's room: its prefix, floor
// identities, roster and whisper channels (for the broker's ACL and the
// room's checks).
func (c *Config) Scheme() topic.Scheme {
	s := topic.Scheme{Prefix: c.MQTT.Prefix, FloorIDs: c.MQTT.FloorIDs}.WithRoster(c.Room.Name, c.Room.Members)
	for ch, ms := range c.Room.Realtime.Whisper {
		s = s.WithWhisper(c.Room.Name, ch, ms)
	}
	return s
}

// BodyDevice is the device whose speak and vision queries the companion uses:
// companion.body, or this device.
func (c *Config) BodyDevice() string {
	if c.Companion != nil && c.Companion.Body != "" {
		return c.Companion.Body
	}
	return c.Device.ID
}

// Resolve makes a relative path in the config relative to the config's
// folder.
func (c *Config) Resolve(p string) string {
	if p == "" || filepath.IsAbs(p) || c.path == "" {
		return p
	}
	return filepath.Join(filepath.Dir(c.path), p)
}

// IsRoomMember reports whether id is one of the room's companions.
func (c *Config) IsRoomMember(id string) bool { return slices.Contains(c.Room.Members, id) }

// IsFloorID reports whether id is one of the room's floor identities.
func (c *Config) IsFloorID(id string) bool { return slices.Contains(c.MQTT.FloorIDs, id) }
