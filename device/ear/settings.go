// The ear's settings: the body's half of a config's hearing section, how
// one robot hears (its gate's tail, its speech to text, its voice
// activity detector, its wake word). The room's half (enabled, user,
// window) is runtime/hearing's; device/robot composes the two into the
// one section of the file.

package ear

import (
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/chorus-robotics/chorus/drivers/stt"
	"github.com/chorus-robotics/chorus/drivers/vad"
	"github.com/chorus-robotics/chorus/runtime/endofturn"
	"github.com/chorus-robotics/chorus/runtime/protocol"
	"github.com/chorus-robotics/chorus/runtime/settings"
	"go.yaml.in/yaml/v3"
)

// The ear's defaults: how long one transcript may take after the person
// stopped, how long a wake word opens the room's ears, how long after any
// robot's voice the gate stays closed (the room's reverberation), and the
// wake word's kind unless one is named (none: the room listens whenever
// no robot speaks). The VAD's are drivers/vad's.
const (
	DefaultTimeout   = stt.DefaultTimeout
	DefaultListenFor = 8 * time.Second
	DefaultTail      = 300 * time.Millisecond
	DefaultWake      = "none"
	// DefaultVoiceKind is hearing.voice.kind unless one is named: voices
	// are not told apart.
	DefaultVoiceKind = "none"
	// The silence that ends an utterance by what its words say
	// (VAD.HangoverUnfinished, VAD.HangoverComplete).
	DefaultHangoverUnfinished = 1500 * time.Millisecond
	DefaultHangoverComplete   = 300 * time.Millisecond
	// DefaultHangoverPlainEager is the silence that ends words that
	// neither promise more nor ask a question in full, with eager end of
	// turn on (VAD.HangoverPlain): the robots already think at the eager
	// pause, so a longer wait before the Message costs no thinking time,
	// and a person who pauses mid-sentence up to about 0.9 s is not cut
	// off (BENCHMARKS.md, "False cut-offs").
	DefaultHangoverPlainEager = 900 * time.Millisecond
	// DefaultEager is the pause after which the words so far are told
	// the room (VAD.Eager): eager end of turn.
	DefaultEager = 200 * time.Millisecond
)

// Settings are how this robot hears people (docs/hearing.md): a voice
// activity detector that cuts its microphone's sound into utterances, a
// speech-to-text engine, the gate that keeps it from transcribing robots,
// and when it listens.
type Settings struct {
	// Tail is how long after any robot's speech ends the room still does
	// not listen (the room's reverberation).
	Tail time.Duration `yaml:"tail"`
	STT  STT           `yaml:"stt"`
	VAD  VAD           `yaml:"vad"`
	Wake Wake          `yaml:"wake"`
	// Voice tells people apart by their voices (docs/hearing.md, "Who is
	// speaking"): off unless a kind is named.
	Voice VoiceID `yaml:"voice"`
}

// VoiceID is hearing.voice: the speaker-embedding service and how its
// embeddings are matched against the voiceprints in the memory's folder.
type VoiceID struct {
	Kind      string `yaml:"kind"`  // none (default), localai
	URL       string `yaml:"url"`   // the service's base URL, http://localai:8080
	Model     string `yaml:"model"` // its model's name (LocalAI's config name)
	APIKeyEnv string `yaml:"api_key_env"`
	// Threshold is the cosine distance within which the nearest
	// voiceprint's person is taken; Sure the stricter one within which
	// they are answered with what the robots remember of them.
	Threshold float64 `yaml:"threshold"`
	Sure      float64 `yaml:"sure"`
	// Wait is how long after the transcript the embedding is waited for.
	Wait time.Duration `yaml:"wait"`
	// Enrol is how many utterances make a voiceprint by voice.
	Enrol int `yaml:"enrol"`
}

// On reports whether the robot identifies voices.
func (v VoiceID) On() bool { return v.Kind != "" && v.Kind != DefaultVoiceKind }

// APIKey is the service's key, from the environment variable named.
func (v VoiceID) APIKey() (string, error) {
	return settings.Secret("hearing.voice.api_key_env", v.APIKeyEnv, "")
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

// VAD is the voice activity detector: how the microphone's sound is cut
// into utterances (drivers/vad's Segmenter).
type VAD struct {
	// Aggressiveness is 0 (hears most as speech) to 3 (least).
	Aggressiveness *int          `yaml:"aggressiveness"`
	PreRoll        time.Duration `yaml:"pre_roll"` // kept before speech starts
	Hangover       time.Duration `yaml:"hangover"` // silence that ends an utterance (vad.DefaultHangover)
	// HangoverUnfinished and HangoverComplete are the silence that ends
	// an utterance whose words so far promise more ("and", "um",
	// 「えっと」) or ask a question in full (runtime/endofturn), when the
	// speech to text gives hypotheses while the person speaks; they are
	// held from the hangover's bounds, complete ≤ hangover ≤ unfinished.
	// Equal to hangover, the words change nothing.
	HangoverUnfinished time.Duration `yaml:"hangover_unfinished"`
	HangoverComplete   time.Duration `yaml:"hangover_complete"`
	// HangoverPlain is the silence that ends an utterance whose words so
	// far say neither (from hangover to hangover_unfinished): by default
	// DefaultHangoverPlainEager with eager end of turn on, else hangover.
	HangoverPlain time.Duration `yaml:"hangover_plain"`
	// Eager is the pause after which the ear tells the room the words so
	// far, for its companions to think on while the rest of the hangover
	// passes (eager end of turn, docs/hearing.md): a duration below the
	// pauses that end an utterance (0 or unset: the default), or "off" —
	// then this robot's companion does not think on other robots' words
	// so far either.
	Eager        Eager         `yaml:"eager"`
	MinUtterance time.Duration `yaml:"min_utterance"` // shorter bursts are dropped
	MaxUtterance time.Duration `yaml:"max_utterance"` // longer speech is cut here
}

// Eager is hearing.vad.eager: a pause, or off.
type Eager struct {
	After time.Duration // 0: the default
	Off   bool
}

// UnmarshalYAML reads a duration ("200ms") or "off".
func (e *Eager) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind == yaml.ScalarNode && (n.Value == "off" || n.Value == "false") {
		*e = Eager{Off: true}
		return nil
	}
	var d time.Duration
	if err := n.Decode(&d); err != nil {
		return fmt.Errorf("hearing.vad.eager: want a pause (200ms) or off, got %q", n.Value)
	}
	*e = Eager{After: d}
	return nil
}

// MarshalYAML writes what UnmarshalYAML reads.
func (e Eager) MarshalYAML() (any, error) {
	if e.Off {
		return "off", nil
	}
	return e.After.String(), nil
}

// Pause is the pause after which the words so far are told: 0 when off.
func (e Eager) Pause() time.Duration {
	if e.Off {
		return 0
	}
	return e.After
}

// EndOfTurn is the pauses that end an utterance by what its words say
// (the settings' defaults filled).
func (v VAD) EndOfTurn() endofturn.Waits {
	return endofturn.Waits{Plain: v.HangoverPlain, Unfinished: v.HangoverUnfinished, Complete: v.HangoverComplete}
}

// Segmenter is the segmenter these settings make for a microphone of
// sampleRate (the settings' defaults filled).
func (v VAD) Segmenter(sampleRate int) *vad.Segmenter {
	return &vad.Segmenter{Detector: vad.NewEnergy(sampleRate, vad.Mode(*v.Aggressiveness)),
		PreRoll: v.PreRoll, Hangover: v.Hangover, MinLength: v.MinUtterance, MaxLength: v.MaxUtterance}
}

// SetDefaults fills every unset field from its owner's default: the
// ear's, the detector's (drivers/vad).
func (s *Settings) SetDefaults() {
	if s.Tail == 0 {
		s.Tail = DefaultTail
	}
	if s.Wake.Kind == "" {
		s.Wake.Kind = DefaultWake
	}
	if s.Wake.ListenFor == 0 {
		s.Wake.ListenFor = DefaultListenFor
	}
	if s.STT.Timeout == 0 {
		s.STT.Timeout = DefaultTimeout
	}
	if s.Voice.Kind == "" {
		s.Voice.Kind = DefaultVoiceKind
	}
	if s.Voice.Threshold == 0 {
		s.Voice.Threshold = DefaultVoiceThreshold
	}
	if s.Voice.Sure == 0 {
		s.Voice.Sure = min(DefaultVoiceSure, s.Voice.Threshold)
	}
	if s.Voice.Wait == 0 {
		s.Voice.Wait = DefaultVoiceWait
	}
	if s.Voice.Enrol == 0 {
		s.Voice.Enrol = DefaultEnrolUtterances
	}
	v := &s.VAD
	if v.Aggressiveness == nil {
		a := int(vad.Aggressive)
		v.Aggressiveness = &a
	}
	for _, d := range []struct {
		v   *time.Duration
		def time.Duration
	}{
		{&v.PreRoll, vad.DefaultPreRoll}, {&v.Hangover, vad.DefaultHangover},
		{&v.MinUtterance, vad.DefaultMinLength}, {&v.MaxUtterance, vad.DefaultMaxLength},
	} {
		if *d.v == 0 {
			*d.v = d.def
		}
	}
	// The words' pauses hold the hangover between them, set or default.
	if v.HangoverUnfinished == 0 {
		v.HangoverUnfinished = max(DefaultHangoverUnfinished, v.Hangover)
	}
	if v.HangoverComplete == 0 {
		v.HangoverComplete = min(DefaultHangoverComplete, v.Hangover)
	}
	if v.Eager.After == 0 && !v.Eager.Off {
		v.Eager.After = min(DefaultEager, v.HangoverComplete-vad.MinHangover/2)
	}
	if v.HangoverPlain == 0 {
		v.HangoverPlain = v.Hangover
		if !v.Eager.Off {
			v.HangoverPlain = min(max(DefaultHangoverPlainEager, v.Hangover), v.HangoverUnfinished)
		}
	}
}

// Check reports the fields that are bad to p (the hearing section's
// view). The speech-to-text and wake-word kinds and their own fields are
// the parts registry's (device/parts).
func (s Settings) Check(p *settings.Problems) {
	if s.Tail < 0 || s.Tail > 5*time.Second {
		p.Add("tail", "must be from 0 to 5s, got %v", s.Tail)
	}
	if s.STT.Timeout < 100*time.Millisecond || s.STT.Timeout > 2*time.Minute {
		p.Add("stt.timeout", "must be from 100ms to 2m, got %v", s.STT.Timeout)
	}
	v := s.VAD
	if a := v.Aggressiveness; a != nil && (*a < int(vad.Quality) || *a > int(vad.VeryAggressive)) {
		p.Add("vad.aggressiveness", "must be from 0 to 3, got %d", *a)
	}
	if v.PreRoll < 0 || v.PreRoll > 2*time.Second {
		p.Add("vad.pre_roll", "must be from 0 to 2s, got %v", v.PreRoll)
	}
	if v.Hangover < vad.MinHangover || v.Hangover > vad.MaxHangover {
		p.Add("vad.hangover", "must be from %v to %v, got %v", vad.MinHangover, vad.MaxHangover, v.Hangover)
	} else {
		v.checkWords(p)
	}

	if v.MinUtterance < 0 || v.MinUtterance > 10*time.Second {
		p.Add("vad.min_utterance", "must be from 0 to 10s, got %v", v.MinUtterance)
	}
	if v.MaxUtterance < time.Second || v.MaxUtterance > 5*time.Minute || v.MaxUtterance <= v.MinUtterance {
		p.Add("vad.max_utterance", "must be from 1s to 5m and above min_utterance (%v), got %v", v.MinUtterance, v.MaxUtterance)
	}
	if s.Wake.ListenFor < time.Second || s.Wake.ListenFor > 5*time.Minute {
		p.Add("wake.listen_for", "must be from 1s to 5m, got %v", s.Wake.ListenFor)
	}
	s.Voice.check(p)
	for i, n := range s.Wake.Names {
		if n == "" || len(n) > 64 || strings.ContainsAny(n, "\x00\n") {
			p.Add(fmt.Sprintf("wake.names[%d]", i), "must be a wake word's name of 1 to 64 bytes, got %q", n)
		}
	}
}

func (v VoiceID) check(p *settings.Problems) {
	switch v.Kind {
	case DefaultVoiceKind:
		return
	case "localai":
	default:
		p.Add("voice.kind", "must be none or localai, got %q", v.Kind)
		return
	}
	if u, err := url.Parse(v.URL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		p.Add("voice.url", "must be the service's http(s) base URL (http://localai:8080), got %q", v.URL)
	}
	if v.Model == "" || len(v.Model) > 200 {
		p.Add("voice.model", "name the service's speaker-embedding model (1 to 200 bytes)")
	}
	if !(v.Threshold > 0 && v.Threshold <= 1) { // NaN too
		p.Add("voice.threshold", "must be a cosine distance above 0 and at most 1, got %v", v.Threshold)
	}
	if !(v.Sure > 0 && v.Sure <= v.Threshold) {
		p.Add("voice.sure", "must be above 0 and at most voice.threshold (%v), got %v", v.Threshold, v.Sure)
	}
	if v.Wait < 10*time.Millisecond || v.Wait > 2*time.Second {
		p.Add("voice.wait", "must be from 10ms to 2s, got %v", v.Wait)
	}
	if v.Enrol < 1 || v.Enrol > protocol.MaxEnrolNeed {
		p.Add("voice.enrol", "must be from 1 to %d utterances, got %d", protocol.MaxEnrolNeed, v.Enrol)
	}
}

// checkWords checks the words' pauses against a hangover within its
// bounds (one that is not is the one problem named).
func (v VAD) checkWords(p *settings.Problems) {
	if v.HangoverUnfinished < v.Hangover || v.HangoverUnfinished > vad.MaxHangover {
		p.Add("vad.hangover_unfinished", "must be from vad.hangover (%v) to %v, got %v", v.Hangover, vad.MaxHangover, v.HangoverUnfinished)
	} else if v.HangoverPlain < v.Hangover || v.HangoverPlain > v.HangoverUnfinished {
		p.Add("vad.hangover_plain", "must be from vad.hangover (%v) to vad.hangover_unfinished (%v), got %v", v.Hangover, v.HangoverUnfinished, v.HangoverPlain)
	}
	if v.HangoverComplete < vad.MinHangover || v.HangoverComplete > v.Hangover {
		p.Add("vad.hangover_complete", "must be from %v to vad.hangover (%v), got %v", vad.MinHangover, v.Hangover, v.HangoverComplete)
	} else if e := v.Eager; !e.Off && (e.After < vad.MinHangover/2 || e.After >= v.HangoverComplete) {
		p.Add("vad.eager", "must be from %v to below vad.hangover_complete (%v), or off, got %v", vad.MinHangover/2, v.HangoverComplete, e.After)
	}
}
