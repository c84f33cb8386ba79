// The memory's settings: a config's memory section (off when absent).

package memory

import (
	"os"
	"path/filepath"
	"time"

	"github.com/chorus-robotics/chorus/runtime/protocol"
	"github.com/chorus-robotics/chorus/runtime/settings"
)

// Settings turn a companion's memory on and bound it. A config without a
// memory section remembers nothing (config.Config.Memory is nil).
type Settings struct {
	// Dir is where the facts are kept: default $STATE_DIRECTORY/memory
	// (systemd's StateDirectory, /var/lib/chorus under chorusd.service),
	// else ./chorus-memory beside the config.
	Dir       string `yaml:"dir"`
	PerPerson int    `yaml:"per_person"` // facts kept about one person, default 200
	Total     int    `yaml:"total"`      // facts kept in all, default 2000
	MaxBytes  int64  `yaml:"max_bytes"`  // the file's bound, default 1 MiB
	// RestAfter is how long a conversation is quiet before what people
	// said is written to memory (also at terminal), default 30 s.
	RestAfter time.Duration `yaml:"rest_after"`
	// Extract is "model" (the companion's model extracts facts; the
	// default with a model brain) or "rules" ("my name is …", "I like …";
	// the default with the rule brain).
	Extract string `yaml:"extract"`
	// PerHour bounds the model's extraction calls, default 12; over it,
	// the rules extract until the hour turns.
	PerHour int `yaml:"per_hour"`
	Recall  int `yaml:"recall"` // facts recalled per message beside the pinned core, default 5 (at most 5)
	// Operators may list, export and forget anyone's facts over the bus
	// (chorus memory); everyone else only their own.
	Operators []string `yaml:"operators"`
	// Share gives what this companion learns to the other companions of
	// its room that share too, and keeps what they learn (their facts
	// travel on the room's facts topic, which only members read).
	Share bool `yaml:"share"`
	// Embeddings, when set, recall by meaning through an OpenAI-compatible
	// /v1/embeddings endpoint (Ollama, llama.cpp's server); without it,
	// recall is lexical.
	Embeddings *EmbedSettings `yaml:"embeddings"`
}

// EmbedSettings name the embeddings endpoint.
type EmbedSettings struct {
	BaseURL   string `yaml:"base_url"`
	Model     string `yaml:"model"`
	APIKeyEnv string `yaml:"api_key_env"`
	// Timeout bounds the message's embedding before a think (default
	// 500 ms; over it, recall is lexical for that message).
	Timeout time.Duration `yaml:"timeout"`
}

// DefaultEmbedWait bounds a message's embedding on the way to its think.
const DefaultEmbedWait = 500 * time.Millisecond

// Embedder is the client of the embeddings endpoint (nil without one).
func (s Settings) Embedder() (Embedder, error) {
	e := s.Embeddings
	if e == nil {
		return nil, nil
	}
	key, err := settings.Secret("memory.embeddings.api_key_env", e.APIKeyEnv, "")
	if err != nil {
		return nil, err
	}
	return NewOpenAIEmbedder(EmbedConfig{BaseURL: e.BaseURL, APIKey: key, Model: e.Model}), nil
}

// The memory's defaults.
const (
	DefaultRestAfter = 30 * time.Second
	DefaultPerHour   = 12
	DefaultRecall    = 5
	ExtractModel     = "model"
	ExtractRules     = "rules"
)

// SetDefaults fills every unset field (runtime/config then makes a
// relative dir relative to the config file's folder).
func (s *Settings) SetDefaults() {
	if s.Dir == "" {
		if d := os.Getenv("STATE_DIRECTORY"); d != "" {
			s.Dir = filepath.Join(filepath.SplitList(d)[0], "memory")
		} else {
			s.Dir = "chorus-memory"
		}
	}
	if s.PerPerson == 0 {
		s.PerPerson = DefaultPerPerson
	}
	if s.Total == 0 {
		s.Total = DefaultTotal
	}
	if s.MaxBytes == 0 {
		s.MaxBytes = DefaultBytes
	}
	if s.RestAfter == 0 {
		s.RestAfter = DefaultRestAfter
	}
	if s.PerHour == 0 {
		s.PerHour = DefaultPerHour
	}
	if s.Recall == 0 {
		s.Recall = DefaultRecall
	}
	if e := s.Embeddings; e != nil && e.Timeout == 0 {
		e.Timeout = DefaultEmbedWait
	}
}

// Limits are the store's bounds.
func (s Settings) Limits() Limits {
	return Limits{PerPerson: s.PerPerson, Total: s.Total, Bytes: s.MaxBytes}
}

// IsOperator reports whether id may read and forget anyone's facts.
func (s Settings) IsOperator(id string) bool {
	for _, o := range s.Operators {
		if o == id {
			return true
		}
	}
	return false
}

// Check reports every bad field to p (the section's view).
func (s Settings) Check(p *settings.Problems) {
	if s.PerPerson < 1 || s.PerPerson > 10000 {
		p.Add("per_person", "must be from 1 to 10000, got %d", s.PerPerson)
	}
	if s.Total < 1 || s.Total > 100000 {
		p.Add("total", "must be from 1 to 100000, got %d", s.Total)
	}
	if s.MaxBytes < 4096 || s.MaxBytes > 1<<30 {
		p.Add("max_bytes", "must be from 4096 to 1 GiB, got %d", s.MaxBytes)
	}
	if s.RestAfter < time.Second || s.RestAfter > time.Hour {
		p.Add("rest_after", "must be from 1s to 1h, got %v", s.RestAfter)
	}
	if s.Extract != "" && s.Extract != ExtractModel && s.Extract != ExtractRules {
		p.Add("extract", "must be model or rules, got %q", s.Extract)
	}
	if s.PerHour < 0 || s.PerHour > 3600 {
		p.Add("per_hour", "must be from 0 to 3600, got %d", s.PerHour)
	}
	if s.Recall < 0 || s.Recall > 5 {
		p.Add("recall", "must be from 0 to 5, got %d", s.Recall)
	}
	if e := s.Embeddings; e != nil {
		if e.Model == "" {
			p.Add("embeddings.model", "required: the embedding model's name (e.g. nomic-embed-text)")
		}
		if e.Timeout < 10*time.Millisecond || e.Timeout > 10*time.Second {
			p.Add("embeddings.timeout", "must be from 10ms to 10s, got %v", e.Timeout)
		}
	}
	for i, o := range s.Operators {
		if why := protocol.ValidIdentity(o); why != "" {
			p.Add("operators", "entry %d: %s (got %q)", i, why, o)
		}
	}
}

// CheckDir reports whether the memory's folder can be used: it exists or
// can be made (0700), and a file can be written there (--check-config and
// --doctor).
func (s Settings) CheckDir() error {
	if err := MakeDir(s.Dir); err != nil {
		return err
	}
	f, err := os.CreateTemp(s.Dir, ".check-*")
	if err != nil {
		return err
	}
	name := f.Name()
	f.Close()
	return os.Remove(name)
}
