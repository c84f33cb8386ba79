// Secrets: passwords, API keys and bridge tokens, read from the
// environment or a file, never from the YAML.

package config

import (
	"bytes"
	"fmt"
	"os"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/chorus-robotics/chorus/runtime/protocol"
)

// BridgeToken is one entry of the bridge's tokens.
type BridgeToken struct {
	Token           string `yaml:"token"`
	Role            string `yaml:"role"`
	Name            string `yaml:"name"`
	MQTTPasswordEnv string `yaml:"mqtt_password_env"` // the password of name's MQTT connection, if the broker wants one
	Camera          bool   `yaml:"camera"`            // may ask for the devices' camera frames (room members' eyes)
}

// Tokens reads the bridge's tokens from tokens_file or tokens_env.
func (w WebSocket) Tokens() ([]BridgeToken, error) {
	field := "http.websocket.tokens_file"
	if w.TokensEnv != "" {
		field = "http.websocket.tokens_env"
	}
	raw, err := secret(field, w.TokensEnv, w.TokensFile)
	if err != nil || raw == "" {
		return nil, err
	}
	return parseTokens(field, raw)
}

// parseTokens reads the YAML list of tokens from field.
func parseTokens(field, raw string) ([]BridgeToken, error) {
	var ts []BridgeToken
	dec := yaml.NewDecoder(strings.NewReader(raw))
	dec.KnownFields(true)
	if err := dec.Decode(&ts); err != nil {
		return nil, fmt.Errorf("%s: a YAML list of {token, role, name, mqtt_password_env}: %w", field, err)
	}
	seen := map[string]int{}
	for i, t := range ts {
		if j, dup := seen[t.Token]; dup {
			return nil, fmt.Errorf("%s: entries %d and %d have the same token", field, j+1, i+1)
		}
		seen[t.Token] = i
		if len(t.Token) < 16 {
			return nil, fmt.Errorf("%s: entry %d (%s %s): token must be at least 16 characters", field, i+1, t.Role, t.Name)
		}
		if !oneOf(t.Role, "viewer", "user", "device") {
			return nil, fmt.Errorf("%s: entry %d: role must be viewer, user or device, got %q", field, i+1, t.Role)
		}
		if why := protocol.ValidIdentity(t.Name); t.Role != "viewer" && why != "" {
			return nil, fmt.Errorf("%s: entry %d: name: %s", field, i+1, why)
		}
	}
	return ts, nil
}

// secret reads a secret from the variable env or the file path.
func secret(field, env, path string) (string, error) {
	switch {
	case env != "":
		v, ok := os.LookupEnv(env)
		if !ok {
			return "", fmt.Errorf("%s: environment variable %s is not set", field, env)
		}
		return v, nil
	case path != "":
		b, err := os.ReadFile(path)
		if err != nil {
			return "", fmt.Errorf("%s: %w", field, err)
		}
		return strings.TrimSpace(string(b)), nil
	}
	return "", nil
}

// Password returns the MQTT password ("" when none is configured).
func (m MQTT) Password() (string, error) {
	return secret("mqtt.password_env", m.PasswordEnv, m.PasswordFile)
}

// FloorPassword returns the password of the floor's connection ("" when
// none is configured).
func (m MQTT) FloorPassword() (string, error) {
	return secret("mqtt.floor_password_env", m.FloorPasswordEnv, "")
}

// APIKey returns the brain's API key ("" when none is configured).
func (b Brain) APIKey() (string, error) { return secret("brain.api_key_env", b.APIKeyEnv, "") }

// APIKey reads the speech-to-text API's key from the environment ("" when
// none is named: a server on the LAN may need none).
func (s STT) APIKey() (string, error) { return secret("hearing.stt.api_key_env", s.APIKeyEnv, "") }

// Users reads the embedded broker's users file: a YAML map of name to
// password.
func (e Embedded) Users() (map[string]string, error) {
	if e.UsersFile == "" {
		return nil, nil
	}
	b, err := os.ReadFile(e.UsersFile)
	if err != nil {
		return nil, fmt.Errorf("mqtt.embedded.users_file: %w", err)
	}
	var u map[string]string
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	if err := dec.Decode(&u); err != nil {
		return nil, fmt.Errorf("mqtt.embedded.users_file %s: %w", e.UsersFile, err)
	}
	return u, nil
}
