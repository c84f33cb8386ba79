package parts

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"time"

	"periph.io/x/conn/v3/gpio"
	"periph.io/x/conn/v3/i2c"

	"github.com/chorus-robotics/chorus/device/act"
	"github.com/chorus-robotics/chorus/device/robot"
	"github.com/chorus-robotics/chorus/drivers/face"
	dgpio "github.com/chorus-robotics/chorus/drivers/gpio"
	"github.com/chorus-robotics/chorus/drivers/i2cbus"
	actprogram "github.com/chorus-robotics/chorus/drivers/program"
	"github.com/chorus-robotics/chorus/drivers/pulse"
	"github.com/chorus-robotics/chorus/drivers/servo"
	"github.com/chorus-robotics/chorus/runtime/settings"
)

// The action drivers (body.actions[].driver) are a group of the registry
// like the cameras and the audio outputs (issue 30, item 3): each kind
// says what it is, what it needs on this machine (CheckBody, chorusd
// --check-config), how the doctor probes it, and how an action of its kind
// is made from the body's opened parts. A new body part is one package
// and one ActionKinds.Add; --list, --check-config and --doctor learn it
// from here.

// ActionKind is one action driver.
type ActionKind struct {
	Kind  string
	About string
	// Needs reports what c's actions of this kind, or the part they move,
	// lack on this machine ("field: what is missing"); nil: nothing.
	Needs func(c *robot.Config) []string
	// Probe checks on this machine that the hardware of c's actions of
	// this kind answers (chorusd --doctor); nil: nothing to probe.
	Probe func(ctx context.Context, c *robot.Config, timeout time.Duration) []Probe
	// Owns lists the fields of this kind's own that a sets (an action of
	// another kind may not set them).
	Owns func(a robot.Action) []string
	// Defaults fills a's unset fields of this kind (b: the body it is on).
	Defaults func(a *robot.Action, b robot.Body)
	// Check reports a's bad fields of this kind to p (the action's view).
	Check func(p *settings.Problems, a robot.Action, c *robot.Config)
	// Schema is the JSON Schema of a's arguments.
	Schema func(a robot.Action) map[string]any
	// Make makes action a of this kind on body b.
	Make func(b *Body, c *robot.Config, a robot.Action, k making) (act.Action, error)
}

// Probe is one thing the doctor checked: Err nil when it answered.
type Probe struct {
	Name   string
	Detail string // what was seen when it answered
	Fix    string // what to do when it did not
	Err    error
}

// making is what an action is made with beside its body and config.
type making struct {
	unavailable map[string]error // parts that could not be opened, by part
	status      StatusLight
	speech      func() context.Context
}

// fail is an action that answers with why its part is unavailable.
func (k making) fail(part string) act.Doer {
	err := k.unavailable[part]
	return func(context.Context, json.RawMessage) (string, error) { return "", err }
}

// actionKinds is the group.
type actionKinds struct {
	kinds map[string]ActionKind
	order []string // as added: how errors list them
}

// ActionKinds are the action drivers of this build; every build has them
// all (periph is pure Go).
var ActionKinds = &actionKinds{kinds: map[string]ActionKind{}}

// Add registers k; a kind registered twice is a programming error.
func (g *actionKinds) Add(k ActionKind) {
	if _, dup := g.kinds[k.Kind]; dup {
		panic("parts: action driver " + k.Kind + " registered twice")
	}
	g.kinds[k.Kind] = k
	g.order = append(g.order, k.Kind)
}

// Kinds lists the kinds, sorted.
func (g *actionKinds) Kinds() []string {
	out := make([]string, 0, len(g.kinds))
	for k := range g.kinds {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// Get returns kind's driver.
func (g *actionKinds) Get(kind string) (ActionKind, bool) {
	k, ok := g.kinds[kind]
	return k, ok
}

// ProbeBody runs every kind's probe on c (chorusd --doctor).
func ProbeBody(ctx context.Context, c *robot.Config, timeout time.Duration) []Probe {
	bodyDefaults(c)
	var out []Probe
	for _, kind := range ActionKinds.Kinds() {
		if k := ActionKinds.kinds[kind]; k.Probe != nil {
			out = append(out, k.Probe(ctx, c, timeout)...)
		}
	}
	return out
}

const (
	i2cFix  = "enable I²C (raspi-config, or dtparam=i2c_arm=on in config.txt) and check the wiring"
	i2cLong = "enable I²C (raspi-config, or dtparam=i2c_arm=on in /boot/firmware/config.txt), check the wiring and the address (i2cdetect -y 1), put the chorus user in the i2c group, or correct "
	pinFix  = "name a pin this board has (periph names such as GPIO17), check that the chorus user is in the gpio group, or correct "
)

// devThere reports a /dev path the config names that this machine lacks.
func devThere(field, path, what string) []string {
	if strings.HasPrefix(path, "/dev/") && !fileExists(path) {
		return []string{fmt.Sprintf("%s: %s is not there on this machine: %s", field, path, what)}
	}
	return nil
}

// probeI2C opens bus and asks the device at address to answer.
func probeI2C(ctx context.Context, name, field, bus, address, what string, timeout time.Duration, answers func(context.Context, i2c.Bus, uint16) error) Probe {
	p := Probe{Name: fmt.Sprintf("%s (%s at %s on %s)", name, what, address, bus), Fix: i2cLong + field, Detail: "answers"}
	addr, err := i2cbus.ParseAddr(address)
	if err != nil {
		p.Fix, p.Err = "correct "+field+".address", err
		return p
	}
	dev, err := i2cbus.Open(bus)
	if err != nil {
		p.Err = err
		return p
	}
	defer dev.Close()
	pctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	p.Err = answers(pctx, dev, addr)
	return p
}

// ofKind lists c's actions of kind with their indexes.
func ofKind(c *robot.Config, kind string) map[int]robot.Action {
	out := map[int]robot.Action{}
	for i, a := range c.Body.Actions {
		if a.Driver == kind {
			out[i] = a
		}
	}
	return out
}

func sortedIdx(m map[int]robot.Action) []int {
	out := make([]int, 0, len(m))
	for i := range m {
		out = append(out, i)
	}
	sort.Ints(out)
	return out
}

// i2cPart is a body part on an I²C bus, as --check-config and --doctor
// see it: at returns its bus and address (ok false: the body has none).
type i2cPart struct {
	field, name, chip string
	at                func(c *robot.Config) (bus, address string, ok bool)
	answers           func(context.Context, i2c.Bus, uint16) error // the probe
}

func (p i2cPart) needs(c *robot.Config) []string {
	if bus, _, ok := p.at(c); ok {
		return devThere(p.field+".bus", bus, i2cFix)
	}
	return nil
}

func (p i2cPart) probe(ctx context.Context, c *robot.Config, timeout time.Duration) []Probe {
	if bus, address, ok := p.at(c); ok {
		return []Probe{probeI2C(ctx, p.name, p.field, bus, address, p.chip, timeout, p.answers)}
	}
	return nil
}

var (
	servoPart = i2cPart{field: "body.servos", name: "servo board", chip: "PCA9685", answers: i2cbus.Probe, // a PCA9685 reads back
		at: func(c *robot.Config) (string, string, bool) {
			if s := c.Body.Servos; s != nil {
				return s.Bus, s.Address, true
			}
			return "", "", false
		}}
	facePart = i2cPart{field: "body.face", name: "face", chip: "SSD1306",
		answers: func(ctx context.Context, bus i2c.Bus, addr uint16) error {
			return i2cbus.ProbeWrite(ctx, bus, addr, face.ProbeBytes()) // an SSD1306 may refuse reads
		},
		at: func(c *robot.Config) (string, string, bool) {
			if f := c.Body.Face; f != nil {
				return f.Bus, f.Address, true
			}
			return "", "", false
		}}
)

func init() {
	ActionKinds.Add(ActionKind{Kind: DriverServo, About: "a pose or a joint of a servo head on a PCA9685 over I²C (body.servos)",
		Needs: servoPart.needs, Probe: servoPart.probe,
		Owns: func(a robot.Action) []string { return set("pose", a.Pose != "", "joint", a.Joint != "") },
		Defaults: func(a *robot.Action, _ robot.Body) {
			if a.Pose == "" && a.Joint == "" {
				a.Pose = a.Name
			}
		},
		Check: checkServoAction,
		Schema: func(a robot.Action) map[string]any {
			if a.Joint != "" {
				return object(map[string]any{"angle": map[string]any{"type": "number", "description": "degrees from the joint's centre; the body keeps it within its limits"}}, "angle")
			}
			return object(map[string]any{})
		},
		Make: makeServo})
	ActionKinds.Add(ActionKind{Kind: DriverLED, About: "a colour and a pattern on a WS2812/APA102 strip (body.strip) or the status LED",
		Needs: func(c *robot.Config) []string {
			if s := c.Body.Strip; s != nil {
				return devThere("body.strip.port", s.Port, "enable SPI (raspi-config, or dtparam=spi=on in config.txt)")
			}
			return nil
		},
		Owns: func(a robot.Action) []string { return set("target", a.Target != "") },
		Defaults: func(a *robot.Action, b robot.Body) {
			if a.Target == "" {
				a.Target = "status"
				if b.Strip != nil {
					a.Target = "strip"
				}
			}
		},
		Check: func(p *settings.Problems, a robot.Action, c *robot.Config) {
			switch a.Target {
			case "strip":
				if c.Body.Strip == nil {
					p.Add("target", "strip needs body.strip")
				}
			case "status":
				if c.Drivers.GPIO.LED == "" {
					p.Add("target", "status needs drivers.gpio.led (the status LED's pin)")
				}
			default:
				p.Add("target", "must be strip or status, got %q", a.Target)
			}
		},
		Schema: func(robot.Action) map[string]any {
			return object(map[string]any{
				"color":   map[string]any{"type": "string", "description": "a colour name (red, green, blue, white, yellow, orange, purple, pink, cyan, off) or #rrggbb"},
				"pattern": map[string]any{"type": "string", "enum": LEDPatterns},
				"seconds": map[string]any{"type": "number", "minimum": 0, "maximum": 60, "description": "how long; 0 or absent: until the next light"},
			})
		},
		Make: func(b *Body, _ *robot.Config, a robot.Action, k making) (act.Action, error) {
			return b.light(a, act.Action{Def: ActionDef(a)}, k.unavailable, k.status)
		}})
	ActionKinds.Add(ActionKind{Kind: DriverFace, About: "eyes per emotion and a talking mouth on an SSD1306 OLED over I²C (body.face)",
		Needs: facePart.needs, Probe: facePart.probe,
		Check: func(p *settings.Problems, _ robot.Action, c *robot.Config) {
			if c.Body.Face == nil {
				p.Add("driver", "face needs body.face (the OLED)")
			}
		},
		Schema: func(robot.Action) map[string]any {
			return object(map[string]any{"emotion": map[string]any{"type": "string", "enum": faceEmotions()}}, "emotion")
		},
		Make: makeFace})
	ActionKinds.Add(ActionKind{Kind: DriverGPIO, About: "a pulse on a pin (pin, pulse)",
		Owns: func(a robot.Action) []string {
			return set("pin", a.Pin != "", "pulse", a.Pulse != 0, "active_low", a.ActiveLow)
		},
		Defaults: func(a *robot.Action, _ robot.Body) {
			if a.Pulse == 0 {
				a.Pulse = DefaultPulse
			}
		},
		Check: func(p *settings.Problems, a robot.Action, _ *robot.Config) {
			if a.Pin == "" {
				p.Add("pin", "required for driver gpio: the pin pulsed, such as GPIO17")
			}
			if a.Pulse < time.Millisecond || a.Pulse > 10*time.Second {
				p.Add("pulse", "must be from 1ms to 10s, got %v", a.Pulse)
			}
		},
		Schema: func(robot.Action) map[string]any { return object(map[string]any{}) },
		Probe: func(_ context.Context, c *robot.Config, _ time.Duration) []Probe {
			acts := ofKind(c, DriverGPIO)
			var out []Probe
			for _, i := range sortedIdx(acts) {
				a := acts[i]
				_, err := dgpio.Pin(a.Pin)
				out = append(out, Probe{Name: fmt.Sprintf("GPIO %s (action %s)", a.Pin, a.Name), Detail: "there",
					Fix: pinFix + fmt.Sprintf("body.actions[%d].pin", i), Err: err})
			}
			return out
		},
		Make: func(_ *Body, _ *robot.Config, a robot.Action, k making) (act.Action, error) {
			out := act.Action{Def: ActionDef(a), Part: "gpio:" + a.Pin}
			pin, err := dgpio.Pin(a.Pin)
			if err != nil {
				k.unavailable[out.Part] = fmt.Errorf("pin %s is unavailable: %w", a.Pin, err)
				out.Do = k.fail(out.Part)
				return out, nil
			}
			active := gpio.High
			if a.ActiveLow {
				active = gpio.Low
			}
			d := a.Pulse
			out.Do = func(ctx context.Context, _ json.RawMessage) (string, error) {
				return fmt.Sprintf("%s pulsed %v", a.Pin, d), pulse.Pulse(ctx, pin, d, active)
			}
			return out, nil
		}})
	ActionKinds.Add(ActionKind{Kind: DriverCommand, About: "a program given the arguments as JSON on stdin, with a timeout (command, timeout)",
		Owns: func(a robot.Action) []string {
			return set("command", len(a.Command) > 0, "timeout", a.Timeout != 0, "schema", a.Schema != nil)
		},
		Defaults: func(a *robot.Action, _ robot.Body) {
			if a.Timeout == 0 {
				a.Timeout = DefaultActionTime
			}
		},
		Check: checkCommandAction,
		Schema: func(a robot.Action) map[string]any {
			if a.Schema != nil {
				return a.Schema
			}
			return map[string]any{"type": "object"}
		},
		Needs: func(c *robot.Config) []string {
			acts := ofKind(c, DriverCommand)
			var out []string
			for _, i := range sortedIdx(acts) {
				out = append(out, program(fmt.Sprintf("body.actions[%d].command", i), acts[i].Command, "required", Here)...)
			}
			return out
		},
		Make: func(_ *Body, _ *robot.Config, a robot.Action, _ making) (act.Action, error) {
			argv, timeout := a.Command, a.Timeout
			return act.Action{Def: ActionDef(a), Part: "command:" + a.Name, Do: func(ctx context.Context, args json.RawMessage) (string, error) {
				return actprogram.Run(ctx, argv, args, timeout)
			}}, nil
		}})
}

// makeServo makes a pose or a joint of the servo head.
func makeServo(b *Body, c *robot.Config, a robot.Action, k making) (act.Action, error) {
	out := act.Action{Def: ActionDef(a), Part: "head"}
	if b.Head == nil {
		out.Do = k.fail("head")
		return out, nil
	}
	if a.Joint != "" {
		joint := a.Joint
		out.Do = func(ctx context.Context, args json.RawMessage) (string, error) {
			var w struct {
				Angle float64 `json:"angle"`
			}
			if err := json.Unmarshal(args, &w); err != nil {
				return "", err
			}
			if err := b.Head.Move(ctx, servo.Pose{{Angles: map[string]float64{joint: w.Angle}}}); err != nil {
				return "", err
			}
			at, _ := b.Head.Angle(joint)
			return fmt.Sprintf("%s at %.0f°", joint, at), nil
		}
		return out, nil
	}
	pose, ok := poses(c.Body.Servos)[a.Pose]
	if !ok {
		return out, fmt.Errorf("no pose %q for these joints", a.Pose)
	}
	name := a.Pose
	out.Do = func(ctx context.Context, _ json.RawMessage) (string, error) {
		return name, b.Head.Move(ctx, pose)
	}
	return out, nil
}

// makeFace makes an emotion on the face; while the robot speaks, the
// mouth keeps moving under the new eyes.
func makeFace(b *Body, _ *robot.Config, a robot.Action, k making) (act.Action, error) {
	out := act.Action{Def: ActionDef(a), Part: "face"}
	if b.Face == nil {
		out.Do = k.fail("face")
		return out, nil
	}
	out.Do = func(ctx context.Context, args json.RawMessage) (string, error) {
		var w struct {
			Emotion string `json:"emotion"`
		}
		if err := json.Unmarshal(args, &w); err != nil {
			return "", err
		}
		if err := b.Face.Show(w.Emotion); err != nil {
			return "", err
		}
		talk, stop := context.WithCancel(ctx)
		defer stop()
		go func() {
			select {
			case <-k.speech().Done():
				stop()
			case <-talk.Done():
			}
		}()
		b.Face.Talk(talk)
		return w.Emotion, nil
	}
	return out, nil
}
