// Validation: every bad field at once, each named by its path.

package config

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/chorus-robotics/chorus/runtime/protocol"
)

// Errors is every problem of a config, one per field.
type Errors []string

func (e Errors) Error() string { return strings.Join(e, "\n") }

type problems struct{ list Errors }

func (p *problems) add(field, format string, args ...any) {
	p.list = append(p.list, field+": "+fmt.Sprintf(format, args...))
}

func (p *problems) identity(field, v string) {
	if why := protocol.ValidIdentity(v); why != "" {
		p.add(field, "%s (got %q)", why, v)
	}
}

// DefaultMaxFrame caps one JPEG of a command camera.
const DefaultMaxFrame = 4 << 20

// command checks the program of a command driver at field (its kind
// checks that one is given): set only for kind command, no empty program,
// no NUL (it cannot reach exec), bounded.
func (p *problems) command(field, kind string, argv []string) {
	field += ".command"
	switch {
	case len(argv) == 0:
		return
	case kind != "command":
		p.add(field, "is only for kind command, got kind %q", kind)
		return
	case len(argv) > 64:
		p.add(field, "must have at most 64 arguments, got %d", len(argv))
		return
	case strings.TrimSpace(argv[0]) == "":
		p.add(field, "the program (the first item) is empty")
	}
	for i, a := range argv {
		if strings.ContainsRune(a, 0) || len(a) > 4096 {
			p.add(fmt.Sprintf("%s[%d]", field, i), "must be at most 4096 bytes without NUL")
		}
	}
}

func oneOf(v string, allowed ...string) bool {
	for _, a := range allowed {
		if v == a {
			return true
		}
	}
	return false
}

// Validate reports every bad field at once.
func (c *Config) Validate() error {
	var p problems
	if c.Version != Version {
		p.add("version", "must be %d, got %d", Version, c.Version)
	}
	p.identity("device.id", c.Device.ID)
	if c.Device.Arch != "" && !oneOf(c.Device.Arch, Arches...) {
		p.add("device.arch", "must be one of %s, got %q", strings.Join(Arches, ", "), c.Device.Arch)
	}
	p.identity("room.name", c.Room.Name)
	r := c.Room
	if r.VoteTimeout < 10*time.Millisecond || r.VoteTimeout > time.Minute {
		p.add("room.vote_timeout", "must be from 10ms to 1m, got %v", r.VoteTimeout)
	}
	if r.VoteCeiling < r.VoteTimeout || r.VoteCeiling > 10*time.Minute {
		p.add("room.vote_ceiling", "must be from room.vote_timeout (%v) to 10m, got %v", r.VoteTimeout, r.VoteCeiling)
	}
	if r.MaxPending < 1 || r.MaxPending > 4096 {
		p.add("room.max_pending", "must be from 1 to 4096, got %d", r.MaxPending)
	}
	if r.Pause < 0 || r.Pause > time.Minute {
		p.add("room.pause", "must be from 0 to 1m, got %v", r.Pause)
	}
	if r.Turns != TurnsOverlapped && r.Turns != TurnsSequential {
		p.add("room.turns", "must be overlapped or sequential, got %q", r.Turns)
	}
	if !protocol.BargeIn(r.BargeIn).Valid() {
		p.add("room.barge_in", "must be sentence, immediate or off, got %q", r.BargeIn)
	}
	if r.History < 1 || r.History > 1000 {
		p.add("room.history", "must be from 1 to 1000, got %d", r.History)
	}
	if r.MaxTurn < 0 {
		p.add("room.max_turn", "must not be negative, got %d", r.MaxTurn)
	}
	if r.Repetition.Threshold <= 0 || r.Repetition.Threshold > 1 {
		p.add("room.repetition.threshold", "must be above 0 and at most 1, got %v", r.Repetition.Threshold)
	}
	if r.Repetition.Window < 2 || r.Repetition.Window > 100 {
		p.add("room.repetition.window", "must be from 2 to 100, got %d", r.Repetition.Window)
	}
	switch r.Repetition.Judge {
	case JudgeModel, JudgeLocal, JudgeOff:
	default:
		p.add("room.repetition.judge", "must be model, local or off, got %q", r.Repetition.Judge)
	}
	if r.Repetition.JudgeEvery < 1 || r.Repetition.JudgeEvery > 1000 {
		p.add("room.repetition.judge_every", "must be from 1 to 1000, got %d", r.Repetition.JudgeEvery)
	}
	if r.Repetition.JudgeTimeout < 0 {
		p.add("room.repetition.judge_timeout", "must not be negative, got %v", r.Repetition.JudgeTimeout)
	}
	if r.MaxPayload < 0 {
		p.add("room.max_payload", "must not be negative, got %d", r.MaxPayload)
	}
	if r.Floor {
		p.identity("room.floor_instance", r.FloorInstance)
	}
	c.validateMembers(&p)
	c.validateRealtime(&p)
	m := c.MQTT
	if !strings.HasPrefix(m.Broker, "tcp://") && !strings.HasPrefix(m.Broker, "ssl://") {
		p.add("mqtt.broker", "must be tcp://host:port or ssl://host:port, got %q", m.Broker)
	}
	p.identity("mqtt.prefix", m.Prefix)
	p.identity("mqtt.username", m.Username)
	for i, f := range m.FloorIDs {
		p.identity(fmt.Sprintf("mqtt.floor_ids[%d]", i), f)
	}
	if m.PasswordEnv != "" && m.PasswordFile != "" {
		p.add("mqtt.password_file", "set either password_env or password_file, not both")
	}
	if m.Embedded.Enabled {
		if !strings.Contains(m.Embedded.Listen, ":") {
			p.add("mqtt.embedded.listen", "must be host:port, got %q", m.Embedded.Listen)
		}
		if !m.Embedded.AllowAnonymous && m.Embedded.UsersFile == "" {
			p.add("mqtt.embedded.users_file", "required unless allow_anonymous is true")
		}
		if m.Embedded.AllowAnonymous && !Loopback(m.Embedded.Listen) {
			p.add("mqtt.embedded.allow_anonymous", "anonymous clients are allowed only on a loopback listener (a demo on one machine), got listen %q: give a users_file", m.Embedded.Listen)
		}
		if (m.Embedded.TLSCert == "") != (m.Embedded.TLSKey == "") {
			p.add("mqtt.embedded.tls_key", "tls_cert and tls_key go together")
		}
		if m.Embedded.TLSClientCA != "" && m.Embedded.TLSCert == "" {
			p.add("mqtt.embedded.tls_client_ca", "needs tls_cert and tls_key: client certificates are asked for on a TLS listener")
		}
	}
	m.TLS.validate(&p, "mqtt.tls")
	if c.Companion != nil {
		if err := c.Companion.Validate(); err != nil {
			p.list = append(p.list, "companion"+strings.TrimPrefix(err.Error(), "card"))
		}
	}
	// Kinds (brain.provider, drivers.*.kind) and their own fields are
	// checked by the registry of what a build contains (device/parts).
	b := c.Brain
	if b.Timeout < 100*time.Millisecond || b.Timeout > 5*time.Minute {
		p.add("brain.timeout", "must be from 100ms to 5m, got %v", b.Timeout)
	}
	if b.Delay < 0 || b.Delay > time.Minute {
		p.add("brain.delay", "must be from 0 to 1m, got %v", b.Delay)
	}
	if b.ClosingAfter < 0 {
		p.add("brain.closing_after", "must not be negative, got %d", b.ClosingAfter)
	}
	if c.Companion != nil && b.Timeout > r.VoteCeiling {
		p.add("brain.timeout", "%v is longer than room.vote_ceiling %v: the floor never waits that long, so a slow answer always comes after the vote is decided; lower brain.timeout or raise room.vote_ceiling", b.Timeout, r.VoteCeiling)
	}
	if b.MaxUtterance < 10 || b.MaxUtterance > c.Drivers.TTS.MaxChars {
		p.add("brain.max_utterance", "must be from 10 to drivers.tts.max_chars (%d), the most the body speaks at once, got %d", c.Drivers.TTS.MaxChars, b.MaxUtterance)
	}
	d := c.Drivers
	if d.Camera.Width < 16 || d.Camera.Width > 4096 || d.Camera.Height < 16 || d.Camera.Height > 4096 {
		p.add("drivers.camera.width", "width and height must be from 16 to 4096, got %dx%d", d.Camera.Width, d.Camera.Height)
	}
	if d.Camera.FPS < 1 || d.Camera.FPS > 120 {
		p.add("drivers.camera.fps", "must be from 1 to 120, got %d", d.Camera.FPS)
	}
	if d.Camera.Quality < 1 || d.Camera.Quality > 100 {
		p.add("drivers.camera.quality", "must be from 1 to 100, got %d", d.Camera.Quality)
	}
	if d.Camera.MaxFrame != 0 && (d.Camera.MaxFrame < 1024 || d.Camera.MaxFrame > 64<<20) {
		p.add("drivers.camera.max_frame", "must be from 1024 to 67108864 bytes, got %d", d.Camera.MaxFrame)
	}
	p.command("drivers.camera", d.Camera.Kind, d.Camera.Command)
	p.command("drivers.audio", d.Audio.Kind, d.Audio.Command)
	if d.Audio.SampleRate != 0 && (d.Audio.SampleRate < 8000 || d.Audio.SampleRate > 192000) {
		p.add("drivers.audio.sample_rate", "must be from 8000 to 192000, got %d", d.Audio.SampleRate)
	}
	p.command("drivers.mic", d.Mic.Kind, d.Mic.Command)
	if d.Mic.SampleRate < 8000 || d.Mic.SampleRate > 48000 {
		p.add("drivers.mic.sample_rate", "must be from 8000 to 48000, got %d", d.Mic.SampleRate)
	}
	c.validateHearing(&p)
	c.validateBody(&p)
	c.validateHA(&p)
	if d.TTS.MaxChars < 1 || d.TTS.MaxChars > 100000 {
		p.add("drivers.tts.max_chars", "must be from 1 to 100000, got %d", d.TTS.MaxChars)
	}
	if c.Query.Timeout < 100*time.Millisecond || c.Query.Timeout > 10*time.Minute {
		p.add("query.timeout", "must be from 100ms to 10m, got %v", c.Query.Timeout)
	}
	if c.Query.MaxPending < 1 || c.Query.MaxPending > 100000 {
		p.add("query.max_pending", "must be from 1 to 100000, got %d", c.Query.MaxPending)
	}
	if c.HTTP.Listen != "off" && !strings.Contains(c.HTTP.Listen, ":") {
		p.add("http.listen", "must be host:port or off, got %q", c.HTTP.Listen)
	}
	if ws := c.HTTP.WebSocket; ws.Enabled {
		switch {
		case c.HTTP.Listen == "off":
			p.add("http.websocket.enabled", "needs http.listen")
		case !Loopback(c.HTTP.Listen) && ws.TokensFile == "" && ws.TokensEnv == "":
			p.add("http.websocket.tokens_file", "a token is required off loopback (http.listen %q): give tokens_file or tokens_env", c.HTTP.Listen)
		}
		if ws.TokensFile != "" && ws.TokensEnv != "" {
			p.add("http.websocket.tokens_env", "give tokens_file or tokens_env, not both")
		}
		if ws.Anonymous != "" {
			role, name, _ := strings.Cut(ws.Anonymous, ":")
			if !oneOf(role, "viewer", "user") || (role == "user" && protocol.ValidIdentity(name) != "") {
				p.add("http.websocket.anonymous", `must be "viewer" or "user:NAME", got %q`, ws.Anonymous)
			}
			if !Loopback(c.HTTP.Listen) {
				p.add("http.websocket.anonymous", "clients without a token are allowed only on a loopback listener, got http.listen %q", c.HTTP.Listen)
			}
			if c.speaksAsRoom(name) {
				p.add("http.websocket.anonymous", "%q is a companion or the floor of room %s: a visitor speaks as a user", name, c.Room.Name)
			}
		}
		if ws.MaxClients < 0 || ws.MaxClients > 10000 {
			p.add("http.websocket.max_clients", "must be from 0 (default 32) to 10000, got %d", ws.MaxClients)
		}
		// 0 is the default (a config built in code, as the demo's, may
		// enable the bridge after SetDefaults).
		if ws.MaxFrame != 0 && (ws.MaxFrame < 1024 || ws.MaxFrame > 1<<20) {
			p.add("http.websocket.max_frame", "must be 0 (default 65536) or from 1024 to 1048576 bytes (a viewer's or user's frame), got %d", ws.MaxFrame)
		}
		if ws.MaxDeviceFrame != 0 && (ws.MaxDeviceFrame < 1024 || ws.MaxDeviceFrame > c.Query.MaxResult) {
			p.add("http.websocket.max_device_frame", "must be 0 (default query.max_result) or from 1024 bytes to query.max_result (%d; a larger result is refused anyway), got %d", c.Query.MaxResult, ws.MaxDeviceFrame)
		}
	}
	if !oneOf(c.Log.Level, "debug", "info", "warn", "error") {
		p.add("log.level", "must be debug, info, warn or error, got %q", c.Log.Level)
	}
	if !oneOf(c.Log.Format, "text", "json") {
		p.add("log.format", "must be text or json, got %q", c.Log.Format)
	}
	if len(p.list) > 0 {
		return p.list
	}
	return nil
}

// validateHearing checks the hearing section; the STT kind and its own
// fields, like every kind, are the parts registry's.
func (c *Config) validateHearing(p *problems) {
	h := c.Hearing
	p.identity("hearing.user", h.User)
	if c.speaksAsRoom(h.User) {
		p.add("hearing.user", "%q is a companion or the floor of room %s: the person heard needs an identity of their own", h.User, c.Room.Name)
	}
	if h.Window < 0 || h.Window > 2*time.Second {
		p.add("hearing.window", "must be from 0 to 2s, got %v", h.Window)
	}
	if h.Tail < 0 || h.Tail > 5*time.Second {
		p.add("hearing.tail", "must be from 0 to 5s, got %v", h.Tail)
	}
	if h.STT.Timeout < 100*time.Millisecond || h.STT.Timeout > 2*time.Minute {
		p.add("hearing.stt.timeout", "must be from 100ms to 2m, got %v", h.STT.Timeout)
	}
	v := h.VAD
	if a := v.Aggressiveness; a != nil && (*a < 0 || *a > 3) {
		p.add("hearing.vad.aggressiveness", "must be from 0 to 3, got %d", *a)
	}
	if v.PreRoll < 0 || v.PreRoll > 2*time.Second {
		p.add("hearing.vad.pre_roll", "must be from 0 to 2s, got %v", v.PreRoll)
	}
	if v.Hangover < 100*time.Millisecond || v.Hangover > 5*time.Second {
		p.add("hearing.vad.hangover", "must be from 100ms to 5s, got %v", v.Hangover)
	}
	if v.MinUtterance < 0 || v.MinUtterance > 10*time.Second {
		p.add("hearing.vad.min_utterance", "must be from 0 to 10s, got %v", v.MinUtterance)
	}
	if v.MaxUtterance < time.Second || v.MaxUtterance > 5*time.Minute || v.MaxUtterance <= v.MinUtterance {
		p.add("hearing.vad.max_utterance", "must be from 1s to 5m and above min_utterance (%v), got %v", v.MinUtterance, v.MaxUtterance)
	}
	if h.Wake.ListenFor < time.Second || h.Wake.ListenFor > 5*time.Minute {
		p.add("hearing.wake.listen_for", "must be from 1s to 5m, got %v", h.Wake.ListenFor)
	}
	for i, n := range h.Wake.Names {
		if n == "" || len(n) > 64 || strings.ContainsAny(n, "\x00\n") {
			p.add(fmt.Sprintf("hearing.wake.names[%d]", i), "must be a wake word's name of 1 to 64 bytes, got %q", n)
		}
	}
	if !h.Enabled {
		return
	}
	if c.Companion == nil {
		p.add("hearing.enabled", "a device without a companion has nobody to report what it hears as")
	}
	if c.Drivers.Mic.Kind == "none" || c.Drivers.Mic.Kind == "" {
		p.add("drivers.mic.kind", "hearing is enabled: name a microphone (command, portaudio, air, file; chorusd --list)")
	}
	if h.STT.Kind == "" {
		p.add("hearing.stt.kind", "hearing is enabled: name a speech-to-text engine (pocketsphinx, wyoming, openai)")
	}
}

func (c *Config) validateMembers(p *problems) {
	r := c.Room
	if len(r.Members) == 0 {
		p.add("room.members", "required: the ids of the room's companions (only they vote and take the floor)")
		return
	}
	if len(r.Members) > 1024 {
		p.add("room.members", "at most 1024 companions, got %d", len(r.Members))
	}
	seen := map[string]bool{}
	for i, id := range r.Members {
		f := fmt.Sprintf("room.members[%d]", i)
		p.identity(f, id)
		if seen[id] {
			p.add(f, "%q is listed twice", id)
		}
		seen[id] = true
		for _, fid := range c.MQTT.FloorIDs {
			if id == fid {
				p.add(f, "%q is a floor identity (mqtt.floor_ids), not a companion", id)
			}
		}
	}
	if c.Companion != nil && c.Companion.ID != "" && !seen[c.Companion.ID] {
		p.add("room.members", "must include this device's companion %q", c.Companion.ID)
	}
	if c.Companion != nil {
		for _, fid := range c.MQTT.FloorIDs {
			if c.Companion.ID == fid {
				p.add("companion.id", "%q is a floor identity (mqtt.floor_ids); a companion needs a name of its own", fid)
			}
		}
	}
}

func (c *Config) validateRealtime(p *problems) {
	if c.Room.Mode != ModeTurn && c.Room.Mode != ModeRealtime {
		p.add("room.mode", "must be turn or realtime, got %q", c.Room.Mode)
	}
	rt := c.Room.Realtime
	for _, d := range []struct {
		field string
		v     time.Duration
	}{
		{"room.realtime.phase_timeout", rt.PhaseTimeout}, {"room.realtime.silence_timeout", rt.SilenceTimeout},
		{"room.realtime.rate_limit", rt.RateLimit}, {"room.realtime.poll_interval", rt.PollInterval},
		{"room.realtime.speak_cooldown", rt.SpeakCooldown},
	} {
		if d.v <= 0 {
			p.add(d.field, "must be above zero, got %v", d.v)
		}
	}
	for _, n := range []struct {
		field string
		v     int
	}{
		{"room.realtime.max_count.per_agent", rt.MaxCount.PerAgent}, {"room.realtime.max_count.per_day", rt.MaxCount.PerDay},
		{"room.realtime.max_length.per_talk", rt.MaxLength.PerTalk},
	} {
		if n.v <= 0 {
			p.add(n.field, "must be above zero, got %d", n.v)
		}
	}
	if rt.SpeakCooldown > 0 && rt.SpeakCooldown < rt.RateLimit {
		p.add("room.realtime.speak_cooldown", "must be at least room.realtime.rate_limit (%v), got %v: a companion would post faster than the floor accepts", rt.RateLimit, rt.SpeakCooldown)
	}
	if len(rt.Whisper) > 64 {
		p.add("room.realtime.whisper", "at most 64 channels, got %d", len(rt.Whisper))
	}
	members := map[string]bool{}
	for _, m := range c.Room.Members {
		members[m] = true
	}
	for ch, ms := range rt.Whisper {
		f := "room.realtime.whisper." + ch
		p.identity(f, ch)
		if len(ms) == 0 {
			p.add(f, "a whisper channel needs its members")
		}
		for i, m := range ms {
			if !members[m] {
				p.add(fmt.Sprintf("%s[%d]", f, i), "%q is not a member of the room (room.members)", m)
			}
		}
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
