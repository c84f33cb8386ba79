// Package robot is a robot's whole config file: the room's sections,
// which the conversation runtime reads (runtime/config, inlined), and the
// body's, which only the device reads: its drivers, its body parts and
// actions, Home Assistant, the HTTP listener and bridge, and the log. The
// hearing section is half the room's, half the body's (Hearing).
// Each section's defaults and checks are its owner's; Validate reports
// every bad field of the file at once.
//
// # Usage
//
//	cfg, err := robot.Load("firmware-configs/livingroom/pi5-robot.yaml")
//	if err != nil { ... }          // every problem, one per line
//	pw, err := cfg.MQTT.Password() // from the environment or a file
package robot

import (
	"io"
	"io/fs"
	"slices"

	"github.com/chorus-robotics/chorus/device/bridge"
	"github.com/chorus-robotics/chorus/runtime/config"
	"github.com/chorus-robotics/chorus/runtime/settings"
	"github.com/chorus-robotics/chorus/runtime/topic"
)

// Config is a robot's config file.
type Config struct {
	config.Config `yaml:",inline"`
	Hearing       Hearing `yaml:"hearing"`
	Drivers       Drivers `yaml:"drivers"`
	Body          Body    `yaml:"body"`
	// HomeAssistant makes the robot a Home Assistant device (off by default).
	HomeAssistant HomeAssistant `yaml:"homeassistant"`
	HTTP          HTTP          `yaml:"http"`
	Log           Log           `yaml:"log"`
	// Tools are other programs' tools the model may use (MCP servers).
	Tools Tools `yaml:"tools"`
}

// Load reads, decodes strictly, fills defaults and validates path.
func Load(path string) (*Config, error) {
	c := &Config{}
	if err := config.Load(path, c); err != nil {
		return nil, err
	}
	return c, nil
}

// Decode reads one YAML document strictly, fills defaults and validates:
// every problem at once (config.Decode).
func Decode(r io.Reader) (*Config, error) {
	c := &Config{}
	if err := config.Decode(r, c); err != nil {
		return nil, err
	}
	return c, nil
}

// Parse reads one YAML document strictly and fills defaults, without
// validating (config.Parse): the problems of type are returned beside it.
func Parse(r io.Reader) (*Config, config.Errors, error) {
	c := &Config{}
	typed, err := config.Parse(r, c)
	if err != nil {
		return nil, nil, err
	}
	return c, typed, nil
}

// ParseFile is Parse of the file at path; the config remembers its path.
func ParseFile(path string) (*Config, config.Errors, error) {
	c := &Config{}
	typed, err := config.ParseFile(path, c)
	if err != nil {
		return nil, nil, err
	}
	return c, typed, nil
}

// ParseFS is Parse of the file name in fsys (configs embedded in a
// binary).
func ParseFS(fsys fs.FS, name string) (*Config, config.Errors, error) {
	c := &Config{}
	typed, err := config.ParseFS(fsys, name, c)
	if err != nil {
		return nil, nil, err
	}
	return c, typed, nil
}

// Scheme is the topic scheme of this robot's room (config.Scheme) with
// the person its room hears (hearing.user) and its Home Assistant node,
// when it has one.
func (c *Config) Scheme() topic.Scheme {
	s := c.Config.Scheme()
	if c.Hearing.User != "" {
		s = s.WithVoice(c.Room.Name, c.Hearing.User)
	}
	if len(c.Hearing.People) > 0 {
		s = s.WithPeople(c.Room.Name, c.Hearing.PeopleIDs())
	}
	if h := c.HomeAssistant; h.Enabled || h.Configured() {
		s = s.WithHomeAssistant(c.Room.Name, h.DiscoveryPrefix, h.User, h.NodeID, c.Identity())
	}
	return s
}

// SetDefaults fills every unset field: the room's sections through
// config, then the hearing section's and the body's.
func (c *Config) SetDefaults() {
	c.Config.SetDefaults()
	c.hearingDefaults()
	c.driversDefaults()
	c.haDefaults()
	c.toolsDefaults()
	ws := &c.HTTP.WebSocket
	defInt(&ws.MaxFrame, bridge.DefaultMaxFrame)
	defInt(&ws.MaxDeviceFrame, c.Query.MaxResult)
	def(&c.HTTP.Listen, DefaultHTTPListen)
	def(&c.Log.Level, DefaultLogLevel)
	def(&c.Log.Format, DefaultLogFormat)
}

// Validate reports every bad field of the file at once: the room's
// sections and the room's half of hearing, then the body's and how they
// fit the room.
func (c *Config) Validate() error {
	var p, warn settings.Problems
	c.Config.Check(&p)
	c.validateHearing(&p)
	c.Config.CheckCard(&p, &warn, c.bodyTools())
	c.checkExecute(&p, &warn)
	if b := c.Brain; b.MaxUtterance < 10 || b.MaxUtterance > c.Drivers.TTS.MaxChars {
		p.Add("brain.max_utterance", "must be from 10 to drivers.tts.max_chars (%d), the most the body speaks at once, got %d", c.Drivers.TTS.MaxChars, b.MaxUtterance)
	}
	c.validateDrivers(p.In("drivers"))
	c.Hearing.Ear.Check(p.In("hearing"))
	if c.Hearing.Enabled && (c.Drivers.Mic.Kind == "none" || c.Drivers.Mic.Kind == "") {
		p.Add("drivers.mic.kind", "hearing is enabled: name a microphone (command, portaudio, air, file; chorusd --list)")
	}
	c.validateHA(p.In("homeassistant"))
	c.validateHTTP(p.In("http"))
	c.Tools.check(p.In("tools"))
	if !slices.Contains([]string{"debug", "info", "warn", "error"}, c.Log.Level) {
		p.Add("log.level", "must be debug, info, warn or error, got %q", c.Log.Level)
	}
	if !slices.Contains([]string{"text", "json"}, c.Log.Format) {
		p.Add("log.format", "must be text or json, got %q", c.Log.Format)
	}
	if l := p.List(); len(l) > 0 {
		return config.Errors(l)
	}
	return nil
}

// Warnings are what the file says that does nothing on this robot and
// that a start does not refuse (config.CheckCard): chorusd --check-config
// prints them, a start logs them.
func (c *Config) Warnings() []string {
	var p, warn settings.Problems
	c.Config.CheckCard(&p, &warn, c.bodyTools())
	c.checkExecute(&p, &warn)
	return warn.List()
}

// bodyTools says a body behind this robot's bridge may declare knowledge
// tools of its own.
func (c *Config) bodyTools() bool { return c.HTTP.WebSocket.Enabled }

func def(v *string, d string) {
	if *v == "" {
		*v = d
	}
}

func defInt(v *int, d int) {
	if *v == 0 {
		*v = d
	}
}
