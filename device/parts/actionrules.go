package parts

import (
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/chorus-robotics/chorus/device/robot"
	"github.com/chorus-robotics/chorus/drivers/face"
	"github.com/chorus-robotics/chorus/drivers/i2cbus"
	"github.com/chorus-robotics/chorus/drivers/servo"
	"github.com/chorus-robotics/chorus/drivers/strip"
	"github.com/chorus-robotics/chorus/runtime/protocol"
	"github.com/chorus-robotics/chorus/runtime/schema"
	"github.com/chorus-robotics/chorus/runtime/settings"
)

// The body's settings beside its shape (runtime/config keeps the shape):
// what each action driver's fields mean, their defaults, checks and the
// JSON Schema of its arguments, and the checks of the parts the actions
// move (body.servos, body.face, body.strip). runtime/config cannot know
// the kinds a build has, so the kinds' defaults are filled by what reads
// them here (Check and BuildBody), each time and idempotently.

// The action drivers.
const (
	DriverServo   = "servo"
	DriverLED     = "led"
	DriverFace    = "face"
	DriverGPIO    = "gpio"
	DriverCommand = "command"
)

// The action drivers' defaults.
const (
	DefaultPulse      = 200 * time.Millisecond // gpio
	DefaultActionTime = 5 * time.Second        // command
)

// BuiltinPoses are the poses every servo head has over joints named pan
// and tilt (drivers/servo.DefaultPoses).
var BuiltinPoses = []string{"nod", "shake", "look_left", "look_right", "look_up", "look_down", "center"}

// LEDPatterns are what a light does.
var LEDPatterns = []any{strip.Solid, strip.Blink, strip.Pulse, strip.Rainbow, strip.Off}

// DefaultMaxSpeed is how fast a joint turns unless it says (degrees per
// second).
const DefaultMaxSpeed = 180.0

// bodyDefaults fills the body's unset fields: its parts' from their
// drivers' defaults, each action's by its kind.
func bodyDefaults(c *robot.Config) {
	b := &c.Body
	if s := b.Servos; s != nil {
		i2cDefaults(&s.Bus, &s.Address, servo.DefaultAddress)
		if s.Tick == 0 {
			s.Tick = servo.DefaultTick
		}
		for i := range s.Joints {
			j := &s.Joints[i]
			if j.MaxSpeed == 0 {
				j.MaxSpeed = DefaultMaxSpeed
			}
			if j.MinPulse == 0 {
				j.MinPulse = servo.DefaultMinPulse
			}
			if j.MaxPulse == 0 {
				j.MaxPulse = servo.DefaultMaxPulse
			}
			if j.Range == 0 {
				j.Range = servo.DefaultRange
			}
		}
	}
	if f := b.Face; f != nil {
		i2cDefaults(&f.Bus, &f.Address, face.DefaultAddress)
		if f.Width == 0 {
			f.Width = face.DefaultWidth
		}
		if f.Height == 0 {
			f.Height = face.DefaultHeight
		}
	}
	if s := b.Strip; s != nil {
		def(&s.Port, strip.DefaultPort)
		if s.Brightness == 0 {
			s.Brightness = strip.DefaultBrightness
		}
	}
	for i := range c.Body.Actions {
		a := &c.Body.Actions[i]
		if k, ok := ActionKinds.Get(a.Driver); ok && k.Defaults != nil {
			k.Defaults(a, c.Body)
		}
	}
}

// ActionDef is a's declaration as the brain and the wire see it: its
// name, description and the JSON Schema of its arguments (its kind's, or
// a command's own).
func ActionDef(a robot.Action) protocol.ActionDef {
	s := map[string]any{"type": "object"}
	if k, ok := ActionKinds.Get(a.Driver); ok && k.Schema != nil {
		s = k.Schema(a)
	}
	b, _ := json.Marshal(s)
	return protocol.ActionDef{Name: a.Name, Description: a.Description, Schema: b}
}

// object is the schema of an object of exactly props.
func object(props map[string]any, required ...any) map[string]any {
	s := map[string]any{"type": "object", "properties": props, "additionalProperties": false}
	if len(required) > 0 {
		s["required"] = required
	}
	return s
}

// i2cDefaults fills an I²C part's bus and address.
func i2cDefaults(bus, address *string, addr uint16) {
	def(bus, i2cbus.DefaultBus)
	def(address, fmt.Sprintf("0x%02x", addr))
}

func def(v *string, d string) {
	if *v == "" {
		*v = d
	}
}

// checkBody reports every bad field of c's body: its parts, then each
// action's common fields and its kind's.
func checkBody(c *robot.Config) []string {
	bodyDefaults(c)
	var all settings.Problems
	p := all.In("body")
	b := c.Body
	if s := b.Servos; s != nil {
		checkServos(p.In("servos"), s)
	}
	if f := b.Face; f != nil {
		i2cAddress(p.In("face"), "address", f.Address)
		if f.Width != 128 || (f.Height != 64 && f.Height != 32) {
			p.Add("face", "width and height must be 128×64 or 128×32 (an SSD1306), got %d×%d", f.Width, f.Height)
		}
	}
	if s := b.Strip; s != nil {
		if s.Kind != "ws2812" && s.Kind != "apa102" {
			p.Add("strip.kind", "must be ws2812 or apa102, got %q", s.Kind)
		}
		if s.Count < 1 || s.Count > 1024 {
			p.Add("strip.count", "must be from 1 to 1024 LEDs, got %d", s.Count)
		}
		if s.Brightness < 0 || s.Brightness > 1 {
			p.Add("strip.brightness", "must be from 0 to 1, got %v", s.Brightness)
		}
	}
	if len(b.Actions) > protocol.MaxActions {
		p.Add("actions", "at most %d actions, got %d", protocol.MaxActions, len(b.Actions))
	}
	seen := map[string]bool{}
	for i, a := range b.Actions {
		ap := p.In(fmt.Sprintf("actions[%d]", i))
		if why := protocol.ValidActionName(a.Name); why != "" {
			ap.Add("name", "%s, got %q", why, a.Name)
		} else if seen[strings.ToLower(a.Name)] {
			ap.Add("name", "%q is named twice", a.Name)
		}
		seen[strings.ToLower(a.Name)] = true
		checkAction(ap, c, a)
	}
	return all.List()
}

// checkAction checks one action: its description, the fields other
// kinds own, then its kind's own check.
func checkAction(p *settings.Problems, c *robot.Config, a robot.Action) {
	if strings.TrimSpace(a.Description) == "" {
		p.Add("description", "required: what the model is told the action does")
	} else if len(a.Description) > protocol.MaxActionDescription {
		p.Add("description", "must be at most %d bytes", protocol.MaxActionDescription)
	}
	for _, kind := range ActionKinds.order {
		if k := ActionKinds.kinds[kind]; kind != a.Driver && k.Owns != nil {
			for _, field := range k.Owns(a) {
				p.Add(field, "is only for driver %s, got driver %q", kind, a.Driver)
			}
		}
	}
	k, ok := ActionKinds.Get(a.Driver)
	if !ok {
		p.Add("driver", "must be one of %s, got %q", strings.Join(ActionKinds.order, ", "), a.Driver)
		return
	}
	if k.Check != nil {
		k.Check(p, a, c)
	}
}

// set lists the names of the fields that are set.
func set(fields ...any) []string {
	var out []string
	for i := 0; i+1 < len(fields); i += 2 {
		if fields[i+1].(bool) {
			out = append(out, fields[i].(string))
		}
	}
	return out
}

var i2cAddr = regexp.MustCompile(`^(0x[0-9a-fA-F]{1,2}|[0-9]{1,3})$`)

// i2cAddress checks an I²C address: 0x03..0x77.
func i2cAddress(p *settings.Problems, field, s string) {
	var v int
	if !i2cAddr.MatchString(s) {
		p.Add(field, "must be an I²C address such as 0x40, got %q", s)
		return
	}
	if strings.HasPrefix(s, "0x") {
		fmt.Sscanf(s[2:], "%x", &v)
	} else {
		fmt.Sscanf(s, "%d", &v)
	}
	if v < 0x03 || v > 0x77 {
		p.Add(field, "must be a 7-bit I²C address from 0x03 to 0x77, got %s", s)
	}
}

// checkServos checks the servo head (p is body.servos' view).
func checkServos(p *settings.Problems, s *robot.Servos) {
	i2cAddress(p, "address", s.Address)
	if s.Tick < time.Millisecond || s.Tick > time.Second {
		p.Add("tick", "must be from 1ms to 1s, got %v", s.Tick)
	}
	names := map[string]bool{}
	channels := map[int]string{}
	if len(s.Joints) == 0 {
		p.Add("joints", "at least one joint is required (name, channel, min, max)")
	}
	for i, j := range s.Joints {
		f := fmt.Sprintf("joints[%d]", i)
		switch {
		case protocol.ValidActionName(j.Name) != "":
			p.Add(f+".name", "must be a letter followed by letters, digits, '_' or '-', got %q", j.Name)
		case names[j.Name]:
			p.Add(f+".name", "%q is named twice", j.Name)
		}
		names[j.Name] = true
		if j.Channel < 0 || j.Channel > 15 {
			p.Add(f+".channel", "must be from 0 to 15 (a PCA9685 channel), got %d", j.Channel)
		} else if other, dup := channels[j.Channel]; dup {
			p.Add(f+".channel", "channel %d is joint %q's already", j.Channel, other)
		}
		channels[j.Channel] = j.Name
		if !(j.Min < j.Max) || j.Min < -j.Range/2 || j.Max > j.Range/2 {
			p.Add(f, "min and max must be ordered within ±range/2 (%v), got %v and %v", j.Range/2, j.Min, j.Max)
		}
		if j.Center < j.Min || j.Center > j.Max {
			p.Add(f+".center", "must be within min and max, got %v", j.Center)
		}
		if j.MaxSpeed <= 0 || j.MaxSpeed > 2000 {
			p.Add(f+".max_speed", "must be from 0 to 2000 degrees per second, got %v", j.MaxSpeed)
		}
		if j.MinPulse < 100*time.Microsecond || j.MaxPulse > 3*time.Millisecond || j.MinPulse >= j.MaxPulse {
			p.Add(f, "min_pulse and max_pulse must be ordered, from 100µs to 3ms, got %v and %v", j.MinPulse, j.MaxPulse)
		}
		if j.Range <= 0 || j.Range > 360 {
			p.Add(f+".range", "must be from 0 to 360 degrees, got %v", j.Range)
		}
	}
	for name, steps := range s.Poses {
		f := "poses." + name
		if protocol.ValidActionName(name) != "" {
			p.Add(f, "a pose's name must be a letter followed by letters, digits, '_' or '-'")
		}
		if len(steps) == 0 || len(steps) > 64 {
			p.Add(f, "must have from 1 to 64 steps, got %d", len(steps))
		}
		for i, st := range steps {
			if st.Hold < 0 || st.Hold > 10*time.Second {
				p.Add(fmt.Sprintf("%s[%d].hold", f, i), "must be from 0 to 10s, got %v", st.Hold)
			}
			for j := range st.Angles {
				if !names[j] {
					p.Add(fmt.Sprintf("%s[%d].%s", f, i, j), "no joint is named %q (joints: %s)", j, strings.Join(slices.Sorted(mapKeys(names)), ", "))
				}
			}
		}
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

// checkServoAction checks a pose or a joint of the head.
func checkServoAction(p *settings.Problems, a robot.Action, c *robot.Config) {
	s := c.Body.Servos
	if s == nil {
		p.Add("driver", "servo needs body.servos (the PCA9685 and its joints)")
		return
	}
	joints := map[string]bool{}
	for _, j := range s.Joints {
		joints[j.Name] = true
	}
	switch {
	case a.Joint != "" && a.Pose != "":
		p.Add("", "a servo action plays a pose or turns a joint, not both")
	case a.Joint != "" && !joints[a.Joint]:
		p.Add("joint", "no joint is named %q in body.servos.joints", a.Joint)
	case a.Pose != "":
		if _, ok := s.Poses[a.Pose]; !ok && !slices.Contains(BuiltinPoses, a.Pose) {
			p.Add("pose", "no pose is named %q: body.servos.poses or one of %s", a.Pose, strings.Join(BuiltinPoses, ", "))
		} else if !ok && !builtinFits(a.Pose, joints) {
			p.Add("pose", "the built-in pose %q needs a joint named %s", a.Pose, builtinJoint(a.Pose))
		}
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

// checkCommandAction checks a program action: its program, timeout and
// the schema of its arguments.
func checkCommandAction(p *settings.Problems, a robot.Action, _ *robot.Config) {
	if len(a.Command) == 0 {
		p.Add("command", "required for driver command: the program, given the arguments as JSON on stdin")
	}
	robot.CheckCommand(p, "command", "command", a.Command)
	if a.Timeout < 10*time.Millisecond || a.Timeout > 5*time.Minute {
		p.Add("timeout", "must be from 10ms to 5m, got %v", a.Timeout)
	}
	if a.Schema == nil {
		return
	}
	raw, err := json.Marshal(a.Schema)
	switch {
	case err != nil:
		p.Add("schema", "cannot be written as JSON: %v", err)
	default:
		if _, err := schema.Compile(raw); err != nil {
			p.Add("schema", "%v", err)
		} else if err := (protocol.ActionDef{Name: "x", Description: "x", Schema: raw}).Validate(); err != nil {
			p.Add("schema", "%v", err)
		}
	}
}

// faceEmotions are what the face shows, as a schema's enum.
func faceEmotions() []any {
	var out []any
	for _, e := range face.Emotions() {
		out = append(out, e)
	}
	return out
}
