// The embedded broker's settings: a config's mqtt.embedded section.

package broker

import (
	"bytes"
	"fmt"
	"os"

	"go.yaml.in/yaml/v3"

	"github.com/chorus-robotics/chorus/runtime/settings"
)

// Settings run the room's broker inside this chorusd.
type Settings struct {
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

// DefaultListen is where an enabled broker listens by default: this
// machine only.
const DefaultListen = "127.0.0.1:1883"

// SetDefaults fills every unset field.
func (s *Settings) SetDefaults() {
	if s.Enabled && s.Listen == "" {
		s.Listen = DefaultListen
	}
}

// Users reads the users file: username to password.
func (s Settings) Users() (map[string]string, error) {
	if s.UsersFile == "" {
		return nil, nil
	}
	b, err := os.ReadFile(s.UsersFile)
	if err != nil {
		return nil, fmt.Errorf("mqtt.embedded.users_file: %w", err)
	}
	var u map[string]string
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	if err := dec.Decode(&u); err != nil {
		return nil, fmt.Errorf("mqtt.embedded.users_file %s: %w", s.UsersFile, err)
	}
	return u, nil
}

// Check reports every bad field to p (the section's view); nothing when
// the broker is not enabled.
func (s Settings) Check(p *settings.Problems) {
	if !s.Enabled {
		return
	}
	p.HostPort("listen", s.Listen)
	if !s.AllowAnonymous && s.UsersFile == "" {
		p.Add("users_file", "required unless allow_anonymous is true")
	}
	if s.AllowAnonymous && !settings.Loopback(s.Listen) {
		p.Add("allow_anonymous", "anonymous clients are allowed only on a loopback listener (a demo on one machine), got listen %q: give a users_file", s.Listen)
	}
	if (s.TLSCert == "") != (s.TLSKey == "") {
		p.Add("tls_key", "tls_cert and tls_key go together")
	}
	if s.TLSClientCA != "" && s.TLSCert == "" {
		p.Add("tls_client_ca", "needs tls_cert and tls_key: client certificates are asked for on a TLS listener")
	}
}
