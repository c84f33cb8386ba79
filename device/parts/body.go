package parts

import (
	"context"
	"encoding/json"
	"fmt"
	"image/color"
	"strings"
	"time"

	"periph.io/x/conn/v3/i2c"

	"github.com/chorus-robotics/chorus/device/act"
	"github.com/chorus-robotics/chorus/device/led"
	"github.com/chorus-robotics/chorus/device/robot"
	"github.com/chorus-robotics/chorus/drivers/face"
	"github.com/chorus-robotics/chorus/drivers/i2cbus"
	"github.com/chorus-robotics/chorus/drivers/servo"
	"github.com/chorus-robotics/chorus/drivers/strip"
	"github.com/chorus-robotics/chorus/runtime/protocol"
)

// The body's actions (docs/actions.md): the drivers an action
// may name, their checks, and the body built from a config — the servo
// head, the face and the strip opened once and shared by the actions on
// them.

// CheckBody reports what of c's body cannot be had on this machine (Here):
// the I²C buses and SPI ports named, the programs of command actions.
// These are not in Check: a robot without its head still talks (its
// actions answer with what is missing), so a start only logs them;
// `chorusd --check-config` reports them as errors.
func CheckBody(c *robot.Config, m Mode) []string {
	if m != Here {
		return nil
	}
	bodyDefaults(c)
	var out []string
	for _, kind := range ActionKinds.Kinds() {
		if k := ActionKinds.kinds[kind]; k.Needs != nil {
			out = append(out, k.Needs(c)...)
		}
	}
	return out
}

// StatusLight shows a pattern on the status LED for a while, then the
// companion's status again (device/panel).
type StatusLight func(p led.Pattern, d time.Duration)

// Body is the robot's body as configured: its actions, and the parts that
// show emotion. A part that cannot be opened (a bus that is missing, a
// board that does not answer) is logged; its actions answer with that
// error, and the robot talks on.
type Body struct {
	*act.Body
	Head  *servo.Head  // nil without servos or when it could not be opened
	Face  *face.Face   // nil without a face
	Strip *strip.Strip // nil without a strip
	close []func()
}

// Close ends the actions and lets go of the hardware.
func (b *Body) Close() {
	b.Body.Close()
	for _, f := range b.close {
		f()
	}
}

// BuildBody opens c's body parts and makes its actions. status is the
// status LED, for led actions that target it (nil without one).
func BuildBody(c *robot.Config, env Env, status StatusLight) (*Body, error) {
	bodyDefaults(c)
	b := &Body{}
	log := env.Log
	buses := map[string]i2c.BusCloser{}
	openBus := func(name string) (i2c.BusCloser, error) {
		if bus, ok := buses[name]; ok {
			return bus, nil
		}
		bus, err := i2cbus.Open(name)
		if err != nil {
			return nil, err
		}
		buses[name] = bus
		b.close = append(b.close, func() { bus.Close() })
		return bus, nil
	}
	// onI2C opens a part at address on the bus named: its bus opened
	// once for all the parts on it.
	onI2C := func(name, address string, open func(i2c.Bus, uint16) error) error {
		bus, err := openBus(name)
		if err != nil {
			return err
		}
		addr, err := i2cbus.ParseAddr(address)
		if err != nil {
			return err
		}
		return open(bus, addr)
	}
	unavailable := map[string]error{}
	cfg := c.Body
	if s := cfg.Servos; s != nil {
		err := onI2C(s.Bus, s.Address, func(bus i2c.Bus, addr uint16) (err error) {
			b.Head, err = servo.New(bus, joints(s), servo.Options{Address: addr, Tick: s.Tick, Logger: log})
			return err
		})
		if err != nil {
			unavailable["head"] = fmt.Errorf("the servo head (body.servos, %s at %s) is unavailable: %w", s.Bus, s.Address, err)
		}
	}
	if f := cfg.Face; f != nil {
		err := onI2C(f.Bus, f.Address, func(bus i2c.Bus, addr uint16) (err error) {
			b.Face, err = face.NewI2C(bus, addr, f.Width, f.Height)
			return err
		})
		if err != nil {
			unavailable["face"] = fmt.Errorf("the face (body.face, %s at %s) is unavailable: %w", f.Bus, f.Address, err)
		} else {
			b.close = append(b.close, func() { b.Face.Halt() })
		}
	}
	if s := cfg.Strip; s != nil {
		var err error
		b.Strip, err = strip.OpenSPI(s.Kind, s.Port, s.Count, s.Brightness)
		if err != nil {
			unavailable["strip"] = fmt.Errorf("the LED strip (body.strip, %s on %s) is unavailable: %w", s.Kind, s.Port, err)
		} else {
			b.close = append(b.close, func() { b.Strip.Close() })
		}
	}
	var body *act.Body
	speech := func() context.Context { return body.Speech() }
	var acts []act.Action
	for i, a := range cfg.Actions {
		x, err := b.action(c, a, unavailable, status, speech)
		if err != nil {
			b.closeAll()
			return nil, fmt.Errorf("body.actions[%d] (%s): %w", i, a.Name, err)
		}
		acts = append(acts, x)
	}
	for part, err := range unavailable {
		if log != nil {
			log.Error("a body part is unavailable: its actions will answer with this error", "part", part, "err", err)
		}
	}
	for _, p := range CheckBody(c, Here) {
		if log != nil && strings.Contains(p, ".command") {
			log.Error("a command action's program is not there: the action will answer with this error", "problem", p)
		}
	}
	body, err := act.New(acts)
	if err != nil {
		b.closeAll()
		return nil, err
	}
	body.Log, body.Metrics = log, env.Metrics
	b.Body = body
	if cfg.EmotionShown() {
		if b.Face != nil {
			body.Emotion = append(body.Emotion, act.Shower{Part: "face", Show: func(ctx context.Context, e protocol.Emotion) error {
				if err := b.Face.Show(string(e)); err != nil {
					return err
				}
				b.Face.Talk(ctx) // the mouth moves until the words end
				return nil
			}})
		}
		if b.Strip != nil {
			body.Emotion = append(body.Emotion, act.Shower{Part: "strip", Show: func(ctx context.Context, e protocol.Emotion) error {
				return b.Strip.Play(ctx, emotionColors[e], "solid", 0)
			}})
		}
	}
	return b, nil
}

func (b *Body) closeAll() {
	for _, f := range b.close {
		f()
	}
}

// emotionColors is how the strip shows an utterance's emotion.
var emotionColors = map[protocol.Emotion]color.RGBA{
	protocol.EmotionNeutral: {R: 255, G: 255, B: 255, A: 255},
	protocol.EmotionHappy:   {R: 255, G: 200, B: 0, A: 255},
	protocol.EmotionSad:     {R: 0, G: 60, B: 255, A: 255},
	protocol.EmotionAngry:   {R: 255, G: 0, B: 0, A: 255},
}

func joints(s *robot.Servos) []servo.Joint {
	var out []servo.Joint
	for _, j := range s.Joints {
		out = append(out, servo.Joint{Name: j.Name, Channel: j.Channel, Min: j.Min, Max: j.Max, Center: j.Center,
			MaxSpeed: j.MaxSpeed, MinPulse: j.MinPulse, MaxPulse: j.MaxPulse, Range: j.Range})
	}
	return out
}

// action makes one configured action by its driver's kind.
func (b *Body) action(c *robot.Config, a robot.Action, unavailable map[string]error, status StatusLight, speech func() context.Context) (act.Action, error) {
	k, ok := ActionKinds.Get(a.Driver)
	if !ok {
		return act.Action{Def: ActionDef(a)}, fmt.Errorf("unknown driver %q", a.Driver)
	}
	return k.Make(b, c, a, making{unavailable: unavailable, status: status, speech: speech})
}

// DefaultAnimated is how long an animated light runs when the action
// gives no seconds.
const DefaultAnimated = 5 * time.Second

// light makes an led action: on the strip (a colour and a pattern) or on
// the status LED (the pattern alone; it has one colour).
func (b *Body) light(a robot.Action, out act.Action, unavailable map[string]error, status StatusLight) (act.Action, error) {
	type args struct {
		Color   string  `json:"color"`
		Pattern string  `json:"pattern"`
		Seconds float64 `json:"seconds"`
	}
	read := func(raw json.RawMessage) (args, time.Duration, error) {
		w := args{Color: "white", Pattern: "solid"}
		if err := json.Unmarshal(raw, &w); err != nil {
			return w, 0, err
		}
		d := time.Duration(w.Seconds * float64(time.Second))
		if d == 0 && w.Pattern != "solid" && w.Pattern != "off" {
			d = DefaultAnimated
		}
		return w, d, nil
	}
	if a.Target == "status" {
		out.Part = "status-led"
		if status == nil {
			return out, fmt.Errorf("the status LED (drivers.gpio.led) is not there")
		}
		out.Do = func(ctx context.Context, raw json.RawMessage) (string, error) {
			w, d, err := read(raw)
			if err != nil {
				return "", err
			}
			p, ok := statusPatterns[w.Pattern]
			if !ok {
				return "", fmt.Errorf("pattern %q: the status LED shows solid, blink, pulse, rainbow or off", w.Pattern)
			}
			if d == 0 {
				d = DefaultAnimated
			}
			status(p, d)
			return "status LED " + w.Pattern, nil
		}
		return out, nil
	}
	out.Part = "strip"
	if b.Strip == nil {
		err := unavailable["strip"]
		out.Do = func(context.Context, json.RawMessage) (string, error) { return "", err }
		return out, nil
	}
	out.Do = func(ctx context.Context, raw json.RawMessage) (string, error) {
		w, d, err := read(raw)
		if err != nil {
			return "", err
		}
		col, err := strip.ParseColor(w.Color)
		if err != nil {
			return "", err
		}
		return w.Color + " " + w.Pattern, b.Strip.Play(ctx, col, w.Pattern, d)
	}
	return out, nil
}

// statusPatterns are the led patterns as a one-colour LED shows them.
var statusPatterns = map[string]led.Pattern{
	"solid":   led.Steady,
	"off":     led.Dark,
	"blink":   {On: 250 * time.Millisecond, Off: 250 * time.Millisecond},
	"pulse":   {On: 100 * time.Millisecond, Off: 900 * time.Millisecond},
	"rainbow": {On: 80 * time.Millisecond, Off: 80 * time.Millisecond},
}

// poses are the head's poses: the built-in ones for its joints, and the
// config's (which win).
func poses(s *robot.Servos) map[string]servo.Pose {
	out := servo.DefaultPoses(joints(s))
	for name, steps := range s.Poses {
		var p servo.Pose
		for _, st := range steps {
			p = append(p, servo.Step{Angles: st.Angles, Hold: st.Hold})
		}
		out[name] = p
	}
	return out
}
