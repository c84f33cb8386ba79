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
	"time"

	"github.com/chorus-robotics/chorus/runtime/brain"
	"github.com/chorus-robotics/chorus/runtime/topic"
)

// Version is the config format this build reads.
const Version = 1

// Config is one device's configuration.
type Config struct {
	Version   int         `yaml:"version"`
	Device    Device      `yaml:"device"`
	Room      Room        `yaml:"room"`
	MQTT      MQTT        `yaml:"mqtt"`
	Companion *brain.Card `yaml:"companion"` // absent on a speaker-only device
	Brain     Brain       `yaml:"brain"`
	Drivers   Drivers     `yaml:"drivers"`
	Hearing   Hearing     `yaml:"hearing"`
	Body      Body        `yaml:"body"`
	// HomeAssistant makes the robot a Home Assistant device (off by default).
	HomeAssistant HomeAssistant `yaml:"homeassistant"`
	Query         Query         `yaml:"query"`
	HTTP          HTTP          `yaml:"http"`
	Log           Log           `yaml:"log"`

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

// Room is the conversation this device takes part in.
type Room struct {
	Name string `yaml:"name"`
	// Members is the room's roster: the ids of its companions. Only they
	// are present, vote and take the floor; anyone else who may connect is
	// a user (DESIGN.md, "Room membership is explicit").
	Members       []string      `yaml:"members"`
	Floor         bool          `yaml:"floor"`          // run a floor for the room here
	FloorInstance string        `yaml:"floor_instance"` // default: the device id
	VoteTimeout   time.Duration `yaml:"vote_timeout"`   // the shortest vote deadline
	VoteCeiling   time.Duration `yaml:"vote_ceiling"`   // the longest, whatever companions announce
	MaxPending    int           `yaml:"max_pending"`
	Pause         time.Duration `yaml:"pause"` // silence between two robots' voices
	// Turns is "overlapped" (default: the next robot thinks while one
	// talks, and starts when it ends plus the pause) or "sequential"
	// (aikyo's order: a robot's Message goes out once its audio ended).
	Turns string `yaml:"turns"`
	// BargeIn is what a user's Message does to a robot that speaks:
	// "sentence" (default: stop after the sentence), "immediate" or "off".
	BargeIn    string     `yaml:"barge_in"`
	History    int        `yaml:"history"`
	MaxTurn    int        `yaml:"max_turn"`
	Repetition Repetition `yaml:"repetition"`
	MaxPayload int        `yaml:"max_payload"` // bytes; 0 means 64 KiB
	// Mode is "turn" (default: the floor grants each turn after a vote)
	// or "realtime" (the aiwolf free floor: anyone posts, the floor
	// enforces hard limits).
	Mode     string   `yaml:"mode"`
	Realtime Realtime `yaml:"realtime"`
}

// Room modes.
const (
	ModeTurn     = "turn"
	ModeRealtime = "realtime"
)

// Realtime is the realtime mode's limits (the aiwolf realtime design's
// tuning table). An unset field keeps its default; a zero or negative one
// is an error naming it, never replaced.
type Realtime struct {
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

// Repetition configures the repetition judge (aikyo-closing.ja.md).
type Repetition struct {
	Threshold float64 `yaml:"threshold"`
	Window    int     `yaml:"window"`
	// Judge is "model" (default: the companion's model is asked whether
	// the window repeats, with the local score as fallback; a rule brain
	// has no model and uses the local score), "local" (the character-bigram
	// score only) or "off" (no repetition judge: the seed's
	// enableRepetitionJudge false).
	Judge string `yaml:"judge"`
	// JudgeEvery is the fewest messages between two questions to the
	// model (default 4); JudgeTimeout how long one may take (default 10 s).
	JudgeEvery   int           `yaml:"judge_every"`
	JudgeTimeout time.Duration `yaml:"judge_timeout"`
}

// Repetition judges.
const (
	JudgeModel = "model"
	JudgeLocal = "local"
	JudgeOff   = "off"
)

// MQTT is how the device reaches its room's broker.
type MQTT struct {
	Broker           string   `yaml:"broker"` // tcp://host:port or ssl://host:port
	Prefix           string   `yaml:"prefix"`
	Username         string   `yaml:"username"` // default: the companion id, else the device id
	PasswordEnv      string   `yaml:"password_env"`
	PasswordFile     string   `yaml:"password_file"`
	FloorIDs         []string `yaml:"floor_ids"` // identities allowed to grant turns; default [floor]
	FloorPasswordEnv string   `yaml:"floor_password_env"`
	TLS              TLS      `yaml:"tls"` // for an ssl:// broker
	Embedded         Embedded `yaml:"embedded"`
}

// Embedded runs the room's broker inside this chorusd.
type Embedded struct {
	Enabled        bool   `yaml:"enabled"`
	Listen         string `yaml:"listen"` // host:port
	AllowAnonymous bool   `yaml:"allow_anonymous"`
	// UsersFile is a YAML map of username: password, kept out of the config.
	UsersFile string `yaml:"users_file"`
	TLSCert   string `yaml:"tls_cert"`
	TLSKey    string `yaml:"tls_key"`
	// TLSClientCA, with a TLS listener, makes every client present a
	// certificate this CA signed.
	TLSClientCA string `yaml:"tls_client_ca"`
}

// Brain chooses and configures the companion's mind.
type Brain struct {
	Provider     string        `yaml:"provider"` // rule, openai, anthropic
	Draft        *bool         `yaml:"draft"`    // default true: speak the draft, one model call per turn
	Timeout      time.Duration `yaml:"timeout"`
	ClosingAfter int           `yaml:"closing_after"` // rule brain
	Delay        time.Duration `yaml:"delay"`         // rule brain: simulated thinking time
	BaseURL      string        `yaml:"base_url"`
	Model        string        `yaml:"model"`
	APIKeyEnv    string        `yaml:"api_key_env"`
	JSONMode     bool          `yaml:"json_mode"` // plain JSON mode instead of JSON schema
	MaxTokens    int           `yaml:"max_tokens"`
	MaxUtterance int           `yaml:"max_utterance"` // characters; longer utterances are cut at a sentence boundary
}

// UseDraft reports whether a granted turn speaks the draft.
func (b Brain) UseDraft() bool { return b.Draft == nil || *b.Draft }

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

// Hearing is how this robot hears people (DESIGN.md, "Hearing"): its
// microphone (drivers.mic), a voice activity detector that cuts speech
// into utterances, a speech-to-text engine, and the gate that keeps it
// from transcribing robots. On the floor's host, User and Window are the
// room's: whom a heard utterance is published as, and how long the floor
// waits for other robots' reports of it.
type Hearing struct {
	Enabled bool `yaml:"enabled"`
	// User is the person's identity in the room (default "user"); not a
	// companion's.
	User   string        `yaml:"user"`
	Window time.Duration `yaml:"window"` // default 150 ms
	// Tail is how long after any robot's speech ends the room still does
	// not listen (the room's reverberation); default 300 ms.
	Tail time.Duration `yaml:"tail"`
	STT  STT           `yaml:"stt"`
	VAD  VAD           `yaml:"vad"`
	Wake Wake          `yaml:"wake"`
}

// Wake is when the room listens: always ("none", the default: whenever no
// robot speaks) or for ListenFor after a wake word a Wyoming wake-word
// server heard ("wyoming": openWakeWord). A wake word heard while a robot
// speaks barges in on it.
type Wake struct {
	Kind      string        `yaml:"kind"`       // none, wyoming
	URL       string        `yaml:"url"`        // tcp://host:port
	Names     []string      `yaml:"names"`      // the wake words (the server's model names: okay_nabu, hey_jarvis); checked against its info
	ListenFor time.Duration `yaml:"listen_for"` // default 8 s
}

// STT is the speech-to-text engine.
type STT struct {
	Kind string `yaml:"kind"` // pocketsphinx, wyoming, openai
	// URL is the engine's address: tcp://host:port for wyoming, the API's
	// base URL for openai (https://api.openai.com/v1, a whisper.cpp or
	// faster-whisper server).
	URL       string `yaml:"url"`
	Model     string `yaml:"model"`       // openai: the transcription model (whisper-1); wyoming: sent only when the server lists it
	Language  string `yaml:"language"`    // a hint: en, ja; default the companion's
	APIKeyEnv string `yaml:"api_key_env"` // openai: the environment variable holding the key
	// Binary (pocketsphinx) is the recogniser's program; Grammar a JSGF
	// grammar file and Keywords a keyword list file, which make an offline
	// recogniser exact on the phrases a robot expects.
	Binary   string        `yaml:"binary"`
	Grammar  string        `yaml:"grammar"`
	Keywords string        `yaml:"keywords"`
	Timeout  time.Duration `yaml:"timeout"` // per utterance; default 10 s
	// AfterStop (wyoming) bounds the wait for the server's first answer
	// after the audio stopped: a server that stopped answering fails the
	// utterance then, not at Timeout. 0 derives it: 5 s plus the
	// utterance's length, never more than Timeout.
	AfterStop time.Duration `yaml:"after_stop"`
}

// VAD is the voice activity detector.
type VAD struct {
	// Aggressiveness is 0 (hears most as speech) to 3 (least); default 2.
	Aggressiveness *int          `yaml:"aggressiveness"`
	PreRoll        time.Duration `yaml:"pre_roll"`      // kept before speech starts; default 300 ms
	Hangover       time.Duration `yaml:"hangover"`      // silence that ends an utterance; default 500 ms
	MinUtterance   time.Duration `yaml:"min_utterance"` // shorter bursts are dropped; default 300 ms
	MaxUtterance   time.Duration `yaml:"max_utterance"` // longer speech is cut here; default 15 s
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

// Query settings.
type Query struct {
	Timeout    time.Duration `yaml:"timeout"`
	MaxPending int           `yaml:"max_pending"`
	MaxResult  int           `yaml:"max_result"` // bytes
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

// Turn orders (room.turns).
const (
	TurnsOverlapped = "overlapped"
	TurnsSequential = "sequential"
)

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
