// The drivers: the body's hardware adapters. Each kind's own fields are
// the parts registry's (device/parts); the fields every kind shares are
// checked here.

package robot

import (
	"fmt"
	"strings"

	"github.com/chorus-robotics/chorus/drivers/camera/command"
	"github.com/chorus-robotics/chorus/runtime/settings"
)

// The drivers', the bridge's and the log's defaults.
const (
	DefaultCamera        = "none"
	DefaultCameraWidth   = 640
	DefaultCameraHeight  = 480
	DefaultCameraFPS     = 10
	DefaultCameraQuality = 80
	DefaultAudio         = "null"
	DefaultTTS           = "auto"
	DefaultTTSMaxChars   = 2000
	DefaultMic           = "none"
	DefaultMicRate       = 16000 // what speech-to-text engines take
	DefaultHTTPListen    = "127.0.0.1:9100"
	DefaultLogLevel      = "info"
	DefaultLogFormat     = "text"
)

// Drivers are the body's hardware adapters.
type Drivers struct {
	Camera Camera `yaml:"camera"`
	Audio  Audio  `yaml:"audio"`
	TTS    TTS    `yaml:"tts"`
	Mic    Mic    `yaml:"mic"`
	GPIO   GPIO   `yaml:"gpio"`
}

// Mic is the microphone driver (docs/hearing.md).
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

// TTSAliases are names people and docs give TTS engines, each read as
// the engine's kind: "espeak" is espeak-ng.
var TTSAliases = map[string]string{
	"espeak":     "espeak-ng",
	"espeakng":   "espeak-ng",
	"open-jtalk": "open_jtalk",
	"openjtalk":  "open_jtalk",
	"jtalk":      "open_jtalk",
}

func (c *Config) driversDefaults() {
	d := &c.Drivers
	def(&d.Camera.Kind, DefaultCamera)
	defInt(&d.Camera.Width, DefaultCameraWidth)
	defInt(&d.Camera.Height, DefaultCameraHeight)
	defInt(&d.Camera.FPS, DefaultCameraFPS)
	defInt(&d.Camera.Quality, DefaultCameraQuality)
	if d.Camera.Kind == "command" {
		defInt(&d.Camera.MaxFrame, command.DefaultMaxFrame)
	}
	def(&d.Audio.Kind, DefaultAudio)
	def(&d.TTS.Kind, DefaultTTS)
	if kind, ok := TTSAliases[d.TTS.Kind]; ok {
		d.TTS.Kind = kind
	}
	defInt(&d.TTS.MaxChars, DefaultTTSMaxChars)
	def(&d.Mic.Kind, DefaultMic)
	defInt(&d.Mic.SampleRate, DefaultMicRate)
}

// validateDrivers checks the drivers section's fields that every kind
// shares; each kind's own are the parts registry's.
func (c *Config) validateDrivers(p *settings.Problems) {
	d := c.Drivers
	if d.Camera.Width < 16 || d.Camera.Width > 4096 || d.Camera.Height < 16 || d.Camera.Height > 4096 {
		p.Add("camera.width", "width and height must be from 16 to 4096, got %dx%d", d.Camera.Width, d.Camera.Height)
	}
	if d.Camera.FPS < 1 || d.Camera.FPS > 120 {
		p.Add("camera.fps", "must be from 1 to 120, got %d", d.Camera.FPS)
	}
	if d.Camera.Quality < 1 || d.Camera.Quality > 100 {
		p.Add("camera.quality", "must be from 1 to 100, got %d", d.Camera.Quality)
	}
	if d.Camera.MaxFrame != 0 && (d.Camera.MaxFrame < 1024 || d.Camera.MaxFrame > 64<<20) {
		p.Add("camera.max_frame", "must be from 1024 to 67108864 bytes, got %d", d.Camera.MaxFrame)
	}
	CheckCommand(p, "camera.command", d.Camera.Kind, d.Camera.Command)
	CheckCommand(p, "audio.command", d.Audio.Kind, d.Audio.Command)
	if d.Audio.SampleRate != 0 && (d.Audio.SampleRate < 8000 || d.Audio.SampleRate > 192000) {
		p.Add("audio.sample_rate", "must be from 8000 to 192000, got %d", d.Audio.SampleRate)
	}
	CheckCommand(p, "mic.command", d.Mic.Kind, d.Mic.Command)
	if d.Mic.SampleRate < 8000 || d.Mic.SampleRate > 48000 {
		p.Add("mic.sample_rate", "must be from 8000 to 48000, got %d", d.Mic.SampleRate)
	}
	if d.TTS.MaxChars < 1 || d.TTS.MaxChars > 100000 {
		p.Add("tts.max_chars", "must be from 1 to 100000, got %d", d.TTS.MaxChars)
	}
}

// CheckCommand checks the program of a command driver or action, the
// list at field (its kind checks that one is given): set only for kind
// command, no empty program, no NUL (it cannot reach exec), bounded.
func CheckCommand(p *settings.Problems, field, kind string, argv []string) {
	switch {
	case len(argv) == 0:
		return
	case kind != "command":
		p.Add(field, "is only for kind command, got kind %q", kind)
		return
	case len(argv) > 64:
		p.Add(field, "must have at most 64 arguments, got %d", len(argv))
		return
	case strings.TrimSpace(argv[0]) == "":
		p.Add(field, "the program (the first item) is empty")
	}
	for i, a := range argv {
		if strings.ContainsRune(a, 0) || len(a) > 4096 {
			p.Add(fmt.Sprintf("%s[%d]", field, i), "must be at most 4096 bytes without NUL")
		}
	}
}
