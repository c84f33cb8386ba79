// The connection's settings: a config's mqtt section (its embedded
// broker is runtime/broker's).

package bus

import (
	"fmt"
	"strings"

	"github.com/chorus-robotics/chorus/runtime/settings"
	"github.com/chorus-robotics/chorus/runtime/topic"
)

// Settings are how the device reaches its room's broker.
type Settings struct {
	Broker string `yaml:"broker"` // tcp://host:port or ssl://host:port
	// Brokers are more endpoints of the room's broker — the nodes of a
	// clustered broker — tried in order after Broker when it cannot be
	// reached, at every connect and reconnect (issue 31).
	Brokers          []string `yaml:"brokers"`
	Prefix           string   `yaml:"prefix"`
	Username         string   `yaml:"username"` // default: the companion id, else the device id
	PasswordEnv      string   `yaml:"password_env"`
	PasswordFile     string   `yaml:"password_file"`
	FloorIDs         []string `yaml:"floor_ids"` // identities allowed to grant turns; default [floor]
	FloorPasswordEnv string   `yaml:"floor_password_env"`
	TLS              TLSFiles `yaml:"tls"` // for an ssl:// broker
	// QoS is the MQTT quality of service of every publish and
	// subscription: 1 (the default, docs/protocol.md) or 0. On a NATS cluster 0
	// keeps the room's traffic off JetStream, whose leader elections stall
	// QoS 1 delivery for seconds when a node is lost (README, "When one
	// broker is not enough"); Chorus' own retries cover what a lost
	// connection drops.
	QoS *int `yaml:"qos"`
}

// QoSLevel is the QoS the section asks for (1 when it names none).
func (s Settings) QoSLevel() byte {
	if s.QoS == nil {
		return 1
	}
	return byte(*s.QoS)
}

// TLSFiles are a TLS connection's PEM files.
type TLSFiles struct {
	CA   string `yaml:"ca_file"`   // PEM; empty: the system's roots (client) / no client certificates (broker)
	Cert string `yaml:"cert_file"` // PEM
	Key  string `yaml:"key_file"`  // PEM
}

// Password is the device's MQTT password, from the environment variable
// or the file the section names ("" when it names neither).
func (s Settings) Password() (string, error) {
	field := "mqtt.password_env"
	if s.PasswordEnv == "" && s.PasswordFile != "" {
		field = "mqtt.password_file"
	}
	return settings.Secret(field, s.PasswordEnv, s.PasswordFile)
}

// FloorPassword is the password of the floor's own connection.
func (s Settings) FloorPassword() (string, error) {
	return settings.Secret("mqtt.floor_password_env", s.FloorPasswordEnv, "")
}

// SetDefaults fills the fields that need nothing else of the config.
func (s *Settings) SetDefaults() {
	if s.Prefix == "" {
		s.Prefix = topic.DefaultPrefix
	}
	if len(s.FloorIDs) == 0 {
		s.FloorIDs = []string{topic.DefaultFloorID}
	}
}

// Check reports every bad field to p (the section's view).
func (s Settings) Check(p *settings.Problems) {
	if !strings.HasPrefix(s.Broker, "tcp://") && !strings.HasPrefix(s.Broker, "ssl://") {
		p.Add("broker", "must be tcp://host:port or ssl://host:port, got %q", s.Broker)
	}
	if len(s.Brokers) > 16 {
		p.Add("brokers", "at most 16 endpoints, got %d", len(s.Brokers))
	}
	for i, b := range s.Brokers {
		switch {
		case !strings.HasPrefix(b, "tcp://") && !strings.HasPrefix(b, "ssl://"):
			p.Add(fmt.Sprintf("brokers[%d]", i), "must be tcp://host:port or ssl://host:port, got %q", b)
		case b[:6] != s.Broker[:min(6, len(s.Broker))]:
			p.Add(fmt.Sprintf("brokers[%d]", i), "%q: every endpoint of one room uses the same scheme as broker (%q)", b, s.Broker)
		}
	}
	p.Identity("prefix", s.Prefix)
	p.Identity("username", s.Username)
	for i, f := range s.FloorIDs {
		p.Identity(fmt.Sprintf("floor_ids[%d]", i), f)
	}
	if s.PasswordEnv != "" && s.PasswordFile != "" {
		p.Add("password_file", "set either password_env or password_file, not both")
	}
	if s.QoS != nil && *s.QoS != 0 && *s.QoS != 1 {
		p.Add("qos", "must be 0 or 1, got %d", *s.QoS)
	}
	if (s.TLS.Cert == "") != (s.TLS.Key == "") {
		p.Add("tls.key_file", "cert_file and key_file go together")
	}
}
