package daemon

import (
	"fmt"
	"log/slog"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/chorus-robotics/chorus/drivers/audio"
	"github.com/chorus-robotics/chorus/drivers/audio/null"
	"github.com/chorus-robotics/chorus/drivers/audio/wav"
	"github.com/chorus-robotics/chorus/drivers/camera"
	cimage "github.com/chorus-robotics/chorus/drivers/camera/image"
	"github.com/chorus-robotics/chorus/drivers/camera/testpattern"
	"github.com/chorus-robotics/chorus/drivers/tts"
	"github.com/chorus-robotics/chorus/drivers/tts/espeak"
	"github.com/chorus-robotics/chorus/drivers/tts/openjtalk"
	"github.com/chorus-robotics/chorus/drivers/tts/piper"
	"github.com/chorus-robotics/chorus/drivers/tts/tone"
	"github.com/chorus-robotics/chorus/drivers/tts/voicevox"
	"github.com/chorus-robotics/chorus/runtime/brain"
	"github.com/chorus-robotics/chorus/runtime/brain/anthropic"
	"github.com/chorus-robotics/chorus/runtime/brain/llm"
	"github.com/chorus-robotics/chorus/runtime/brain/openai"
	"github.com/chorus-robotics/chorus/runtime/brain/rule"
	"github.com/chorus-robotics/chorus/runtime/config"
)

// audioOutputs builds an audio output per config kind. Build-tagged files
// add their drivers in init (portaudio).
var audioOutputs = map[string]func(c *config.Config) (audio.Output, error){
	"null": func(*config.Config) (audio.Output, error) { return &null.Output{}, nil },
	"wav":  func(c *config.Config) (audio.Output, error) { return wav.New(c.Resolve(c.Drivers.Audio.Dir)) },
}

// cameraSources builds a camera source per config kind; gocv adds itself
// in a build-tagged file.
var cameraSources = map[string]func(c *config.Config) camera.Source{
	"testpattern": func(c *config.Config) camera.Source {
		d := c.Drivers.Camera
		return &testpattern.Source{Width: d.Width, Height: d.Height, Quality: d.Quality}
	},
	"image": func(c *config.Config) camera.Source {
		d := c.Drivers.Camera
		return &cimage.Source{Path: c.Resolve(d.Path), Width: d.Width, Height: d.Height, Quality: d.Quality}
	},
}

func openCamera(c *config.Config) (camera.Source, error) {
	mk, ok := cameraSources[c.Drivers.Camera.Kind]
	if !ok {
		return nil, fmt.Errorf("drivers.camera.kind: %q is not built into this binary (have %s; build with -tags gocv)", c.Drivers.Camera.Kind, kinds(cameraSources))
	}
	return mk(c), nil
}

func kinds[V any](m map[string]V) string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return strings.Join(ks, ", ")
}

func openAudio(c *config.Config) (audio.Output, error) {
	mk, ok := audioOutputs[c.Drivers.Audio.Kind]
	if !ok {
		return nil, fmt.Errorf("drivers.audio.kind: %q is not built into this binary (have %s; build with -tags portaudio)", c.Drivers.Audio.Kind, kinds(audioOutputs))
	}
	out, err := mk(c)
	if err != nil {
		return nil, fmt.Errorf("drivers.audio: %w", err)
	}
	return out, nil
}

func lookupEnv(k string) (string, bool) { return os.LookupEnv(k) }

// chooseTTS builds the configured engine; "auto" picks Open JTalk for a
// Japanese companion when it is installed, else espeak-ng, else the tone
// generator (and says so).
func chooseTTS(c *config.Config, log *slog.Logger) (tts.Engine, error) {
	t := c.Drivers.TTS
	lang := "en"
	if c.Companion != nil {
		lang = c.Companion.Language
	}
	kind := t.Kind
	if kind == "auto" {
		switch {
		case lang == "ja" && tts.Available("open_jtalk") && fileExists(openjtalk.DefaultVoice):
			kind = "open_jtalk"
		case tts.Available("espeak-ng"):
			kind = "espeak-ng"
		default:
			kind = "tone"
			log.Warn("tts: espeak-ng is not installed; speaking with the tone generator (beeps, no words)")
		}
	}
	switch kind {
	case "espeak-ng":
		voice := t.Voice
		if voice == "" {
			voice = lang
		}
		return &espeak.Engine{Binary: t.Binary, Voice: voice, Speed: t.Speed, Pitch: t.Pitch}, nil
	case "open_jtalk":
		return &openjtalk.Engine{Binary: t.Binary, Dict: t.Dict, Voice: t.Voice, Speed: float64(t.Speed) / 100, Pitch: float64(t.Pitch)}, nil
	case "voicevox":
		return &voicevox.Engine{URL: t.URL, Speaker: t.Speaker, Speed: float64(t.Speed) / 100}, nil
	case "piper":
		return &piper.Engine{Binary: c.Resolve(t.Binary), Model: c.Resolve(t.Model), Speed: float64(t.Speed) / 100}, nil
	case "tone", "none":
		return tone.Engine{}, nil
	}
	return nil, fmt.Errorf("drivers.tts.kind: %q is not available yet in this build", kind)
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

// brain builds the configured brain. look takes a picture through the
// device's own vision query (nil when the device has no camera).
func (d *Daemon) brain(look llm.Looker) (brain.Brain, error) {
	if d.opts.Brain != nil {
		return d.opts.Brain, nil
	}
	b := d.cfg.Brain
	if b.Provider == "rule" {
		r := rule.New(b.ClosingAfter, d.log)
		r.Delay = b.Delay
		return r, nil
	}
	key, err := b.APIKey()
	if err != nil {
		return nil, err
	}
	var chat llm.Chatter
	switch b.Provider {
	case "openai":
		chat = openai.New(openai.Config{BaseURL: b.BaseURL, APIKey: key, Model: b.Model, JSONMode: b.JSONMode, MaxTokens: b.MaxTokens,
			Log: d.log, Metrics: d.m})
	case "anthropic":
		chat = anthropic.New(anthropic.Config{BaseURL: b.BaseURL, APIKey: key, Model: b.Model, MaxTokens: b.MaxTokens, Log: d.log, Metrics: d.m})
	default:
		return nil, fmt.Errorf("brain.provider: unknown provider %q", b.Provider)
	}
	d.log.Info("brain: language model", "provider", b.Provider, "model", b.Model, "base_url", b.BaseURL, "draft", b.UseDraft())
	return &llm.Brain{Chat: chat, Look: look, Draft: b.UseDraft(), Log: d.log, MaxUtterance: b.MaxUtterance, Metrics: d.m}, nil
}

// expectedThink is the think time a companion announces before it has
// measured its brain: the rule brain's delay, a model's timeout (the
// measured latency replaces it after a few calls).
func expectedThink(b config.Brain) time.Duration {
	if b.Provider == "rule" {
		return b.Delay + 100*time.Millisecond
	}
	return b.Timeout
}
