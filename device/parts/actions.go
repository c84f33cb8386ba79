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
	"github.com/chorus-robotics/chorus/drivers/face"
	dgpio "github.com/chorus-robotics/chorus/drivers/gpio"
	"github.com/chorus-robotics/chorus/drivers/i2cbus"
	actprogram "github.com/chorus-robotics/chorus/drivers/program"
	"github.com/chorus-robotics/chorus/drivers/pulse"
	"github.com/chorus-robotics/chorus/drivers/servo"
	"github.com/chorus-robotics/chorus/runtime/config"
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
	Needs func(c *config.Config) []string
	// Probe checks on this machine that the hardware of c's actions of
	// this kind answers (chorusd --doctor); nil: nothing to probe.
	Probe func(ctx context.Context, c *config.Config, timeout time.Duration) []Probe
	// Make makes action a of this kind on body b.
	Make func(b *Body, c *config.Config, a config.Action, k making) (act.Action, error)
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
type actionKinds struct{ kinds map[string]ActionKind }

// ActionKinds are the action drivers of this build; every build has them
// all (periph is pure Go).
var ActionKinds = &actionKinds{kinds: map[string]ActionKind{}}

// Add registers k; a kind registered twice is a programming error.
func (g *actionKinds) Add(k ActionKind) {
	if _, dup := g.kinds[k.Kind]; dup {
		panic("parts: action driver " + k.Kind + " registered twice")
	}
	g.kinds[k.Kind] = k
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
func ProbeBody(ctx context.Context, c *config.Config, timeout time.Duration) []Probe {
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
func ofKind(c *config.Config, kind string) map[int]config.Action {
	out := map[int]config.Action{}
	for i, a := range c.Body.Actions {
		if a.Driver == kind {
			out[i] = a
		}
	}
	return out
}

func sortedIdx(m map[int]config.Action) []int {
	out := make([]int, 0, len(m))
	for i := range m {
		out = append(out, i)
	}
	sort.Ints(out)
	return out
}

func init() {
	ActionKinds.Add(ActionKind{Kind: config.DriverServo, About: "a pose or a joint of a servo head on a PCA9685 over I²C (body.servos)",
		Needs: func(c *config.Config) []string {
			if s := c.Body.Servos; s != nil {
				return devThere("body.servos.bus", s.Bus, i2cFix)
			}
			return nil
		},
		Probe: func(ctx context.Context, c *config.Config, timeout time.Duration) []Probe {
			if s := c.Body.Servos; s != nil { // a PCA9685 reads back
				return []Probe{probeI2C(ctx, "servo board", "body.servos", s.Bus, s.Address, "PCA9685", timeout, i2cbus.Probe)}
			}
			return nil
		},
		Make: makeServo})
	ActionKinds.Add(ActionKind{Kind: config.DriverLED, About: "a colour and a pattern on a WS2812/APA102 strip (body.strip) or the status LED",
		Needs: func(c *config.Config) []string {
			if s := c.Body.Strip; s != nil {
				return devThere("body.strip.port", s.Port, "enable SPI (raspi-config, or dtparam=spi=on in config.txt)")
			}
			return nil
		},
		Make: func(b *Body, _ *config.Config, a config.Action, k making) (act.Action, error) {
			return b.light(a, act.Action{Def: a.Def()}, k.unavailable, k.status)
		}})
	ActionKinds.Add(ActionKind{Kind: config.DriverFace, About: "eyes per emotion and a talking mouth on an SSD1306 OLED over I²C (body.face)",
		Needs: func(c *config.Config) []string {
			if f := c.Body.Face; f != nil {
				return devThere("body.face.bus", f.Bus, i2cFix)
			}
			return nil
		},
		Probe: func(ctx context.Context, c *config.Config, timeout time.Duration) []Probe {
			if f := c.Body.Face; f != nil {
				return []Probe{probeI2C(ctx, "face", "body.face", f.Bus, f.Address, "SSD1306", timeout, func(ctx context.Context, bus i2c.Bus, addr uint16) error {
					return i2cbus.ProbeWrite(ctx, bus, addr, face.ProbeBytes()) // an SSD1306 may refuse reads
				})}
			}
			return nil
		},
		Make: makeFace})
	ActionKinds.Add(ActionKind{Kind: config.DriverGPIO, About: "a pulse on a pin (pin, pulse)",
		Probe: func(_ context.Context, c *config.Config, _ time.Duration) []Probe {
			acts := ofKind(c, config.DriverGPIO)
			var out []Probe
			for _, i := range sortedIdx(acts) {
				a := acts[i]
				_, err := dgpio.Pin(a.Pin)
				out = append(out, Probe{Name: fmt.Sprintf("GPIO %s (action %s)", a.Pin, a.Name), Detail: "there",
					Fix: pinFix + fmt.Sprintf("body.actions[%d].pin", i), Err: err})
			}
			return out
		},
		Make: func(_ *Body, _ *config.Config, a config.Action, k making) (act.Action, error) {
			out := act.Action{Def: a.Def(), Part: "gpio:" + a.Pin}
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
	ActionKinds.Add(ActionKind{Kind: config.DriverCommand, About: "a program given the arguments as JSON on stdin, with a timeout (command, timeout)",
		Needs: func(c *config.Config) []string {
			acts := ofKind(c, config.DriverCommand)
			var out []string
			for _, i := range sortedIdx(acts) {
				out = append(out, program(fmt.Sprintf("body.actions[%d].command", i), acts[i].Command, "required", Here)...)
			}
			return out
		},
		Make: func(_ *Body, _ *config.Config, a config.Action, _ making) (act.Action, error) {
			argv, timeout := a.Command, a.Timeout
			return act.Action{Def: a.Def(), Part: "command:" + a.Name, Do: func(ctx context.Context, args json.RawMessage) (string, error) {
				return actprogram.Run(ctx, argv, args, timeout)
			}}, nil
		}})
}

// makeServo makes a pose or a joint of the servo head.
func makeServo(b *Body, c *config.Config, a config.Action, k making) (act.Action, error) {
	out := act.Action{Def: a.Def(), Part: "head"}
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
func makeFace(b *Body, _ *config.Config, a config.Action, k making) (act.Action, error) {
	out := act.Action{Def: a.Def(), Part: "face"}
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
