// Defaults: each section's are its owning package's (SetDefaults there);
// what is left here are the drivers' shared fields, the bridge's, the
// log's and the fields that depend on other sections.

package config

// The drivers', the bridge's and the log's defaults.
const (
	DefaultCamera         = "none"
	DefaultCameraWidth    = 640
	DefaultCameraHeight   = 480
	DefaultCameraFPS      = 10
	DefaultCameraQuality  = 80
	DefaultMaxFrame       = 4 << 20 // one JPEG of a command camera
	DefaultAudio          = "null"
	DefaultTTS            = "auto"
	DefaultTTSMaxChars    = 2000
	DefaultMic            = "none"
	DefaultMicRate        = 16000 // what speech-to-text engines take
	DefaultHTTPListen     = "127.0.0.1:9100"
	DefaultBridgeMaxFrame = 64 << 10
	DefaultLogLevel       = "info"
	DefaultLogFormat      = "text"
)

// SetDefaults fills every unset field with its default: each section's
// owning package fills its own (floor, companion, repetition, query,
// hearing, brain, bus, broker); the drivers' shared fields, the bridge's
// and the log's live here, since runtime/ never imports the device. The
// body's (body.*) are its drivers', filled by device/parts.
func (c *Config) SetDefaults() {
	c.Room.VoteSettings.SetDefaults()
	c.Room.TurnSettings.SetDefaults()
	c.Room.Repetition.SetDefaults()
	def(&c.Room.Mode, ModeTurn)
	def(&c.Room.FloorInstance, c.Device.ID)
	c.MQTT.Settings.SetDefaults()
	c.MQTT.Embedded.SetDefaults()
	if c.MQTT.Broker == "" && c.MQTT.Embedded.Enabled {
		c.MQTT.Broker = "tcp://" + c.MQTT.Embedded.Listen
	}
	def(&c.MQTT.Username, c.Identity())
	c.Brain.SetDefaults()
	d := &c.Drivers
	def(&d.Camera.Kind, DefaultCamera)
	defInt(&d.Camera.Width, DefaultCameraWidth)
	defInt(&d.Camera.Height, DefaultCameraHeight)
	defInt(&d.Camera.FPS, DefaultCameraFPS)
	defInt(&d.Camera.Quality, DefaultCameraQuality)
	if d.Camera.Kind == "command" {
		defInt(&d.Camera.MaxFrame, DefaultMaxFrame)
	}
	def(&d.Audio.Kind, DefaultAudio)
	def(&d.TTS.Kind, DefaultTTS)
	defInt(&d.TTS.MaxChars, DefaultTTSMaxChars)
	def(&d.Mic.Kind, DefaultMic)
	defInt(&d.Mic.SampleRate, DefaultMicRate)
	c.haDefaults()
	c.Hearing.SetDefaults()
	c.Query.SetDefaults()
	ws := &c.HTTP.WebSocket
	defInt(&ws.MaxFrame, DefaultBridgeMaxFrame)
	defInt(&ws.MaxDeviceFrame, c.Query.MaxResult)
	def(&c.HTTP.Listen, DefaultHTTPListen)
	def(&c.Log.Level, DefaultLogLevel)
	def(&c.Log.Format, DefaultLogFormat)
}

func def(v *string, d string) {
	if *v == "" {
		*v = d
	}
}

func defInt(v *int, d int) {
	if *v == 0 {
		*v = d
	}
}
