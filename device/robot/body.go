// The body's actions (docs/actions.md): the parts the robot
// moves and shows, and the actions its brain may call on them.

package robot

import (
	"time"
)

// Body is the robot's moving and showing parts and its actions.
type Body struct {
	Servos *Servos `yaml:"servos"` // a head of servos on a PCA9685
	Face   *Face   `yaml:"face"`   // an SSD1306 OLED showing eyes and a mouth
	Strip  *Strip  `yaml:"strip"`  // a WS2812 or APA102 LED strip
	// Emotion makes the emotion of every utterance show on the face and
	// the strip (or the status LED) while it is spoken, with no tool call;
	// default true.
	Emotion *bool    `yaml:"emotion"`
	Actions []Action `yaml:"actions"`
}

// Servos is a PCA9685 over I²C and the joints on its channels.
type Servos struct {
	Bus     string        `yaml:"bus"`     // default /dev/i2c-1
	Address string        `yaml:"address"` // default 0x40
	Tick    time.Duration `yaml:"tick"`    // one movement step; default 20 ms
	// (The body's defaults are its drivers', filled by device/parts.)
	Joints []Joint `yaml:"joints"`
	// Poses are named movements over the joints, beside the built-in ones
	// (nod, shake, look_left, look_right, look_up, look_down, center over
	// joints named pan and tilt).
	Poses map[string][]PoseStep `yaml:"poses"`
}

// Joint is one servo: its channel and the limits the body enforces.
type Joint struct {
	Name     string        `yaml:"name"`
	Channel  int           `yaml:"channel"`
	Min      float64       `yaml:"min"`       // degrees
	Max      float64       `yaml:"max"`       // degrees
	Center   float64       `yaml:"center"`    // degrees; where it rests
	MaxSpeed float64       `yaml:"max_speed"` // degrees per second; default 180
	MinPulse time.Duration `yaml:"min_pulse"` // at -range/2; default 500µs
	MaxPulse time.Duration `yaml:"max_pulse"` // at +range/2; default 2500µs
	Range    float64       `yaml:"range"`     // degrees the pulse span covers; default 180
}

// PoseStep is one step of a pose: joint angles (degrees) and how long
// to hold them.
type PoseStep struct {
	Angles map[string]float64 `yaml:",inline"`
	Hold   time.Duration      `yaml:"hold"`
}

// Face is a small monochrome OLED (SSD1306) over I²C.
type Face struct {
	Bus     string `yaml:"bus"`     // default /dev/i2c-1
	Address string `yaml:"address"` // default 0x3c
	Width   int    `yaml:"width"`   // default 128
	Height  int    `yaml:"height"`  // default 64: 128×64 or 128×32
}

// Strip is an RGB LED strip on SPI.
type Strip struct {
	Kind       string  `yaml:"kind"`       // ws2812, apa102
	Port       string  `yaml:"port"`       // default /dev/spidev0.0
	Count      int     `yaml:"count"`      // LEDs
	Brightness float64 `yaml:"brightness"` // 0..1; default 0.5
}

// Action is one thing the brain may ask the body to do.
type Action struct {
	Name        string `yaml:"name"`
	Description string `yaml:"description"`
	// Driver is what does it: servo, led, face, gpio or command (the
	// action drivers of device/parts, which check the fields below).
	Driver string `yaml:"driver"`
	// Schema is the JSON Schema of the arguments: a command's own (default
	// any object); the other drivers' arguments are theirs.
	Schema map[string]any `yaml:"schema"`

	Pose  string `yaml:"pose"`  // servo: the pose it plays (default: the action's name unless joint is set)
	Joint string `yaml:"joint"` // servo: {angle} turns this joint

	Target string `yaml:"target"` // led: strip (default when body.strip is set) or status

	Pin       string        `yaml:"pin"`        // gpio: the pin pulsed
	Pulse     time.Duration `yaml:"pulse"`      // gpio: default 200 ms
	ActiveLow bool          `yaml:"active_low"` // gpio: the pulse is low

	Command []string      `yaml:"command"` // command: the program, the arguments as JSON on stdin
	Timeout time.Duration `yaml:"timeout"` // command: default 5 s
}

// EmotionShown reports whether utterances' emotions show on the body.
func (b Body) EmotionShown() bool { return b.Emotion == nil || *b.Emotion }
