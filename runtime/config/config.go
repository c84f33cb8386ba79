// Package config is a robot's configuration: one YAML file per device,
// decoded strictly (an unknown key is an error) and validated as a whole
// before anything touches hardware. Validate reports every bad field at
// once, each by its path ("drivers.camera.device: must be ..."). Secrets
// never live in the YAML: it names the environment variable or file that
// holds them.
//
// # Usage
//
//	cfg, err := config.Load("firmware-configs/pi5-robot.yaml")
//	if err != nil { ... }          // every problem, one per line
//	pw, err := cfg.MQTT.Password() // from the environment or a file
package config

import (
	"io"
	"log/slog"
	"path/filepath"

	"github.com/chorus-robotics/chorus/runtime/brain"
	"github.com/chorus-robotics/chorus/runtime/broker"
	"github.com/chorus-robotics/chorus/runtime/bus"
	"github.com/chorus-robotics/chorus/runtime/companion"
	"github.com/chorus-robotics/chorus/runtime/floor"
	"github.com/chorus-robotics/chorus/runtime/hearing"
	"github.com/chorus-robotics/chorus/runtime/query"
	"github.com/chorus-robotics/chorus/runtime/realtime"
	"github.com/chorus-robotics/chorus/runtime/repetition"
	"github.com/chorus-robotics/chorus/runtime/topic"
)

// Version is the config format this build reads.
const Version = 1

// Config is one device's configuration.
type Config struct {
	Version   int              `yaml:"version"`
	Device    Device           `yaml:"device"`
	Room      Room             `yaml:"room"`
	MQTT      MQTT             `yaml:"mqtt"`
	Companion *brain.Card      `yaml:"companion"` // absent on a speaker-only device
	Brain     brain.Settings   `yaml:"brain"`
	Drivers   Drivers          `yaml:"drivers"`
	Hearing   hearing.Settings `yaml:"hearing"`
	Body      Body             `yaml:"body"`
	// HomeAssistant makes the robot a Home Assistant device (off by default).
	HomeAssistant HomeAssistant  `yaml:"homeassistant"`
	Query         query.Settings `yaml:"query"`
	HTTP          HTTP           `yaml:"http"`
	Log           Log            `yaml:"log"`

	path string
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
	// a user (DESIGN.md, "Room membership is explicit").
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

// Drivers are the body's hardware adapters.
type Drivers struct {
	Camera Camera `yaml:"camera"`
	Audio  Audio  `yaml:"audio"`
	TTS    TTS    `yaml:"tts"`
	Mic    Mic    `yaml:"mic"`
	GPIO   GPIO   `yaml:"gpio"`
}

// Mic is the microphone driver (DESIGN.md, "Hearing").
type Mic struct {
	Kind string `yaml:"kind"` // none, file, command, portaudio
	// Path (kind file) is a WAV file heard as if spoken into the room,
	// paced in real time; Loop plays it again and again.
	Path string `yaml:"path"`
	Loop bool   `yaml:"loop"`
	// Command (kind command) is a program and its arguments that writes
	// mono s16le PCM to stdout, "{rate}" replaced by the sample rate:
	// arecord, pw-record (wyoming-satellite's --mic-command).
	Command    []string `yaml:"command"`
	Device     string   `yaml:"device"`      // portaudio: an input device by name; default the system's
	SampleRate int      `yaml:"sample_rate"` // default 16000, what speech-to-text engines take
	// Air (kind air) is the host:port of a shared acoustic space
	// (drivers/air, `chorus air serve`): tests and the demo.
	Air string `yaml:"air"`
	// EchoCancelled says the OS takes this robot's own playback out of
	// what its microphone hears (PipeWire's echo-cancel module): then only
	// the other robots' speech gates it, and it may hear a person through
	// its own voice.
	EchoCancelled bool `yaml:"echo_cancelled"`
}

// Camera driver settings.
type Camera struct {
	Kind   string `yaml:"kind"`   // none, testpattern, image, command, gocv
	Device string `yaml:"device"` // gocv: index ("0"), /dev/videoN, or a video/image-sequence file
	Path   string `yaml:"path"`   // image: a still image or a folder of frames
	// Command (kind command) is a program and its arguments that writes an
	// MJPEG stream to stdout: rpicam-vid, ffmpeg.
	Command []string `yaml:"command"`
	// MaxFrame (kind command) caps one JPEG in bytes; default 4 MiB.
	MaxFrame int `yaml:"max_frame"`
	Width    int `yaml:"width"`
	Height   int `yaml:"height"`
	FPS      int `yaml:"fps"`
	Quality  int `yaml:"quality"` // JPEG quality
}

// Audio output driver settings.
type Audio struct {
	Kind string `yaml:"kind"` // null, wav, command, portaudio
	Dir  string `yaml:"dir"`  // wav: where utterances are written
	// Command (kind command) is a program and its arguments that plays
	// mono s16le PCM from stdin, "{rate}" replaced by the sample rate:
	// aplay, pw-play, paplay.
	Command    []string `yaml:"command"`
	Device     string   `yaml:"device"`
	SampleRate int      `yaml:"sample_rate"`
	// Air (kind air) is the host:port of a shared acoustic space
	// (drivers/air, `chorus air serve`): tests and the demo.
	Air string `yaml:"air"`
	// Paced makes null and wav take as long as the audio plays, as a
	// speaker does (a room at human speed; measured silences).
	Paced bool `yaml:"paced"`
}

// TTS engine settings.
type TTS struct {
	Kind     string `yaml:"kind"` // auto, espeak-ng, open_jtalk, voicevox, piper, tone
	Binary   string `yaml:"binary"`
	Voice    string `yaml:"voice"`
	Speed    int    `yaml:"speed"`
	Pitch    int    `yaml:"pitch"`
	URL      string `yaml:"url"`     // voicevox engine
	Speaker  int    `yaml:"speaker"` // voicevox speaker id
	Model    string `yaml:"model"`   // piper voice model
	Dict     string `yaml:"dict"`    // open_jtalk dictionary folder
	MaxChars int    `yaml:"max_chars"`
}

// GPIO pins by name (periph names, e.g. GPIO17).
type GPIO struct {
	LED    string `yaml:"led"`
	Button string `yaml:"button"`
}

// HTTP serves /healthz and /metrics.
type HTTP struct {
	Listen    string    `yaml:"listen"` // default 127.0.0.1:9100; "off" disables
	WebSocket WebSocket `yaml:"websocket"`
}

// WebSocket is the room's WebSocket bridge and console, served at /ws and
// / on http.listen.
type WebSocket struct {
	Enabled bool `yaml:"enabled"`
	// TokensFile and TokensEnv hold the tokens: a YAML list of
	// {token, role: viewer|user|device, name, mqtt_password_env}, in a file
	// or in an environment variable (one line: a flow list).
	TokensFile string `yaml:"tokens_file"`
	TokensEnv  string `yaml:"tokens_env"`
	// Anonymous ("role:name", e.g. user:console) is what a client without
	// a token may be; only on a loopback listener (someone at the robot
	// itself, who may also see its camera frames).
	Anonymous  string `yaml:"anonymous"`
	MaxClients int    `yaml:"max_clients"` // default 32
	// MaxFrame is the most bytes a viewer's or a user's frame may have
	// (default 64 KiB); MaxDeviceFrame a device's, which answers vision
	// queries with camera frames (default query.max_result, 8 MiB).
	MaxFrame       int `yaml:"max_frame"`
	MaxDeviceFrame int `yaml:"max_device_frame"`
}

// Log settings.
type Log struct {
	Level  string `yaml:"level"`  // debug, info, warn, error
	Format string `yaml:"format"` // text, json
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
	if c.Hearing.User != "" {
		s = s.WithVoice(c.Room.Name, c.Hearing.User)
	}
	for ch, ms := range c.Room.Realtime.Whisper {
		s = s.WithWhisper(c.Room.Name, ch, ms)
	}
	if h := c.HomeAssistant; h.Enabled || h.Configured() {
		s = s.WithHomeAssistant(c.Room.Name, h.DiscoveryPrefix, h.User, h.NodeID, c.Identity())
	}
	return s
}

// Logger builds the process logger the log section describes, writing to
// w; an unknown level is info.
func (l Log) Logger(w io.Writer) *slog.Logger {
	var level slog.Level
	if err := level.UnmarshalText([]byte(l.Level)); err != nil {
		level = slog.LevelInfo
	}
	o := &slog.HandlerOptions{Level: level}
	if l.Format == "json" {
		return slog.New(slog.NewJSONHandler(w, o))
	}
	return slog.New(slog.NewTextHandler(w, o))
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
