// The body's actions (DESIGN.md, "Body actions"): the parts the robot
// moves and shows, and the actions its brain may call on them.

package config

import (
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/chorus-robotics/chorus/runtime/protocol"
	"github.com/chorus-robotics/chorus/runtime/schema"
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
	Joints  []Joint       `yaml:"joints"`
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
	// Driver is what does it: servo, led, face, gpio or command.
	Driver string `yaml:"driver"`
	// Schema is the JSON Schema of the arguments: a command's own (default
	// any object); the other drivers' arguments are theirs (ActionSchema).
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

// The action drivers.
const (
	DriverServo   = "servo"
	DriverLED     = "led"
	DriverFace    = "face"
	DriverGPIO    = "gpio"
	DriverCommand = "command"
)

// ActionDrivers lists the drivers an action may name.
var ActionDrivers = []string{DriverServo, DriverLED, DriverFace, DriverGPIO, DriverCommand}

// Action defaults.
const (
	DefaultServoAddress = "0x40"
	DefaultFaceAddress  = "0x3c"
	DefaultI2CBus       = "/dev/i2c-1"
	DefaultSPIPort      = "/dev/spidev0.0"
	DefaultPulse        = 200 * time.Millisecond
	DefaultActionTime   = 5 * time.Second
	DefaultServoTick    = 20 * time.Millisecond
	DefaultMaxSpeed     = 180.0
)

// BuiltinPoses are the poses every servo head has over joints named pan
// and tilt (drivers/servo.DefaultPoses).
var BuiltinPoses = []string{"nod", "shake", "look_left", "look_right", "look_up", "look_down", "center"}

// FaceEmotions are what the face shows.
var FaceEmotions = []any{"neutral", "happy", "sad", "angry", "surprised", "sleepy"}

// LEDPatterns are what a light does.
var LEDPatterns = []any{"solid", "blink", "pulse", "rainbow", "off"}

// ActionSchema is the JSON Schema of a's arguments: what the driver takes,
// or a command's own.
func (a Action) ActionSchema() map[string]any {
	obj := func(props map[string]any, required ...any) map[string]any {
		s := map[string]any{"type": "object", "properties": props, "additionalProperties": false}
		if len(required) > 0 {
			s["required"] = required
		}
		return s
	}
	switch a.Driver {
	case DriverServo:
		if a.Joint != "" {
			return obj(map[string]any{"angle": map[string]any{"type": "number", "description": "degrees from the joint's centre; the body keeps it within its limits"}}, "angle")
		}
		return obj(map[string]any{})
	case DriverLED:
		return obj(map[string]any{
			"color":   map[string]any{"type": "string", "description": "a colour name (red, green, blue, white, yellow, orange, purple, pink, cyan, off) or #rrggbb"},
			"pattern": map[string]any{"type": "string", "enum": LEDPatterns},
			"seconds": map[string]any{"type": "number", "minimum": 0, "maximum": 60, "description": "how long; 0 or absent: until the next light"},
		})
	case DriverFace:
		return obj(map[string]any{"emotion": map[string]any{"type": "string", "enum": FaceEmotions}}, "emotion")
	case DriverGPIO:
		return obj(map[string]any{})
	}
	if a.Schema != nil {
		return a.Schema
	}
	return map[string]any{"type": "object"}
}

// Def is a's declaration as the brain and the wire see it.
func (a Action) Def() protocol.ActionDef {
	b, _ := json.Marshal(a.ActionSchema())
	return protocol.ActionDef{Name: a.Name, Description: a.Description, Schema: b}
}

// ActionDefs are the declarations of the body's actions.
func (c *Config) ActionDefs() []protocol.ActionDef {
	var out []protocol.ActionDef
	for _, a := range c.Body.Actions {
		out = append(out, a.Def())
	}
	return out
}

// EmotionShown reports whether utterances' emotions show on the body.
func (b Body) EmotionShown() bool { return b.Emotion == nil || *b.Emotion }

func (c *Config) bodyDefaults() {
	b := &c.Body
	if s := b.Servos; s != nil {
		def(&s.Bus, DefaultI2CBus)
		def(&s.Address, DefaultServoAddress)
		if s.Tick == 0 {
			s.Tick = DefaultServoTick
		}
		for i := range s.Joints {
			j := &s.Joints[i]
			if j.MaxSpeed == 0 {
				j.MaxSpeed = DefaultMaxSpeed
			}
			if j.MinPulse == 0 {
				j.MinPulse = 500 * time.Microsecond
			}
			if j.MaxPulse == 0 {
				j.MaxPulse = 2500 * time.Microsecond
			}
			if j.Range == 0 {
				j.Range = 180
			}
		}
	}
	if f := b.Face; f != nil {
		def(&f.Bus, DefaultI2CBus)
		def(&f.Address, DefaultFaceAddress)
		if f.Width == 0 {
			f.Width = 128
		}
		if f.Height == 0 {
			f.Height = 64
		}
	}
	if s := b.Strip; s != nil {
		def(&s.Port, DefaultSPIPort)
		if s.Brightness == 0 {
			s.Brightness = 0.5
		}
	}
	for i := range b.Actions {
		a := &b.Actions[i]
		switch a.Driver {
		case DriverServo:
			if a.Pose == "" && a.Joint == "" {
				a.Pose = a.Name
			}
		case DriverLED:
			if a.Target == "" {
				a.Target = "status"
				if b.Strip != nil {
					a.Target = "strip"
				}
			}
		case DriverGPIO:
			if a.Pulse == 0 {
				a.Pulse = DefaultPulse
			}
		case DriverCommand:
			if a.Timeout == 0 {
				a.Timeout = DefaultActionTime
			}
		}
	}
}

func def(v *string, d string) {
	if *v == "" {
		*v = d
	}
}

var i2cAddr = regexp.MustCompile(`^(0x[0-9a-fA-F]{1,2}|[0-9]{1,3})$`)

// addr checks an I²C address: 0x03..0x77.
func (p *problems) addr(field, s string) {
	var v int
	if !i2cAddr.MatchString(s) {
		p.add(field, "must be an I²C address such as 0x40, got %q", s)
		return
	}
	if strings.HasPrefix(s, "0x") {
		fmt.Sscanf(s[2:], "%x", &v)
	} else {
		fmt.Sscanf(s, "%d", &v)
	}
	if v < 0x03 || v > 0x77 {
		p.add(field, "must be a 7-bit I²C address from 0x03 to 0x77, got %s", s)
	}
}

func (c *Config) validateBody(p *problems) {
	b := c.Body
	if s := b.Servos; s != nil {
		p.addr("body.servos.address", s.Address)
		if s.Tick < time.Millisecond || s.Tick > time.Second {
			p.add("body.servos.tick", "must be from 1ms to 1s, got %v", s.Tick)
		}
		names := map[string]bool{}
		channels := map[int]string{}
		if len(s.Joints) == 0 {
			p.add("body.servos.joints", "at least one joint is required (name, channel, min, max)")
		}
		for i, j := range s.Joints {
			f := fmt.Sprintf("body.servos.joints[%d]", i)
			switch {
			case protocol.ValidActionName(j.Name) != "":
				p.add(f+".name", "must be a letter followed by letters, digits, '_' or '-', got %q", j.Name)
			case names[j.Name]:
				p.add(f+".name", "%q is named twice", j.Name)
			}
			names[j.Name] = true
			if j.Channel < 0 || j.Channel > 15 {
				p.add(f+".channel", "must be from 0 to 15 (a PCA9685 channel), got %d", j.Channel)
			} else if other, dup := channels[j.Channel]; dup {
				p.add(f+".channel", "channel %d is joint %q's already", j.Channel, other)
			}
			channels[j.Channel] = j.Name
			if !(j.Min < j.Max) || j.Min < -j.Range/2 || j.Max > j.Range/2 {
				p.add(f, "min and max must be ordered within ±range/2 (%v), got %v and %v", j.Range/2, j.Min, j.Max)
			}
			if j.Center < j.Min || j.Center > j.Max {
				p.add(f+".center", "must be within min and max, got %v", j.Center)
			}
			if j.MaxSpeed <= 0 || j.MaxSpeed > 2000 {
				p.add(f+".max_speed", "must be from 0 to 2000 degrees per second, got %v", j.MaxSpeed)
			}
			if j.MinPulse < 100*time.Microsecond || j.MaxPulse > 3*time.Millisecond || j.MinPulse >= j.MaxPulse {
				p.add(f, "min_pulse and max_pulse must be ordered, from 100µs to 3ms, got %v and %v", j.MinPulse, j.MaxPulse)
			}
			if j.Range <= 0 || j.Range > 360 {
				p.add(f+".range", "must be from 0 to 360 degrees, got %v", j.Range)
			}
		}
		for name, steps := range s.Poses {
			f := "body.servos.poses." + name
			if protocol.ValidActionName(name) != "" {
				p.add(f, "a pose's name must be a letter followed by letters, digits, '_' or '-'")
			}
			if len(steps) == 0 || len(steps) > 64 {
				p.add(f, "must have from 1 to 64 steps, got %d", len(steps))
			}
			for i, st := range steps {
				if st.Hold < 0 || st.Hold > 10*time.Second {
					p.add(fmt.Sprintf("%s[%d].hold", f, i), "must be from 0 to 10s, got %v", st.Hold)
				}
				for j := range st.Angles {
					if !names[j] {
						p.add(fmt.Sprintf("%s[%d].%s", f, i, j), "no joint is named %q (joints: %s)", j, strings.Join(slices.Sorted(mapKeys(names)), ", "))
					}
				}
			}
		}
	}
	if f := b.Face; f != nil {
		p.addr("body.face.address", f.Address)
		if f.Width != 128 || (f.Height != 64 && f.Height != 32) {
			p.add("body.face", "width and height must be 128×64 or 128×32 (an SSD1306), got %d×%d", f.Width, f.Height)
		}
	}
	if s := b.Strip; s != nil {
		if !oneOf(s.Kind, "ws2812", "apa102") {
			p.add("body.strip.kind", "must be ws2812 or apa102, got %q", s.Kind)
		}
		if s.Count < 1 || s.Count > 1024 {
			p.add("body.strip.count", "must be from 1 to 1024 LEDs, got %d", s.Count)
		}
		if s.Brightness < 0 || s.Brightness > 1 {
			p.add("body.strip.brightness", "must be from 0 to 1, got %v", s.Brightness)
		}
	}
	if len(b.Actions) > protocol.MaxActions {
		p.add("body.actions", "at most %d actions, got %d", protocol.MaxActions, len(b.Actions))
	}
	seen := map[string]bool{}
	for i, a := range b.Actions {
		f := fmt.Sprintf("body.actions[%d]", i)
		if why := protocol.ValidActionName(a.Name); why != "" {
			p.add(f+".name", "%s, got %q", why, a.Name)
		} else if seen[strings.ToLower(a.Name)] {
			p.add(f+".name", "%q is named twice", a.Name)
		}
		seen[strings.ToLower(a.Name)] = true
		c.validateAction(p, f, a)
	}
}

func mapKeys(m map[string]bool) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// validateAction checks one action's fields for its driver.
func (c *Config) validateAction(p *problems, f string, a Action) {
	b := c.Body
	if strings.TrimSpace(a.Description) == "" {
		p.add(f+".description", "required: what the model is told the action does")
	} else if len(a.Description) > protocol.MaxActionDescription {
		p.add(f+".description", "must be at most %d bytes", protocol.MaxActionDescription)
	}
	only := func(field string, set bool, driver string) {
		if set && a.Driver != driver {
			p.add(f+"."+field, "is only for driver %s, got driver %q", driver, a.Driver)
		}
	}
	only("pose", a.Pose != "" && a.Driver != DriverServo, DriverServo)
	only("joint", a.Joint != "", DriverServo)
	only("target", a.Target != "", DriverLED)
	only("pin", a.Pin != "", DriverGPIO)
	only("pulse", a.Pulse != 0, DriverGPIO)
	only("active_low", a.ActiveLow, DriverGPIO)
	only("command", len(a.Command) > 0, DriverCommand)
	only("timeout", a.Timeout != 0, DriverCommand)
	only("schema", a.Schema != nil, DriverCommand)
	switch a.Driver {
	case DriverServo:
		if b.Servos == nil {
			p.add(f+".driver", "servo needs body.servos (the PCA9685 and its joints)")
			return
		}
		joints := map[string]bool{}
		for _, j := range b.Servos.Joints {
			joints[j.Name] = true
		}
		switch {
		case a.Joint != "" && a.Pose != "":
			p.add(f, "a servo action plays a pose or turns a joint, not both")
		case a.Joint != "" && !joints[a.Joint]:
			p.add(f+".joint", "no joint is named %q in body.servos.joints", a.Joint)
		case a.Pose != "":
			if _, ok := b.Servos.Poses[a.Pose]; !ok && !slices.Contains(BuiltinPoses, a.Pose) {
				p.add(f+".pose", "no pose is named %q: body.servos.poses or one of %s", a.Pose, strings.Join(BuiltinPoses, ", "))
			} else if ok == false && !builtinFits(a.Pose, joints) {
				p.add(f+".pose", "the built-in pose %q needs a joint named %s", a.Pose, builtinJoint(a.Pose))
			}
		}
	case DriverLED:
		switch a.Target {
		case "strip":
			if b.Strip == nil {
				p.add(f+".target", "strip needs body.strip")
			}
		case "status":
			if c.Drivers.GPIO.LED == "" {
				p.add(f+".target", "status needs drivers.gpio.led (the status LED's pin)")
			}
		default:
			p.add(f+".target", "must be strip or status, got %q", a.Target)
		}
	case DriverFace:
		if b.Face == nil {
			p.add(f+".driver", "face needs body.face (the OLED)")
		}
	case DriverGPIO:
		if a.Pin == "" {
			p.add(f+".pin", "required for driver gpio: the pin pulsed, such as GPIO17")
		}
		if a.Pulse < time.Millisecond || a.Pulse > 10*time.Second {
			p.add(f+".pulse", "must be from 1ms to 10s, got %v", a.Pulse)
		}
	case DriverCommand:
		if len(a.Command) == 0 {
			p.add(f+".command", "required for driver command: the program, given the arguments as JSON on stdin")
		}
		p.command(f, "command", a.Command)
		if a.Timeout < 10*time.Millisecond || a.Timeout > 5*time.Minute {
			p.add(f+".timeout", "must be from 10ms to 5m, got %v", a.Timeout)
		}
		if a.Schema != nil {
			raw, err := json.Marshal(a.Schema)
			switch {
			case err != nil:
				p.add(f+".schema", "cannot be written as JSON: %v", err)
			default:
				if _, err := schema.Compile(raw); err != nil {
					p.add(f+".schema", "%v", err)
				} else if err := (protocol.ActionDef{Name: "x", Description: "x", Schema: raw}).Validate(); err != nil {
					p.add(f+".schema", "%v", err)
				}
			}
		}
	default:
		p.add(f+".driver", "must be one of %s, got %q", strings.Join(ActionDrivers, ", "), a.Driver)
	}
}

// builtinJoint is the joint a built-in pose moves.
func builtinJoint(pose string) string {
	switch pose {
	case "nod", "look_up", "look_down":
		return "tilt"
	case "shake", "look_left", "look_right":
		return "pan"
	}
	return "pan or tilt"
}

func builtinFits(pose string, joints map[string]bool) bool {
	if pose == "center" {
		return joints["pan"] || joints["tilt"]
	}
	return joints[builtinJoint(pose)]
}
