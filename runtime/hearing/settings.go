// The hearing's settings: a config's hearing section. The room's fields
// (User, Window) are this package's to fill and check; the rest is how
// one robot hears, its ear's (device/ear) and its drivers', written here
// in the section's shape because a config, part of the runtime, never
// imports the device: device/robot fills and checks them from their
// owners' defaults.

package hearing

import (
	"time"

	"github.com/chorus-robotics/chorus/runtime/protocol"
	"github.com/chorus-robotics/chorus/runtime/settings"
)

// Settings are how this robot hears people (docs/hearing.md): a
// voice activity detector that cuts its microphone's sound into
// utterances, a speech-to-text engine, and the gate that keeps it from
// transcribing robots. On the floor's host, User and Window are the
// room's: whom a heard utterance is published as, and how long the floor
// waits for other robots' reports of it.
type Settings struct {
	Enabled bool `yaml:"enabled"`
	// User is the person's identity in the room (default "user"); not a
	// companion's.
	User   string        `yaml:"user"`
	Window time.Duration `yaml:"window"`
	// Tail is how long after any robot's speech ends the room still does
	// not listen (the room's reverberation).
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
	Kind      string        `yaml:"kind"`  // none, wyoming
	URL       string        `yaml:"url"`   // tcp://host:port
	Names     []string      `yaml:"names"` // the wake words (the server's model names: okay_nabu, hey_jarvis); checked against its info
	ListenFor time.Duration `yaml:"listen_for"`
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
	Timeout  time.Duration `yaml:"timeout"` // per utterance
	// AfterStop (wyoming) bounds the wait for the server's first answer
	// after the audio stopped: a server that stopped answering fails the
	// utterance then, not at Timeout. 0 derives it: 5 s plus the
	// utterance's length, never more than Timeout.
	AfterStop time.Duration `yaml:"after_stop"`
}

// APIKey is the engine's API key, from the environment variable the
// section names ("" when it names none).
func (s STT) APIKey() (string, error) {
	return settings.Secret("hearing.stt.api_key_env", s.APIKeyEnv, "")
}

// VAD is the voice activity detector.
type VAD struct {
	// Aggressiveness is 0 (hears most as speech) to 3 (least).
	Aggressiveness *int          `yaml:"aggressiveness"`
	PreRoll        time.Duration `yaml:"pre_roll"`      // kept before speech starts
	Hangover       time.Duration `yaml:"hangover"`      // silence that ends an utterance
	MinUtterance   time.Duration `yaml:"min_utterance"` // shorter bursts are dropped
	MaxUtterance   time.Duration `yaml:"max_utterance"` // longer speech is cut here
}

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
	if s.Window < 0 || s.Window > 2*time.Second {
		p.Add("window", "must be from 0 to 2s, got %v", s.Window)
	}
}
