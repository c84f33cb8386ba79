// The bridge's tokens, read from the environment or a file, never from
// the YAML (the other secrets are their sections' owners': settings.Secret).

package config

import (
	"fmt"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/chorus-robotics/chorus/runtime/protocol"
	"github.com/chorus-robotics/chorus/runtime/settings"
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
	raw, err := settings.Secret(field, w.TokensEnv, w.TokensFile)
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
		if !slices.Contains([]string{"viewer", "user", "device"}, t.Role) {
			return nil, fmt.Errorf("%s: entry %d: role must be viewer, user or device, got %q", field, i+1, t.Role)
		}
		if why := protocol.ValidIdentity(t.Name); t.Role != "viewer" && why != "" {
			return nil, fmt.Errorf("%s: entry %d: name: %s", field, i+1, why)
		}
	}
	return ts, nil
}
