// Validation: every bad field at once, each named by its path.

package config

import (
	"fmt"
	"slices"
	"strings"

	"github.com/chorus-robotics/chorus/runtime/protocol"
	"github.com/chorus-robotics/chorus/runtime/settings"
)

// Errors is every problem of a config, one per field.
type Errors []string

func (e Errors) Error() string { return strings.Join(e, "\n") }

// CheckCommand checks the program of a command driver or action, the
// list at field (its kind checks that one is given): set only for kind
// command, no empty program, no NUL (it cannot reach exec), bounded.
func CheckCommand(p *settings.Problems, field, kind string, argv []string) {
	switch {
	case len(argv) == 0:
		return
	case kind != "command":
		p.Add(field, "is only for kind command, got kind %q", kind)
		return
	case len(argv) > 64:
		p.Add(field, "must have at most 64 arguments, got %d", len(argv))
		return
	case strings.TrimSpace(argv[0]) == "":
		p.Add(field, "the program (the first item) is empty")
	}
	for i, a := range argv {
		if strings.ContainsRune(a, 0) || len(a) > 4096 {
			p.Add(fmt.Sprintf("%s[%d]", field, i), "must be at most 4096 bytes without NUL")
		}
	}
}

// Validate reports every bad field at once: each section's own through
// its owning package's Check, then how the sections fit together.
func (c *Config) Validate() error {
	var p settings.Problems
	if c.Version != Version {
		p.Add("version", "must be %d, got %d", Version, c.Version)
	}
	p.Identity("device.id", c.Device.ID)
	if c.Device.Arch != "" && !slices.Contains(Arches, c.Device.Arch) {
		p.Add("device.arch", "must be one of %s, got %q", strings.Join(Arches, ", "), c.Device.Arch)
	}
	r := c.Room
	room := p.In("room")
	room.Identity("name", r.Name)
	r.VoteSettings.Check(room)
	r.TurnSettings.Check(room)
	r.Repetition.Check(room.In("repetition"))
	if r.MaxPayload < 0 {
		room.Add("max_payload", "must not be negative, got %d", r.MaxPayload)
	}
	if r.Floor {
		room.Identity("floor_instance", r.FloorInstance)
	}
	c.validateMembers(room)
	if r.Mode != ModeTurn && r.Mode != ModeRealtime {
		room.Add("mode", "must be turn or realtime, got %q", r.Mode)
	}
	r.Realtime.Check(room.In("realtime"), r.Members)
	c.MQTT.Settings.Check(p.In("mqtt"))
	c.MQTT.Embedded.Check(p.In("mqtt.embedded"))
	if c.Companion != nil {
		if err := c.Companion.Validate(); err != nil {
			field, why, _ := strings.Cut(strings.TrimPrefix(err.Error(), "card"), ": ")
			p.Add("companion"+field, "%s", why)
		}
		if c.IsFloorID(c.Companion.ID) {
			p.Add("companion.id", "%q is a floor identity (mqtt.floor_ids); a companion needs a name of its own", c.Companion.ID)
		}
	}
	// Kinds (brain.provider, drivers.*.kind) and their own fields are
	// checked by the registry of what a build contains (device/parts).
	b := c.Brain
	b.Check(p.In("brain"))
	if c.Companion != nil && b.Timeout > r.VoteCeiling {
		p.Add("brain.timeout", "%v is longer than room.vote_ceiling %v: the floor never waits that long, so a slow answer always comes after the vote is decided; lower brain.timeout or raise room.vote_ceiling", b.Timeout, r.VoteCeiling)
	}
	if b.MaxUtterance < 10 || b.MaxUtterance > c.Drivers.TTS.MaxChars {
		p.Add("brain.max_utterance", "must be from 10 to drivers.tts.max_chars (%d), the most the body speaks at once, got %d", c.Drivers.TTS.MaxChars, b.MaxUtterance)
	}
	c.validateDrivers(p.In("drivers"))
	c.validateHearing(&p)
	c.validateHA(p.In("homeassistant"))
	c.Query.Check(p.In("query"))
	c.validateHTTP(p.In("http"))
	if !slices.Contains([]string{"debug", "info", "warn", "error"}, c.Log.Level) {
		p.Add("log.level", "must be debug, info, warn or error, got %q", c.Log.Level)
	}
	if !slices.Contains([]string{"text", "json"}, c.Log.Format) {
		p.Add("log.format", "must be text or json, got %q", c.Log.Format)
	}
	if l := p.List(); len(l) > 0 {
		return Errors(l)
	}
	return nil
}

// validateDrivers checks the drivers section's fields that every kind
// shares; each kind's own are the parts registry's.
func (c *Config) validateDrivers(p *settings.Problems) {
	d := c.Drivers
	if d.Camera.Width < 16 || d.Camera.Width > 4096 || d.Camera.Height < 16 || d.Camera.Height > 4096 {
		p.Add("camera.width", "width and height must be from 16 to 4096, got %dx%d", d.Camera.Width, d.Camera.Height)
	}
	if d.Camera.FPS < 1 || d.Camera.FPS > 120 {
		p.Add("camera.fps", "must be from 1 to 120, got %d", d.Camera.FPS)
	}
	if d.Camera.Quality < 1 || d.Camera.Quality > 100 {
		p.Add("camera.quality", "must be from 1 to 100, got %d", d.Camera.Quality)
	}
	if d.Camera.MaxFrame != 0 && (d.Camera.MaxFrame < 1024 || d.Camera.MaxFrame > 64<<20) {
		p.Add("camera.max_frame", "must be from 1024 to 67108864 bytes, got %d", d.Camera.MaxFrame)
	}
	CheckCommand(p, "camera.command", d.Camera.Kind, d.Camera.Command)
	CheckCommand(p, "audio.command", d.Audio.Kind, d.Audio.Command)
	if d.Audio.SampleRate != 0 && (d.Audio.SampleRate < 8000 || d.Audio.SampleRate > 192000) {
		p.Add("audio.sample_rate", "must be from 8000 to 192000, got %d", d.Audio.SampleRate)
	}
	CheckCommand(p, "mic.command", d.Mic.Kind, d.Mic.Command)
	if d.Mic.SampleRate < 8000 || d.Mic.SampleRate > 48000 {
		p.Add("mic.sample_rate", "must be from 8000 to 48000, got %d", d.Mic.SampleRate)
	}
	if d.TTS.MaxChars < 1 || d.TTS.MaxChars > 100000 {
		p.Add("tts.max_chars", "must be from 1 to 100000, got %d", d.TTS.MaxChars)
	}
}

// validateHTTP checks the http section: the listener and the bridge.
func (c *Config) validateHTTP(p *settings.Problems) {
	if c.HTTP.Listen != "off" && !strings.Contains(c.HTTP.Listen, ":") {
		p.Add("listen", "must be host:port or off, got %q", c.HTTP.Listen)
	}
	ws := c.HTTP.WebSocket
	if !ws.Enabled {
		return
	}
	loopback := settings.Loopback(c.HTTP.Listen)
	switch {
	case c.HTTP.Listen == "off":
		p.Add("websocket.enabled", "needs http.listen")
	case !loopback && ws.TokensFile == "" && ws.TokensEnv == "":
		p.Add("websocket.tokens_file", "a token is required off loopback (http.listen %q): give tokens_file or tokens_env", c.HTTP.Listen)
	}
	if ws.TokensFile != "" && ws.TokensEnv != "" {
		p.Add("websocket.tokens_env", "give tokens_file or tokens_env, not both")
	}
	if ws.Anonymous != "" {
		role, name, _ := strings.Cut(ws.Anonymous, ":")
		if !slices.Contains([]string{"viewer", "user"}, role) || (role == "user" && protocol.ValidIdentity(name) != "") {
			p.Add("websocket.anonymous", `must be "viewer" or "user:NAME", got %q`, ws.Anonymous)
		}
		if !loopback {
			p.Add("websocket.anonymous", "clients without a token are allowed only on a loopback listener, got http.listen %q", c.HTTP.Listen)
		}
		if c.speaksAsRoom(name) {
			p.Add("websocket.anonymous", "%q is a companion or the floor of room %s: a visitor speaks as a user", name, c.Room.Name)
		}
	}
	if ws.MaxClients < 0 || ws.MaxClients > 10000 {
		p.Add("websocket.max_clients", "must be from 0 (default 32) to 10000, got %d", ws.MaxClients)
	}
	// 0 is the default (a config built in code, as the demo's, may
	// enable the bridge after SetDefaults).
	if ws.MaxFrame != 0 && (ws.MaxFrame < 1024 || ws.MaxFrame > 1<<20) {
		p.Add("websocket.max_frame", "must be 0 (default 65536) or from 1024 to 1048576 bytes (a viewer's or user's frame), got %d", ws.MaxFrame)
	}
	if ws.MaxDeviceFrame != 0 && (ws.MaxDeviceFrame < 1024 || ws.MaxDeviceFrame > c.Query.MaxResult) {
		p.Add("websocket.max_device_frame", "must be 0 (default query.max_result) or from 1024 bytes to query.max_result (%d; a larger result is refused anyway), got %d", c.Query.MaxResult, ws.MaxDeviceFrame)
	}
}

// validateHearing checks how the hearing section fits the rest: the
// section's own fields are runtime/hearing's; the STT kind and its own
// fields, like every kind, the parts registry's.
func (c *Config) validateHearing(p *settings.Problems) {
	h := c.Hearing
	h.Check(p.In("hearing"))
	if c.speaksAsRoom(h.User) {
		p.Add("hearing.user", "%q is a companion or the floor of room %s: the person heard needs an identity of their own", h.User, c.Room.Name)
	}
	if !h.Enabled {
		return
	}
	if c.Companion == nil {
		p.Add("hearing.enabled", "a device without a companion has nobody to report what it hears as")
	}
	if c.Drivers.Mic.Kind == "none" || c.Drivers.Mic.Kind == "" {
		p.Add("drivers.mic.kind", "hearing is enabled: name a microphone (command, portaudio, air, file; chorusd --list)")
	}
	if h.STT.Kind == "" {
		p.Add("hearing.stt.kind", "hearing is enabled: name a speech-to-text engine (pocketsphinx, wyoming, openai)")
	}
}

// validateMembers checks the room's roster (p is the room section's view).
func (c *Config) validateMembers(p *settings.Problems) {
	r := c.Room
	if len(r.Members) == 0 {
		p.Add("members", "required: the ids of the room's companions (only they vote and take the floor)")
		return
	}
	if len(r.Members) > 1024 {
		p.Add("members", "at most 1024 companions, got %d", len(r.Members))
	}
	seen := map[string]bool{}
	for i, id := range r.Members {
		f := fmt.Sprintf("members[%d]", i)
		p.Identity(f, id)
		if seen[id] {
			p.Add(f, "%q is listed twice", id)
		}
		seen[id] = true
		if c.IsFloorID(id) {
			p.Add(f, "%q is a floor identity (mqtt.floor_ids), not a companion", id)
		}
	}
	if c.Companion != nil && c.Companion.ID != "" && !seen[c.Companion.ID] {
		p.Add("members", "must include this device's companion %q", c.Companion.ID)
	}
}

// CheckBridgeTokens refuses a user token named like a companion of the
// room or its floor: through the bridge it would speak as them.
func (c *Config) CheckBridgeTokens(ts []BridgeToken) error {
	for i, t := range ts {
		if t.Role == "user" && c.speaksAsRoom(t.Name) {
			return fmt.Errorf("http.websocket tokens: entry %d: user %q is a companion or the floor of room %s", i+1, t.Name, c.Room.Name)
		}
	}
	return nil
}

// speaksAsRoom reports whether name is a companion or the floor of the
// room: a bridge client under that name would speak as them.
func (c *Config) speaksAsRoom(name string) bool {
	return slices.Contains(c.Room.Members, name) || c.Scheme().IsFloor(name)
}
