package parts

import (
	"fmt"
	"net"
	"strings"
	"time"

	"github.com/chorus-robotics/chorus/device/robot"
	"github.com/chorus-robotics/chorus/drivers/stt"
	"github.com/chorus-robotics/chorus/drivers/stt/openai"
	"github.com/chorus-robotics/chorus/drivers/stt/pocketsphinx"
	"github.com/chorus-robotics/chorus/drivers/stt/wyoming"
	"github.com/chorus-robotics/chorus/drivers/wake"
	wakewyoming "github.com/chorus-robotics/chorus/drivers/wake/wyoming"
)

// The speech-to-text engines (hearing.stt.kind): all pure Go, the offline
// one a program Debian ships.
func init() {
	STT.Add(Part[stt.Engine]{Kind: "pocketsphinx", About: "Debian's offline recogniser (pocketsphinx, pocketsphinx-en-us); exact with hearing.stt.grammar or keywords",
		Check: func(c *robot.Config, m Mode) []string {
			s := c.Hearing.Ear.STT
			out := binary("hearing.stt.binary", or(s.Binary, pocketsphinx.DefaultBinary), m)
			if s.Grammar != "" && s.Keywords != "" {
				out = append(out, "hearing.stt.keywords: give a grammar or a keyword list, not both")
			}
			for _, f := range []struct{ field, path string }{{"hearing.stt.grammar", s.Grammar}, {"hearing.stt.keywords", s.Keywords}} {
				if f.path != "" && m == Here && !fileExists(c.Resolve(f.path)) {
					out = append(out, fmt.Sprintf("%s: %s is not there", f.field, c.Resolve(f.path)))
				}
			}
			return out
		},
		Make: func(c *robot.Config, env Env) (stt.Engine, error) {
			s := c.Hearing.Ear.STT
			return &pocketsphinx.Engine{Binary: or(s.Binary, pocketsphinx.DefaultBinary), Grammar: c.Resolve(s.Grammar),
				Keywords: c.Resolve(s.Keywords), Language: or(s.Language, language(c)), Timeout: s.Timeout, Log: env.Log}, nil
		}})
	STT.Add(Part[stt.Engine]{Kind: "wyoming", About: "a Wyoming speech-to-text server (wyoming-faster-whisper, whisper.cpp): hearing.stt.url tcp://host:port",
		Check: func(c *robot.Config, _ Mode) []string {
			s := c.Hearing.Ear.STT
			var out []string
			if _, err := wyomingAddr(s.URL); err != nil {
				out = append(out, "hearing.stt.url: "+err.Error())
			}
			if a := s.AfterStop; a != 0 && (a < 100*time.Millisecond || a > s.Timeout) {
				out = append(out, fmt.Sprintf("hearing.stt.after_stop: must be 0 (derived: 5s plus the utterance's length) or from 100ms to hearing.stt.timeout (%v), got %v", s.Timeout, a))
			}
			return out
		},
		Make: func(c *robot.Config, env Env) (stt.Engine, error) {
			s := c.Hearing.Ear.STT
			addr, err := wyomingAddr(s.URL)
			if err != nil {
				return nil, err
			}
			return &wyoming.Engine{Addr: addr, Language: or(s.Language, language(c)), Model: s.Model, Timeout: s.Timeout,
				AfterStop: s.AfterStop, Log: env.Log}, nil
		}})
	STT.Add(Part[stt.Engine]{Kind: "openai", About: "an OpenAI-compatible /audio/transcriptions endpoint (OpenAI, Groq, a whisper.cpp or faster-whisper server)",
		Check: func(c *robot.Config, m Mode) []string {
			s := c.Hearing.Ear.STT
			var out []string
			if s.URL != "" && !strings.HasPrefix(s.URL, "http://") && !strings.HasPrefix(s.URL, "https://") {
				out = append(out, fmt.Sprintf("hearing.stt.url: must be an http:// or https:// base URL, got %q", s.URL))
			}
			if m == Here && s.APIKeyEnv != "" {
				if _, err := s.APIKey(); err != nil {
					out = append(out, err.Error())
				}
			}
			return out
		},
		Make: func(c *robot.Config, env Env) (stt.Engine, error) {
			s := c.Hearing.Ear.STT
			key, err := s.APIKey()
			if err != nil {
				return nil, err
			}
			return &openai.Engine{BaseURL: s.URL, APIKey: key, Model: s.Model, Language: or(s.Language, language(c)),
				Timeout: s.Timeout, Log: env.Log, OnRateLimited: env.Metrics.RateLimitedBy("openai-stt")}, nil
		}})
}

// The wake-word detectors (hearing.wake.kind).
func init() {
	Wakes.Add(Part[wake.Detector]{Kind: "none", About: "no wake word: the room listens whenever no robot speaks"})
	Wakes.Add(Part[wake.Detector]{Kind: "wyoming", About: "a Wyoming wake-word server (wyoming-openwakeword): hearing.wake.url tcp://host:port; the room listens for hearing.wake.listen_for after a wake word",
		Check: func(c *robot.Config, _ Mode) []string {
			if _, err := wyomingAddr(c.Hearing.Ear.Wake.URL); err != nil {
				return []string{"hearing.wake.url: " + err.Error()}
			}
			return nil
		},
		Make: func(c *robot.Config, env Env) (wake.Detector, error) {
			w := c.Hearing.Ear.Wake
			addr, err := wyomingAddr(w.URL)
			if err != nil {
				return nil, err
			}
			return &wakewyoming.Detector{Addr: addr, Names: w.Names, Log: env.Log}, nil
		}})
}

// wyomingAddr is the host:port of a tcp:// URL.
func wyomingAddr(u string) (string, error) {
	addr, ok := strings.CutPrefix(u, "tcp://")
	if !ok {
		return "", fmt.Errorf("must be tcp://host:port for kind wyoming, got %q", u)
	}
	if _, _, err := net.SplitHostPort(addr); err != nil {
		return "", fmt.Errorf("must be tcp://host:port for kind wyoming, got %q: %v", u, err)
	}
	return addr, nil
}
