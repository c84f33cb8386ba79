// Defaults: the conversation runtime's come from the packages that own
// them (TestDefaultsAreTheOwners); the body's live here.

package config

import (
	"time"

	"github.com/chorus-robotics/chorus/runtime/brain/llm"
	"github.com/chorus-robotics/chorus/runtime/companion"
	"github.com/chorus-robotics/chorus/runtime/floor"
	"github.com/chorus-robotics/chorus/runtime/hearing"
	"github.com/chorus-robotics/chorus/runtime/protocol"
	"github.com/chorus-robotics/chorus/runtime/query"
	"github.com/chorus-robotics/chorus/runtime/realtime"
	"github.com/chorus-robotics/chorus/runtime/repetition"
	"github.com/chorus-robotics/chorus/runtime/topic"
)

// The body's hearing defaults (the room's, User and Window, are
// protocol's and runtime/hearing's).
const (
	DefaultMicRate           = 16000 // what speech-to-text engines take
	DefaultHearingTail       = 300 * time.Millisecond
	DefaultSTTTimeout        = 10 * time.Second
	DefaultVADAggressiveness = 2
	DefaultPreRoll           = 300 * time.Millisecond
	DefaultHangover          = 500 * time.Millisecond
	DefaultMinUtterance      = 300 * time.Millisecond
	DefaultMaxUtterance      = 15 * time.Second
	DefaultListenFor         = 8 * time.Second
)

// DefaultRealtime is the seed's tuning table.
func DefaultRealtime() Realtime {
	var r Realtime
	l := realtime.DefaultLimits()
	r.PhaseTimeout, r.SilenceTimeout, r.RateLimit = l.PhaseTimeout, l.SilenceTimeout, l.RateLimit
	r.MaxCount.PerAgent, r.MaxCount.PerDay, r.MaxLength.PerTalk = l.PerAgent, l.PerDay, l.PerTalk
	r.PollInterval, r.SpeakCooldown = realtime.DefaultPollInterval, realtime.DefaultSpeakCooldown
	return r
}

// SetDefaults fills every unset field with its default. A default of the
// conversation runtime is its owning package's (floor, companion,
// repetition, realtime, query, topic, brain/llm): TestDefaultsAreTheOwners
// holds them equal. The body's (drivers, bridge, HTTP, log) live here,
// since runtime/ never imports the body.
func (c *Config) SetDefaults() {
	if c.Room.VoteTimeout == 0 {
		c.Room.VoteTimeout = floor.DefaultVoteTimeout
	}
	if c.Room.VoteCeiling == 0 {
		c.Room.VoteCeiling = max(floor.DefaultVoteCeiling, c.Room.VoteTimeout)
	}
	if c.Room.MaxPending == 0 {
		c.Room.MaxPending = floor.DefaultMaxPending
	}
	if c.Room.Pause == 0 {
		c.Room.Pause = companion.DefaultPause
	}
	if c.Room.Mode == "" {
		c.Room.Mode = ModeTurn
	}
	if c.Room.Turns == "" {
		c.Room.Turns = TurnsOverlapped
	}
	if c.Room.BargeIn == "" {
		c.Room.BargeIn = string(protocol.BargeInSentence)
	}
	if c.Room.History == 0 {
		c.Room.History = companion.DefaultHistory
	}
	if c.Room.Repetition.Threshold == 0 {
		c.Room.Repetition.Threshold = repetition.DefaultThreshold
	}
	if c.Room.Repetition.Window == 0 {
		c.Room.Repetition.Window = repetition.DefaultWindow
	}
	if c.Room.Repetition.Judge == "" {
		c.Room.Repetition.Judge = JudgeModel
	}
	if c.Room.Repetition.JudgeEvery == 0 {
		c.Room.Repetition.JudgeEvery = companion.DefaultJudgeEvery
	}
	if c.Room.Repetition.JudgeTimeout == 0 {
		c.Room.Repetition.JudgeTimeout = companion.DefaultJudgeTimeout
	}
	if c.Room.FloorInstance == "" {
		c.Room.FloorInstance = c.Device.ID
	}
	if c.MQTT.Prefix == "" {
		c.MQTT.Prefix = topic.DefaultPrefix
	}
	if len(c.MQTT.FloorIDs) == 0 {
		c.MQTT.FloorIDs = []string{topic.DefaultFloorID}
	}
	if c.MQTT.Embedded.Enabled && c.MQTT.Embedded.Listen == "" {
		c.MQTT.Embedded.Listen = "127.0.0.1:1883"
	}
	if c.MQTT.Broker == "" && c.MQTT.Embedded.Enabled {
		c.MQTT.Broker = "tcp://" + c.MQTT.Embedded.Listen
	}
	if c.MQTT.Username == "" {
		c.MQTT.Username = c.Identity()
	}
	if c.Brain.Provider == "" {
		c.Brain.Provider = "rule"
	}
	if c.Brain.Timeout == 0 {
		c.Brain.Timeout = companion.DefaultThinkTimeout
	}
	if c.Brain.MaxUtterance == 0 {
		c.Brain.MaxUtterance = llm.DefaultMaxUtterance
	}
	d := &c.Drivers
	if d.Camera.Kind == "" {
		d.Camera.Kind = "none"
	}
	if d.Camera.Width == 0 {
		d.Camera.Width = 640
	}
	if d.Camera.Height == 0 {
		d.Camera.Height = 480
	}
	if d.Camera.FPS == 0 {
		d.Camera.FPS = 10
	}
	if d.Camera.Quality == 0 {
		d.Camera.Quality = 80
	}
	if d.Camera.Kind == "command" && d.Camera.MaxFrame == 0 {
		d.Camera.MaxFrame = DefaultMaxFrame
	}
	if d.Audio.Kind == "" {
		d.Audio.Kind = "null"
	}
	if d.TTS.Kind == "" {
		d.TTS.Kind = "auto"
	}
	if d.TTS.MaxChars == 0 {
		d.TTS.MaxChars = 2000
	}
	if d.Mic.Kind == "" {
		d.Mic.Kind = "none"
	}
	if d.Mic.SampleRate == 0 {
		d.Mic.SampleRate = DefaultMicRate
	}
	c.bodyDefaults()
	c.haDefaults()
	h := &c.Hearing
	if h.User == "" {
		h.User = protocol.DefaultHeardUser
	}
	if h.Window == 0 {
		h.Window = hearing.DefaultWindow
	}
	if h.Tail == 0 {
		h.Tail = DefaultHearingTail
	}
	if h.Wake.Kind == "" {
		h.Wake.Kind = "none"
	}
	if h.Wake.ListenFor == 0 {
		h.Wake.ListenFor = DefaultListenFor
	}
	if h.STT.Timeout == 0 {
		h.STT.Timeout = DefaultSTTTimeout
	}
	if h.VAD.Aggressiveness == nil {
		a := DefaultVADAggressiveness
		h.VAD.Aggressiveness = &a
	}
	if h.VAD.PreRoll == 0 {
		h.VAD.PreRoll = DefaultPreRoll
	}
	if h.VAD.Hangover == 0 {
		h.VAD.Hangover = DefaultHangover
	}
	if h.VAD.MinUtterance == 0 {
		h.VAD.MinUtterance = DefaultMinUtterance
	}
	if h.VAD.MaxUtterance == 0 {
		h.VAD.MaxUtterance = DefaultMaxUtterance
	}
	if c.Query.Timeout == 0 {
		c.Query.Timeout = query.DefaultTimeout
	}
	if c.Query.MaxPending == 0 {
		c.Query.MaxPending = query.DefaultMaxPending
	}
	if c.Query.MaxResult == 0 {
		c.Query.MaxResult = protocol.DefaultMaxResultBytes
	}
	if c.HTTP.WebSocket.MaxFrame == 0 {
		c.HTTP.WebSocket.MaxFrame = 64 << 10
	}
	if c.HTTP.WebSocket.MaxDeviceFrame == 0 {
		c.HTTP.WebSocket.MaxDeviceFrame = c.Query.MaxResult
	}
	if c.HTTP.Listen == "" {
		c.HTTP.Listen = "127.0.0.1:9100"
	}
	if c.Log.Level == "" {
		c.Log.Level = "info"
	}
	if c.Log.Format == "" {
		c.Log.Format = "text"
	}
}
