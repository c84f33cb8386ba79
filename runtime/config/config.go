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
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/chorus-robotics/chorus/runtime/brain"
	"github.com/chorus-robotics/chorus/runtime/brain/llm"
	"github.com/chorus-robotics/chorus/runtime/companion"
	"github.com/chorus-robotics/chorus/runtime/floor"
	"github.com/chorus-robotics/chorus/runtime/protocol"
	"github.com/chorus-robotics/chorus/runtime/query"
	"github.com/chorus-robotics/chorus/runtime/realtime"
	"github.com/chorus-robotics/chorus/runtime/repetition"
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
	Query     Query       `yaml:"query"`
	HTTP      HTTP        `yaml:"http"`
	Log       Log         `yaml:"log"`

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

// DefaultRealtime is the seed's tuning table.
func DefaultRealtime() Realtime {
	var r Realtime
	l := realtime.DefaultLimits()
	r.PhaseTimeout, r.SilenceTimeout, r.RateLimit = l.PhaseTimeout, l.SilenceTimeout, l.RateLimit
	r.MaxCount.PerAgent, r.MaxCount.PerDay, r.MaxLength.PerTalk = l.PerAgent, l.PerDay, l.PerTalk
	r.PollInterval, r.SpeakCooldown = realtime.DefaultPollInterval, realtime.DefaultSpeakCooldown
	return r
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
	GPIO   GPIO   `yaml:"gpio"`
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

// BridgeToken is one entry of the bridge's tokens.
type BridgeToken struct {
	Token           string `yaml:"token"`
	Role            string `yaml:"role"`
	Name            string `yaml:"name"`
	MQTTPasswordEnv string `yaml:"mqtt_password_env"` // the password of name's MQTT connection, if the broker wants one
	Camera          bool   `yaml:"camera"`            // may ask for the devices' camera frames (room members' eyes)
}

// Tokens reads the bridge's tokens from tokens_file or tokens_env.
func (w WebSocket) Tokens() ([]BridgeToken, error) {
	field := "http.websocket.tokens_file"
	if w.TokensEnv != "" {
		field = "http.websocket.tokens_env"
	}
	raw, err := secret(field, w.TokensEnv, w.TokensFile)
	if err != nil || raw == "" {
		return nil, err
	}
	return parseTokens(field, raw)
}

// parseTokens reads the YAML list of tokens from field.
func parseTokens(field, raw string) ([]BridgeToken, error) {
	var ts []BridgeToken
	dec := yaml.NewDecoder(strings.NewReader(raw))
	dec.KnownFields(true)
	if err := dec.Decode(&ts); err != nil {
		return nil, fmt.Errorf("%s: a YAML list of {token, role, name, mqtt_password_env}: %w", field, err)
	}
	seen := map[string]int{}
	for i, t := range ts {
		if j, dup := seen[t.Token]; dup {
			return nil, fmt.Errorf("%s: entries %d and %d have the same token", field, j+1, i+1)
		}
		seen[t.Token] = i
		if len(t.Token) < 16 {
			return nil, fmt.Errorf("%s: entry %d (%s %s): token must be at least 16 characters", field, i+1, t.Role, t.Name)
		}
		if !oneOf(t.Role, "viewer", "user", "device") {
			return nil, fmt.Errorf("%s: entry %d: role must be viewer, user or device, got %q", field, i+1, t.Role)
		}
		if why := protocol.ValidIdentity(t.Name); t.Role != "viewer" && why != "" {
			return nil, fmt.Errorf("%s: entry %d: name: %s", field, i+1, why)
		}
	}
	return ts, nil
}

// Log settings.
type Log struct {
	Level  string `yaml:"level"`  // debug, info, warn, error
	Format string `yaml:"format"` // text, json
}

// Load reads, decodes strictly, fills defaults and validates path.
func Load(path string) (*Config, error) {
	c, typed, err := ParseFile(path)
	if err != nil {
		return nil, err
	}
	if all := Merge(typed, c.Validate()); len(all) > 0 {
		return nil, fmt.Errorf("config %s: %w", path, all)
	}
	return c, nil
}

// Decode reads one YAML document, strictly, then fills defaults and
// validates. Every problem is reported at once, each by its field's path:
// a value of the wrong type too ("room.vote_timeout: must be a duration
// such as 3s or 500ms, got "soon""), without hiding the others.
func Decode(r io.Reader) (*Config, error) {
	c, typed, err := Parse(r)
	if err != nil {
		return nil, err
	}
	if all := Merge(typed, c.Validate()); len(all) > 0 {
		return nil, all
	}
	return c, nil
}

// ParseFile is Parse of the file at path; the config remembers its path
// (Resolve).
func ParseFile(path string) (*Config, Errors, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, fmt.Errorf("config: %w", err)
	}
	defer f.Close()
	c, typed, err := Parse(f)
	if err != nil {
		return nil, nil, fmt.Errorf("config %s: %w", path, err)
	}
	c.path = path
	return c, typed, nil
}

// ParseFS is Parse of the file name in fsys (configs embedded in a
// binary); the config remembers name.
func ParseFS(fsys fs.FS, name string) (*Config, Errors, error) {
	f, err := fsys.Open(name)
	if err != nil {
		return nil, nil, fmt.Errorf("config: %w", err)
	}
	defer f.Close()
	c, typed, err := Parse(f)
	if err != nil {
		return nil, nil, fmt.Errorf("config %s: %w", name, err)
	}
	c.path = name
	return c, typed, nil
}

// Parse reads one YAML document strictly and fills defaults, without
// validating, so that every later check can add its problems to the same
// list. A value of the wrong type or an unknown key is a problem returned
// beside the config, named by its field's path (the field keeps its
// default); a document that is not YAML, or empty, is an error with no
// config.
func Parse(r io.Reader) (*Config, Errors, error) {
	data, err := io.ReadAll(io.LimitReader(r, 1<<20+1))
	if err != nil {
		return nil, nil, err
	}
	if len(data) > 1<<20 {
		return nil, nil, errors.New("larger than 1 MiB")
	}
	var root yaml.Node
	if err := yaml.Unmarshal(data, &root); err != nil {
		return nil, nil, fmt.Errorf("not valid YAML: %w", err)
	}
	if root.Kind == 0 || len(root.Content) == 0 {
		return nil, nil, errors.New("empty file")
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	var c Config
	c.Room.Realtime = DefaultRealtime() // what the file leaves unset keeps its default
	var typed Errors
	if err := dec.Decode(&c); err != nil {
		var te *yaml.TypeError
		if !errors.As(err, &te) {
			return nil, nil, fmt.Errorf("decode: %w", err)
		}
		ix := indexFields(&root)
		for _, msg := range te.Errors {
			if path, problem, ok := ix.explain(msg); ok {
				typed = append(typed, path+": "+problem)
			} else {
				typed = append(typed, msg)
			}
		}
	}
	c.SetDefaults()
	return &c, typed, nil
}

// Merge lists a config's problems: first those of type, then every other
// one whose field has no problem of type (a field that could not be read
// is reported once, not again for the default it was left with). more
// holds an error from Validate, or problem strings.
func Merge(typed Errors, more ...any) Errors {
	bad := map[string]bool{}
	for _, p := range typed {
		field, _, _ := strings.Cut(p, ":")
		bad[field] = true
	}
	all := append(Errors(nil), typed...)
	add := func(p string) {
		if field, _, _ := strings.Cut(p, ":"); !bad[field] {
			all = append(all, p)
		}
	}
	for _, m := range more {
		switch v := m.(type) {
		case nil:
		case Errors:
			for _, p := range v {
				add(p)
			}
		case []string:
			for _, p := range v {
				add(p)
			}
		case error:
			add(v.Error())
		}
	}
	return all
}

// Path is the file the config came from, if any.
func (c *Config) Path() string { return c.path }

// Turn orders (room.turns).
const (
	TurnsOverlapped = "overlapped"
	TurnsSequential = "sequential"
)

// SetDefaults fills every unset field with its default. A default of the
// conversation runtime is its owning package's (floor, companion,
// repetition, realtime, query, topic, brain/llm): TestDefaultsAreTheOwners
// holds them equal. The body's (drivers, bridge, HTTP, log) live here,
// since runtime/ never imports the body.
func (c *Config) SetDefaults() {
	if c.Room.VoteTimeout == 0 {
		c.Room.VoteTimeout = floor.DefaultVoteTimeout
	}
	if c.Room.VoteCeiling == 0 {
		c.Room.VoteCeiling = max(floor.DefaultVoteCeiling, c.Room.VoteTimeout)
	}
	if c.Room.MaxPending == 0 {
		c.Room.MaxPending = floor.DefaultMaxPending
	}
	if c.Room.Pause == 0 {
		c.Room.Pause = companion.DefaultPause
	}
	if c.Room.Mode == "" {
		c.Room.Mode = ModeTurn
	}
	if c.Room.Turns == "" {
		c.Room.Turns = TurnsOverlapped
	}
	if c.Room.BargeIn == "" {
		c.Room.BargeIn = "sentence"
	}
	if c.Room.History == 0 {
		c.Room.History = companion.DefaultHistory
	}
	if c.Room.Repetition.Threshold == 0 {
		c.Room.Repetition.Threshold = repetition.DefaultThreshold
	}
	if c.Room.Repetition.Window == 0 {
		c.Room.Repetition.Window = repetition.DefaultWindow
	}
	if c.Room.Repetition.Judge == "" {
		c.Room.Repetition.Judge = JudgeModel
	}
	if c.Room.Repetition.JudgeEvery == 0 {
		c.Room.Repetition.JudgeEvery = companion.DefaultJudgeEvery
	}
	if c.Room.Repetition.JudgeTimeout == 0 {
		c.Room.Repetition.JudgeTimeout = companion.DefaultJudgeTimeout
	}
	if c.Room.FloorInstance == "" {
		c.Room.FloorInstance = c.Device.ID
	}
	if c.MQTT.Prefix == "" {
		c.MQTT.Prefix = topic.DefaultPrefix
	}
	if len(c.MQTT.FloorIDs) == 0 {
		c.MQTT.FloorIDs = []string{topic.DefaultFloorID}
	}
	if c.MQTT.Embedded.Enabled && c.MQTT.Embedded.Listen == "" {
		c.MQTT.Embedded.Listen = "127.0.0.1:1883"
	}
	if c.MQTT.Broker == "" && c.MQTT.Embedded.Enabled {
		c.MQTT.Broker = "tcp://" + c.MQTT.Embedded.Listen
	}
	if c.MQTT.Username == "" {
		c.MQTT.Username = c.Identity()
	}
	if c.Brain.Provider == "" {
		c.Brain.Provider = "rule"
	}
	if c.Brain.Timeout == 0 {
		c.Brain.Timeout = companion.DefaultThinkTimeout
	}
	if c.Brain.MaxUtterance == 0 {
		c.Brain.MaxUtterance = llm.DefaultMaxUtterance
	}
	d := &c.Drivers
	if d.Camera.Kind == "" {
		d.Camera.Kind = "none"
	}
	if d.Camera.Width == 0 {
		d.Camera.Width = 640
	}
	if d.Camera.Height == 0 {
		d.Camera.Height = 480
	}
	if d.Camera.FPS == 0 {
		d.Camera.FPS = 10
	}
	if d.Camera.Quality == 0 {
		d.Camera.Quality = 80
	}
	if d.Camera.Kind == "command" && d.Camera.MaxFrame == 0 {
		d.Camera.MaxFrame = DefaultMaxFrame
	}
	if d.Audio.Kind == "" {
		d.Audio.Kind = "null"
	}
	if d.TTS.Kind == "" {
		d.TTS.Kind = "auto"
	}
	if d.TTS.MaxChars == 0 {
		d.TTS.MaxChars = 2000
	}
	if c.Query.Timeout == 0 {
		c.Query.Timeout = query.DefaultTimeout
	}
	if c.Query.MaxPending == 0 {
		c.Query.MaxPending = query.DefaultMaxPending
	}
	if c.Query.MaxResult == 0 {
		c.Query.MaxResult = protocol.DefaultMaxResultBytes
	}
	if c.HTTP.WebSocket.MaxFrame == 0 {
		c.HTTP.WebSocket.MaxFrame = 64 << 10
	}
	if c.HTTP.WebSocket.MaxDeviceFrame == 0 {
		c.HTTP.WebSocket.MaxDeviceFrame = c.Query.MaxResult
	}
	if c.HTTP.Listen == "" {
		c.HTTP.Listen = "127.0.0.1:9100"
	}
	if c.Log.Level == "" {
		c.Log.Level = "info"
	}
	if c.Log.Format == "" {
		c.Log.Format = "text"
	}
}

// Identity is the name the device publishes under: its companion's id, or
// the device id on a speaker-only device.
func (c *Config) Identity() string {
	if c.Companion != nil && c.Companion.ID != "" {
		return c.Companion.ID
	}
	return c.Device.ID
}

// Errors is every problem of a config, one per field.
type Errors []string

func (e Errors) Error() string { return strings.Join(e, "\n") }

type problems struct{ list Errors }

func (p *problems) add(field, format string, args ...any) {
	p.list = append(p.list, field+": "+fmt.Sprintf(format, args...))
}

func (p *problems) identity(field, v string) {
	if why := protocol.ValidIdentity(v); why != "" {
		p.add(field, "%s (got %q)", why, v)
	}
}

// DefaultMaxFrame caps one JPEG of a command camera.
const DefaultMaxFrame = 4 << 20

// command checks the program of a command driver at field (its kind
// checks that one is given): set only for kind command, no empty program,
// no NUL (it cannot reach exec), bounded.
func (p *problems) command(field, kind string, argv []string) {
	field += ".command"
	switch {
	case len(argv) == 0:
		return
	case kind != "command":
		p.add(field, "is only for kind command, got kind %q", kind)
		return
	case len(argv) > 64:
		p.add(field, "must have at most 64 arguments, got %d", len(argv))
		return
	case strings.TrimSpace(argv[0]) == "":
		p.add(field, "the program (the first item) is empty")
	}
	for i, a := range argv {
		if strings.ContainsRune(a, 0) || len(a) > 4096 {
			p.add(fmt.Sprintf("%s[%d]", field, i), "must be at most 4096 bytes without NUL")
		}
	}
}

func oneOf(v string, allowed ...string) bool {
	for _, a := range allowed {
		if v == a {
			return true
		}
	}
	return false
}

// Validate reports every bad field at once.
func (c *Config) Validate() error {
	var p problems
	if c.Version != Version {
		p.add("version", "must be %d, got %d", Version, c.Version)
	}
	p.identity("device.id", c.Device.ID)
	if c.Device.Arch != "" && !oneOf(c.Device.Arch, Arches...) {
		p.add("device.arch", "must be one of %s, got %q", strings.Join(Arches, ", "), c.Device.Arch)
	}
	p.identity("room.name", c.Room.Name)
	r := c.Room
	if r.VoteTimeout < 10*time.Millisecond || r.VoteTimeout > time.Minute {
		p.add("room.vote_timeout", "must be from 10ms to 1m, got %v", r.VoteTimeout)
	}
	if r.VoteCeiling < r.VoteTimeout || r.VoteCeiling > 10*time.Minute {
		p.add("room.vote_ceiling", "must be from room.vote_timeout (%v) to 10m, got %v", r.VoteTimeout, r.VoteCeiling)
	}
	if r.MaxPending < 1 || r.MaxPending > 4096 {
		p.add("room.max_pending", "must be from 1 to 4096, got %d", r.MaxPending)
	}
	if r.Pause < 0 || r.Pause > time.Minute {
		p.add("room.pause", "must be from 0 to 1m, got %v", r.Pause)
	}
	if r.Turns != TurnsOverlapped && r.Turns != TurnsSequential {
		p.add("room.turns", "must be overlapped or sequential, got %q", r.Turns)
	}
	if r.BargeIn != "sentence" && r.BargeIn != "immediate" && r.BargeIn != "off" {
		p.add("room.barge_in", "must be sentence, immediate or off, got %q", r.BargeIn)
	}
	if r.History < 1 || r.History > 1000 {
		p.add("room.history", "must be from 1 to 1000, got %d", r.History)
	}
	if r.MaxTurn < 0 {
		p.add("room.max_turn", "must not be negative, got %d", r.MaxTurn)
	}
	if r.Repetition.Threshold <= 0 || r.Repetition.Threshold > 1 {
		p.add("room.repetition.threshold", "must be above 0 and at most 1, got %v", r.Repetition.Threshold)
	}
	if r.Repetition.Window < 2 || r.Repetition.Window > 100 {
		p.add("room.repetition.window", "must be from 2 to 100, got %d", r.Repetition.Window)
	}
	switch r.Repetition.Judge {
	case JudgeModel, JudgeLocal, JudgeOff:
	default:
		p.add("room.repetition.judge", "must be model, local or off, got %q", r.Repetition.Judge)
	}
	if r.Repetition.JudgeEvery < 1 || r.Repetition.JudgeEvery > 1000 {
		p.add("room.repetition.judge_every", "must be from 1 to 1000, got %d", r.Repetition.JudgeEvery)
	}
	if r.Repetition.JudgeTimeout < 0 {
		p.add("room.repetition.judge_timeout", "must not be negative, got %v", r.Repetition.JudgeTimeout)
	}
	if r.MaxPayload < 0 {
		p.add("room.max_payload", "must not be negative, got %d", r.MaxPayload)
	}
	if r.Floor {
		p.identity("room.floor_instance", r.FloorInstance)
	}
	c.validateMembers(&p)
	c.validateRealtime(&p)
	m := c.MQTT
	if !strings.HasPrefix(m.Broker, "tcp://") && !strings.HasPrefix(m.Broker, "ssl://") {
		p.add("mqtt.broker", "must be tcp://host:port or ssl://host:port, got %q", m.Broker)
	}
	p.identity("mqtt.prefix", m.Prefix)
	p.identity("mqtt.username", m.Username)
	for i, f := range m.FloorIDs {
		p.identity(fmt.Sprintf("mqtt.floor_ids[%d]", i), f)
	}
	if m.PasswordEnv != "" && m.PasswordFile != "" {
		p.add("mqtt.password_file", "set either password_env or password_file, not both")
	}
	if m.Embedded.Enabled {
		if !strings.Contains(m.Embedded.Listen, ":") {
			p.add("mqtt.embedded.listen", "must be host:port, got %q", m.Embedded.Listen)
		}
		if !m.Embedded.AllowAnonymous && m.Embedded.UsersFile == "" {
			p.add("mqtt.embedded.users_file", "required unless allow_anonymous is true")
		}
		if m.Embedded.AllowAnonymous && !Loopback(m.Embedded.Listen) {
			p.add("mqtt.embedded.allow_anonymous", "anonymous clients are allowed only on a loopback listener (a demo on one machine), got listen %q: give a users_file", m.Embedded.Listen)
		}
		if (m.Embedded.TLSCert == "") != (m.Embedded.TLSKey == "") {
			p.add("mqtt.embedded.tls_key", "tls_cert and tls_key go together")
		}
		if m.Embedded.TLSClientCA != "" && m.Embedded.TLSCert == "" {
			p.add("mqtt.embedded.tls_client_ca", "needs tls_cert and tls_key: client certificates are asked for on a TLS listener")
		}
	}
	m.TLS.validate(&p, "mqtt.tls")
	if c.Companion != nil {
		if err := c.Companion.Validate(); err != nil {
			p.list = append(p.list, "companion"+strings.TrimPrefix(err.Error(), "card"))
		}
	}
	// Kinds (brain.provider, drivers.*.kind) and their own fields are
	// checked by the registry of what a build contains (device/parts).
	b := c.Brain
	if b.Timeout < 100*time.Millisecond || b.Timeout > 5*time.Minute {
		p.add("brain.timeout", "must be from 100ms to 5m, got %v", b.Timeout)
	}
	if b.Delay < 0 || b.Delay > time.Minute {
		p.add("brain.delay", "must be from 0 to 1m, got %v", b.Delay)
	}
	if b.ClosingAfter < 0 {
		p.add("brain.closing_after", "must not be negative, got %d", b.ClosingAfter)
	}
	if c.Companion != nil && b.Timeout > r.VoteCeiling {
		p.add("brain.timeout", "%v is longer than room.vote_ceiling %v: the floor never waits that long, so a slow answer always comes after the vote is decided; lower brain.timeout or raise room.vote_ceiling", b.Timeout, r.VoteCeiling)
	}
	if b.MaxUtterance < 10 || b.MaxUtterance > c.Drivers.TTS.MaxChars {
		p.add("brain.max_utterance", "must be from 10 to drivers.tts.max_chars (%d), the most the body speaks at once, got %d", c.Drivers.TTS.MaxChars, b.MaxUtterance)
	}
	d := c.Drivers
	if d.Camera.Width < 16 || d.Camera.Width > 4096 || d.Camera.Height < 16 || d.Camera.Height > 4096 {
		p.add("drivers.camera.width", "width and height must be from 16 to 4096, got %dx%d", d.Camera.Width, d.Camera.Height)
	}
	if d.Camera.FPS < 1 || d.Camera.FPS > 120 {
		p.add("drivers.camera.fps", "must be from 1 to 120, got %d", d.Camera.FPS)
	}
	if d.Camera.Quality < 1 || d.Camera.Quality > 100 {
		p.add("drivers.camera.quality", "must be from 1 to 100, got %d", d.Camera.Quality)
	}
	if d.Camera.MaxFrame != 0 && (d.Camera.MaxFrame < 1024 || d.Camera.MaxFrame > 64<<20) {
		p.add("drivers.camera.max_frame", "must be from 1024 to 67108864 bytes, got %d", d.Camera.MaxFrame)
	}
	p.command("drivers.camera", d.Camera.Kind, d.Camera.Command)
	p.command("drivers.audio", d.Audio.Kind, d.Audio.Command)
	if d.Audio.SampleRate != 0 && (d.Audio.SampleRate < 8000 || d.Audio.SampleRate > 192000) {
		p.add("drivers.audio.sample_rate", "must be from 8000 to 192000, got %d", d.Audio.SampleRate)
	}
	if d.TTS.MaxChars < 1 || d.TTS.MaxChars > 100000 {
		p.add("drivers.tts.max_chars", "must be from 1 to 100000, got %d", d.TTS.MaxChars)
	}
	if c.Query.Timeout < 100*time.Millisecond || c.Query.Timeout > 10*time.Minute {
		p.add("query.timeout", "must be from 100ms to 10m, got %v", c.Query.Timeout)
	}
	if c.Query.MaxPending < 1 || c.Query.MaxPending > 100000 {
		p.add("query.max_pending", "must be from 1 to 100000, got %d", c.Query.MaxPending)
	}
	if c.HTTP.Listen != "off" && !strings.Contains(c.HTTP.Listen, ":") {
		p.add("http.listen", "must be host:port or off, got %q", c.HTTP.Listen)
	}
	if ws := c.HTTP.WebSocket; ws.Enabled {
		switch {
		case c.HTTP.Listen == "off":
			p.add("http.websocket.enabled", "needs http.listen")
		case !Loopback(c.HTTP.Listen) && ws.TokensFile == "" && ws.TokensEnv == "":
			p.add("http.websocket.tokens_file", "a token is required off loopback (http.listen %q): give tokens_file or tokens_env", c.HTTP.Listen)
		}
		if ws.TokensFile != "" && ws.TokensEnv != "" {
			p.add("http.websocket.tokens_env", "give tokens_file or tokens_env, not both")
		}
		if ws.Anonymous != "" {
			role, name, _ := strings.Cut(ws.Anonymous, ":")
			if !oneOf(role, "viewer", "user") || (role == "user" && protocol.ValidIdentity(name) != "") {
				p.add("http.websocket.anonymous", `must be "viewer" or "user:NAME", got %q`, ws.Anonymous)
			}
			if !Loopback(c.HTTP.Listen) {
				p.add("http.websocket.anonymous", "clients without a token are allowed only on a loopback listener, got http.listen %q", c.HTTP.Listen)
			}
			if c.speaksAsRoom(name) {
				p.add("http.websocket.anonymous", "%q is a companion or the floor of room %s: a visitor speaks as a user", name, c.Room.Name)
			}
		}
		if ws.MaxClients < 0 || ws.MaxClients > 10000 {
			p.add("http.websocket.max_clients", "must be from 0 (default 32) to 10000, got %d", ws.MaxClients)
		}
		// 0 is the default (a config built in code, as the demo's, may
		// enable the bridge after SetDefaults).
		if ws.MaxFrame != 0 && (ws.MaxFrame < 1024 || ws.MaxFrame > 1<<20) {
			p.add("http.websocket.max_frame", "must be 0 (default 65536) or from 1024 to 1048576 bytes (a viewer's or user's frame), got %d", ws.MaxFrame)
		}
		if ws.MaxDeviceFrame != 0 && (ws.MaxDeviceFrame < 1024 || ws.MaxDeviceFrame > c.Query.MaxResult) {
			p.add("http.websocket.max_device_frame", "must be 0 (default query.max_result) or from 1024 bytes to query.max_result (%d; a larger result is refused anyway), got %d", c.Query.MaxResult, ws.MaxDeviceFrame)
		}
	}
	if !oneOf(c.Log.Level, "debug", "info", "warn", "error") {
		p.add("log.level", "must be debug, info, warn or error, got %q", c.Log.Level)
	}
	if !oneOf(c.Log.Format, "text", "json") {
		p.add("log.format", "must be text or json, got %q", c.Log.Format)
	}
	if len(p.list) > 0 {
		return p.list
	}
	return nil
}

func (c *Config) validateMembers(p *problems) {
	r := c.Room
	if len(r.Members) == 0 {
		p.add("room.members", "required: the ids of the room's companions (only they vote and take the floor)")
		return
	}
	if len(r.Members) > 1024 {
		p.add("room.members", "at most 1024 companions, got %d", len(r.Members))
	}
	seen := map[string]bool{}
	for i, id := range r.Members {
		f := fmt.Sprintf("room.members[%d]", i)
		p.identity(f, id)
		if seen[id] {
			p.add(f, "%q is listed twice", id)
		}
		seen[id] = true
		for _, fid := range c.MQTT.FloorIDs {
			if id == fid {
				p.add(f, "%q is a floor identity (mqtt.floor_ids), not a companion", id)
			}
		}
	}
	if c.Companion != nil && c.Companion.ID != "" && !seen[c.Companion.ID] {
		p.add("room.members", "must include this device's companion %q", c.Companion.ID)
	}
	if c.Companion != nil {
		for _, fid := range c.MQTT.FloorIDs {
			if c.Companion.ID == fid {
				p.add("companion.id", "%q is a floor identity (mqtt.floor_ids); a companion needs a name of its own", fid)
			}
		}
	}
}

func (c *Config) validateRealtime(p *problems) {
	if c.Room.Mode != ModeTurn && c.Room.Mode != ModeRealtime {
		p.add("room.mode", "must be turn or realtime, got %q", c.Room.Mode)
	}
	rt := c.Room.Realtime
	for _, d := range []struct {
		field string
		v     time.Duration
	}{
		{"room.realtime.phase_timeout", rt.PhaseTimeout}, {"room.realtime.silence_timeout", rt.SilenceTimeout},
		{"room.realtime.rate_limit", rt.RateLimit}, {"room.realtime.poll_interval", rt.PollInterval},
		{"room.realtime.speak_cooldown", rt.SpeakCooldown},
	} {
		if d.v <= 0 {
			p.add(d.field, "must be above zero, got %v", d.v)
		}
	}
	for _, n := range []struct {
		field string
		v     int
	}{
		{"room.realtime.max_count.per_agent", rt.MaxCount.PerAgent}, {"room.realtime.max_count.per_day", rt.MaxCount.PerDay},
		{"room.realtime.max_length.per_talk", rt.MaxLength.PerTalk},
	} {
		if n.v <= 0 {
			p.add(n.field, "must be above zero, got %d", n.v)
		}
	}
	if rt.SpeakCooldown > 0 && rt.SpeakCooldown < rt.RateLimit {
		p.add("room.realtime.speak_cooldown", "must be at least room.realtime.rate_limit (%v), got %v: a companion would post faster than the floor accepts", rt.RateLimit, rt.SpeakCooldown)
	}
	if len(rt.Whisper) > 64 {
		p.add("room.realtime.whisper", "at most 64 channels, got %d", len(rt.Whisper))
	}
	members := map[string]bool{}
	for _, m := range c.Room.Members {
		members[m] = true
	}
	for ch, ms := range rt.Whisper {
		f := "room.realtime.whisper." + ch
		p.identity(f, ch)
		if len(ms) == 0 {
			p.add(f, "a whisper channel needs its members")
		}
		for i, m := range ms {
			if !members[m] {
				p.add(fmt.Sprintf("%s[%d]", f, i), "%q is not a member of the room (room.members)", m)
			}
		}
	}
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

// secret reads a secret from the variable env or the file path.
func secret(field, env, path string) (string, error) {
	switch {
	case env != "":
		v, ok := os.LookupEnv(env)
		if !ok {
			return "", fmt.Errorf("%s: environment variable %s is not set", field, env)
		}
		return v, nil
	case path != "":
		b, err := os.ReadFile(path)
		if err != nil {
			return "", fmt.Errorf("%s: %w", field, err)
		}
		return strings.TrimSpace(string(b)), nil
	}
	return "", nil
}

// Password returns the MQTT password ("" when none is configured).
func (m MQTT) Password() (string, error) {
	return secret("mqtt.password_env", m.PasswordEnv, m.PasswordFile)
}

// FloorPassword returns the password of the floor's connection ("" when
// none is configured).
func (m MQTT) FloorPassword() (string, error) {
	return secret("mqtt.floor_password_env", m.FloorPasswordEnv, "")
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

// APIKey returns the brain's API key ("" when none is configured).
func (b Brain) APIKey() (string, error) { return secret("brain.api_key_env", b.APIKeyEnv, "") }

// Users reads the embedded broker's users file: a YAML map of name to
// password.
func (e Embedded) Users() (map[string]string, error) {
	if e.UsersFile == "" {
		return nil, nil
	}
	b, err := os.ReadFile(e.UsersFile)
	if err != nil {
		return nil, fmt.Errorf("mqtt.embedded.users_file: %w", err)
	}
	var u map[string]string
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	if err := dec.Decode(&u); err != nil {
		return nil, fmt.Errorf("mqtt.embedded.users_file %s: %w", e.UsersFile, err)
	}
	return u, nil
}

// CheckBridgeTokens refuses a user token named like a companion of the
// room or its floor: through the bridge it would speak as them.
func (c *Config) CheckBridgeTokens(ts []BridgeToken) error {
	for i, t := range ts {
		if t.Role == "user" && c.speaksAsRoom(t.Name) {
			return fmt.Errorf("http.websocket tokens: entry %d: user %q is a companion or the floor of room %s", i+1, t.Name, c.Room.Name)
		}
	}
	return nil
}

// speaksAsRoom reports whether name is a companion or the floor of the
// room: a bridge client under that name would speak as them.
func (c *Config) speaksAsRoom(name string) bool {
	return slices.Contains(c.Room.Members, name) || c.Scheme().IsFloor(name)
}

// Body is the device whose speak and vision queries the companion uses:
// companion.body, or this device.
func (c *Config) Body() string {
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
