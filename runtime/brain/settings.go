// The brain's settings: a config's brain section.

package brain

import (
	"strings"
	"time"

	"github.com/chorus-robotics/chorus/runtime/settings"
)

// Settings choose and configure the companion's mind. Which providers a
// build has, and each one's own fields, are the parts registry's to check
// (device/parts).
type Settings struct {
	Provider     string        `yaml:"provider"` // rule, openai, anthropic
	Draft        *bool         `yaml:"draft"`    // default true: speak the draft, one model call per turn
	Stream       *bool         `yaml:"stream"`   // default true: stream the model's answers (issue 28)
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

// The brain's defaults.
const (
	DefaultProvider     = "rule"
	DefaultThinkTimeout = 20 * time.Second // brain.timeout: one think
	// DefaultMaxUtterance bounds an utterance (brain.max_utterance): a
	// few spoken sentences.
	DefaultMaxUtterance = 300
)

// UseDraft reports whether a granted turn speaks the draft.
func (s Settings) UseDraft() bool { return s.Draft == nil || *s.Draft }

// UseStream reports whether the model's answers are streamed: the vote
// leaves when its fields are written and speech starts on the first
// sentence. false asks for whole answers (the slower path, kept to
// measure against and for a server that streams badly).
func (s Settings) UseStream() bool { return s.Stream == nil || *s.Stream }

// APIKey is the model API's key, from the environment variable the
// section names ("" when it names none).
func (s Settings) APIKey() (string, error) {
	return settings.Secret("brain.api_key_env", s.APIKeyEnv, "")
}

// SetDefaults fills every unset field.
func (s *Settings) SetDefaults() {
	if s.Provider == "" {
		s.Provider = DefaultProvider
	}
	if s.Timeout == 0 {
		s.Timeout = DefaultThinkTimeout
	}
	if s.MaxUtterance == 0 {
		s.MaxUtterance = DefaultMaxUtterance
	}
}

// Check reports every bad field of the section's own to p (the section's
// view); how it fits the room and the body is the whole config's check.
func (s Settings) Check(p *settings.Problems) {
	if s.Timeout < 100*time.Millisecond || s.Timeout > 5*time.Minute {
		p.Add("timeout", "must be from 100ms to 5m, got %v", s.Timeout)
	}
	if s.Delay < 0 || s.Delay > time.Minute {
		p.Add("delay", "must be from 0 to 1m, got %v", s.Delay)
	}
	// Checked whatever the provider says, so that a misspelt provider
	// does not hide it until the next round.
	if s.BaseURL != "" && !strings.HasPrefix(s.BaseURL, "http://") && !strings.HasPrefix(s.BaseURL, "https://") {
		p.Add("base_url", "must be an http:// or https:// URL, got %q", s.BaseURL)
	}
	if s.ClosingAfter < 0 {
		p.Add("closing_after", "must not be negative, got %d", s.ClosingAfter)
	}
}
