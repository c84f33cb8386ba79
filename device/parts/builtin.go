package parts

import (
	"fmt"
	"os"
	"os/exec"
	"strings"

	"github.com/chorus-robotics/chorus/device/robot"
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
)

// need reports field as required when it is empty.
func need(field, value, why string) []string {
	if strings.TrimSpace(value) == "" {
		return []string{field + ": " + why}
	}
	return nil
}

// binary checks, on this machine, that bin (a name on PATH or a path)
// runs.
func binary(field, bin string, m Mode) []string {
	if m != Here || bin == "" {
		return nil
	}
	if _, err := exec.LookPath(bin); err != nil {
		return []string{fmt.Sprintf("%s: %q is not there or not executable: %v", field, bin, err)}
	}
	return nil
}

func init() {
	openAI := func(server, port string) string {
		return fmt.Sprintf("%s serves the OpenAI-compatible API: write provider: openai and base_url: http://HOST:%s/v1", server, port)
	}
	Brains.Hints = map[string]string{
		"ollama":    openAI("Ollama", "11434"),
		"llama.cpp": openAI("llama.cpp's server", "8080"),
		"llamacpp":  openAI("llama.cpp's server", "8080"),
		"vllm":      openAI("vLLM", "8000"),
		"localai":   openAI("LocalAI", "8080"),
		"lmstudio":  openAI("LM Studio", "1234"),
		"claude":    "Claude is Anthropic's: write provider: anthropic",
	}
	TTS.Hints = map[string]string{}
	for alias, kind := range robot.TTSAliases { // accepted as they are; a misspelling of one is hinted
		TTS.Hints[alias] = "(" + alias + " is " + kind + ")"
	}
	Cameras.Add(Part[camera.Source]{Kind: "none", About: "no camera: no vision queries"})
	Cameras.Add(Part[camera.Source]{Kind: "testpattern", About: "a generated test image (no hardware)",
		Make: func(c *robot.Config, _ Env) (camera.Source, error) {
			d := c.Drivers.Camera
			return &testpattern.Source{Width: d.Width, Height: d.Height, Quality: d.Quality}, nil
		}})
	Cameras.Add(Part[camera.Source]{Kind: "image", About: "a still image or a folder of frames (drivers.camera.path)",
		Check: func(c *robot.Config, _ Mode) []string {
			return need("drivers.camera.path", c.Drivers.Camera.Path, "required for kind image")
		},
		Make: func(c *robot.Config, _ Env) (camera.Source, error) {
			d := c.Drivers.Camera
			return &cimage.Source{Path: c.Resolve(d.Path), Width: d.Width, Height: d.Height, Quality: d.Quality}, nil
		}})

	Audio.Add(Part[audio.Output]{Kind: "null", About: "plays nothing, reports how long it would have played (in real time with paced: true)",
		Make: func(c *robot.Config, _ Env) (audio.Output, error) {
			return &null.Output{Paced: c.Drivers.Audio.Paced}, nil
		}})
	Audio.Add(Part[audio.Output]{Kind: "wav", About: "writes each utterance to a WAV file in drivers.audio.dir",
		Check: func(c *robot.Config, _ Mode) []string {
			return need("drivers.audio.dir", c.Drivers.Audio.Dir, "required for kind wav")
		},
		Make: func(c *robot.Config, _ Env) (audio.Output, error) {
			o, err := wav.New(c.Resolve(c.Drivers.Audio.Dir))
			if err == nil {
				o.Paced = c.Drivers.Audio.Paced
			}
			return o, err
		}})

	TTS.Add(Part[tts.Engine]{Kind: "auto", About: "Open JTalk for Japanese when installed, else espeak-ng, else tone",
		Make: func(c *robot.Config, env Env) (tts.Engine, error) {
			lang := language(c)
			switch {
			case lang == "ja" && tts.Available("open_jtalk") && fileExists(openjtalk.DefaultVoice):
				return openJTalk(c), nil
			case tts.Available("espeak-ng"):
				return espeakNG(c), nil
			}
			if env.Log != nil {
				env.Log.Warn("tts: espeak-ng is not installed; speaking with the tone generator (beeps, no words)")
			}
			return tone.Engine{}, nil
		}})
	TTS.Add(Part[tts.Engine]{Kind: "espeak-ng", About: "espeak-ng, many languages",
		Check: func(c *robot.Config, m Mode) []string {
			return binary("drivers.tts.binary", or(c.Drivers.TTS.Binary, "espeak-ng"), m)
		},
		Make: func(c *robot.Config, _ Env) (tts.Engine, error) { return espeakNG(c), nil }})
	TTS.Add(Part[tts.Engine]{Kind: "open_jtalk", About: "Open JTalk, Japanese (Debian open-jtalk and an HTS voice)",
		Check: func(c *robot.Config, m Mode) []string {
			return binary("drivers.tts.binary", or(c.Drivers.TTS.Binary, "open_jtalk"), m)
		},
		Make: func(c *robot.Config, _ Env) (tts.Engine, error) { return openJTalk(c), nil }})
	TTS.Add(Part[tts.Engine]{Kind: "voicevox", About: "a VOICEVOX engine over HTTP (drivers.tts.url)",
		Check: func(c *robot.Config, _ Mode) []string {
			if !strings.HasPrefix(c.Drivers.TTS.URL, "http://") && !strings.HasPrefix(c.Drivers.TTS.URL, "https://") {
				return []string{"drivers.tts.url: required for kind voicevox: the engine's http:// URL"}
			}
			return nil
		},
		Make: func(c *robot.Config, _ Env) (tts.Engine, error) {
			t := c.Drivers.TTS
			return &voicevox.Engine{URL: t.URL, Speaker: t.Speaker, Speed: float64(t.Speed) / 100}, nil
		}})
	TTS.Add(Part[tts.Engine]{Kind: "piper", About: "a piper binary and voice model the user installed (drivers.tts.binary, model)",
		Check: func(c *robot.Config, m Mode) []string {
			t := c.Drivers.TTS
			out := append(need("drivers.tts.binary", t.Binary, "required for kind piper: the path of the piper binary"),
				need("drivers.tts.model", t.Model, "required for kind piper: the voice model (.onnx)")...)
			if len(out) == 0 && m == Here {
				out = append(out, binary("drivers.tts.binary", c.Resolve(t.Binary), m)...)
				if !fileExists(c.Resolve(t.Model)) {
					out = append(out, fmt.Sprintf("drivers.tts.model: %q is not there", c.Resolve(t.Model)))
				}
			}
			return out
		},
		Make: func(c *robot.Config, _ Env) (tts.Engine, error) {
			t := c.Drivers.TTS
			return &piper.Engine{Binary: c.Resolve(t.Binary), Model: c.Resolve(t.Model), Speed: float64(t.Speed) / 100}, nil
		}})
	TTS.Add(Part[tts.Engine]{Kind: "tone", About: "beeps as long as the words (no TTS installed, tests)",
		Make: func(*robot.Config, Env) (tts.Engine, error) { return tone.Engine{}, nil }})
	TTS.Add(Part[tts.Engine]{Kind: "none", About: "the same as tone",
		Make: func(*robot.Config, Env) (tts.Engine, error) { return tone.Engine{}, nil }})

	Brains.Add(Part[brain.Brain]{Kind: "rule", About: "offline rule brain, no model (demo, tests)",
		Make: func(c *robot.Config, env Env) (brain.Brain, error) {
			r := rule.New(c.Brain.ClosingAfter, env.Log)
			r.Delay = c.Brain.Delay
			return r, nil
		}})
	Brains.Add(Part[brain.Brain]{Kind: "openai", About: "an OpenAI-compatible chat completions server: OpenAI, llama.cpp, Ollama, vLLM",
		Check: modelChecks,
		Make: func(c *robot.Config, env Env) (brain.Brain, error) {
			b := c.Brain
			key, err := b.APIKey()
			if err != nil {
				return nil, err
			}
			chat := openai.New(openai.Config{BaseURL: b.BaseURL, APIKey: key, Model: b.Model, JSONMode: b.JSONMode,
				MaxTokens: b.MaxTokens, Log: env.Log, Metrics: env.Metrics})
			return modelBrain(c, env, chat), nil
		}})
	Brains.Add(Part[brain.Brain]{Kind: "anthropic", About: "Anthropic's Messages API",
		Check: func(c *robot.Config, m Mode) []string {
			return append(modelChecks(c, m), need("brain.api_key_env", c.Brain.APIKeyEnv,
				"required for provider anthropic (the name of the variable that holds the key)")...)
		},
		Make: func(c *robot.Config, env Env) (brain.Brain, error) {
			b := c.Brain
			key, err := b.APIKey()
			if err != nil {
				return nil, err
			}
			chat := anthropic.New(anthropic.Config{BaseURL: b.BaseURL, APIKey: key, Model: b.Model, MaxTokens: b.MaxTokens,
				Log: env.Log, Metrics: env.Metrics})
			return modelBrain(c, env, chat), nil
		}})
}

// modelChecks are the fields every language-model brain needs.
func modelChecks(c *robot.Config, m Mode) []string {
	b := c.Brain
	out := need("brain.model", b.Model, "required for provider "+b.Provider) // brain.base_url: the section's own check
	if m == Here && b.APIKeyEnv != "" {
		if _, err := b.APIKey(); err != nil {
			out = append(out, err.Error())
		}
	}
	return out
}

func modelBrain(c *robot.Config, env Env, chat llm.Chatter) brain.Brain {
	b := c.Brain
	if env.Log != nil {
		env.Log.Info("brain: language model", "provider", b.Provider, "model", b.Model, "base_url", b.BaseURL, "draft", b.UseDraft())
	}
	return &llm.Brain{Chat: chat, Look: env.Look, Draft: b.UseDraft(), Whole: !b.UseStream(), Log: env.Log, MaxUtterance: b.MaxUtterance, Metrics: env.Metrics, ToolBudget: c.Tools.PerTurn}
}

func language(c *robot.Config) string {
	if c.Companion != nil {
		return c.Companion.Language
	}
	return "en"
}

func espeakNG(c *robot.Config) tts.Engine {
	t := c.Drivers.TTS
	return &espeak.Engine{Binary: t.Binary, Voice: or(t.Voice, language(c)), Speed: t.Speed, Pitch: t.Pitch}
}

func openJTalk(c *robot.Config) tts.Engine {
	t := c.Drivers.TTS
	return &openjtalk.Engine{Binary: t.Binary, Dict: t.Dict, Voice: t.Voice, Speed: float64(t.Speed) / 100, Pitch: float64(t.Pitch)}
}

func or(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}
