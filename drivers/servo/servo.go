// Package servo moves a robot's head: hobby servos on a PCA9685 PWM
// controller over I²C (periph.io/x/devices/v3/pca9685), each joint within
// its limits and never faster than its speed limit, whatever it is asked.
//
// # Usage
//
//	h, err := servo.New(bus, []servo.Joint{
//		{Name: "pan", Channel: 0, Min: -60, Max: 60, MaxSpeed: 120},
//		{Name: "tilt", Channel: 1, Min: -20, Max: 30, MaxSpeed: 90},
//	}, servo.Options{})
//	err = h.Move(ctx, servo.DefaultPoses(joints)["nod"])
//
// # Angles and pulses
//
// An angle is in degrees from the servo's middle: -Range/2 is MinPulse,
// +Range/2 is MaxPulse, linear between. At 50 Hz one period is 20 ms and
// the PCA9685 counts it in 4096 steps, so a pulse p is round(p/20ms×4096)
// counts, written as LEDn_OFF with LEDn_ON = 0.
//
// # Motion
//
// Move walks the joints of each step toward their targets one tick at a
// time, each by at most MaxSpeed×Tick per tick. The angle at tick k of a
// step is start ± min(k×MaxSpeed×Tick, distance), computed from k, not from
// the clock, so the writes are the same on every run; ticks are at least
// Tick apart in wall time, also across Moves, so a caller that cancels one
// Move and starts another cannot make a joint jump. A channel is written
// only when its counts change.
//
// # Concurrency
//
// Moves are serialized: a Move waits (as long as its ctx allows) for the
// one before it to return; the caller cancels the older one before
// starting a newer one. Angle and Joints may be called at any time.
package servo

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"regexp"
	"sync"
	"time"

	"periph.io/x/conn/v3/gpio"
	"periph.io/x/conn/v3/i2c"
	"periph.io/x/devices/v3/pca9685"

	"github.com/chorus-robotics/chorus/drivers/internal/pause"
)

// Defaults and limits.
const (
	DefaultAddress  = pca9685.I2CAddr // 0x40
	DefaultTick     = 20 * time.Millisecond
	DefaultMinPulse = 500 * time.Microsecond
	DefaultMaxPulse = 2500 * time.Microsecond
	DefaultRange    = 180.0

	MinTick      = time.Millisecond
	MaxTick      = time.Second
	MaxJointSpd  = 2000.0 // deg/s
	MinPulseLim  = 100 * time.Microsecond
	MaxPulseLim  = 3000 * time.Microsecond
	MaxRange     = 360.0
	MaxHold      = time.Minute
	MaxSteps     = 256
	MaxJoints    = 16
	maxJointName = 32

	// Period is one PWM period at the 50 Hz New sets; Counts is how many
	// steps the PCA9685 divides it in.
	Period = 20 * time.Millisecond
	Counts = 4096
)

// Joint is one servo: the PCA9685 channel it is on, the angles it may
// take and how fast it may turn.
type Joint struct {
	Name    string
	Channel int // 0..15
	// Min and Max bound every angle it is moved to; Center is where New
	// puts it. Degrees, 0 is the middle of the pulse span.
	Min, Max, Center float64
	// MaxSpeed is the fastest it turns, in degrees per second.
	MaxSpeed float64
	// MinPulse and MaxPulse are the pulses at -Range/2 and +Range/2
	// degrees; 0 means 500µs and 2500µs.
	MinPulse, MaxPulse time.Duration
	// Range is how many degrees the pulse span covers; 0 means 180.
	Range float64
}

var jointName = regexp.MustCompile(`^[a-zA-Z][a-zA-Z0-9_-]*$`)

// withDefaults fills the zero pulse and range fields.
func (j Joint) withDefaults() Joint {
	if j.MinPulse == 0 {
		j.MinPulse = DefaultMinPulse
	}
	if j.MaxPulse == 0 {
		j.MaxPulse = DefaultMaxPulse
	}
	if j.Range == 0 {
		j.Range = DefaultRange
	}
	return j
}

// Validate says what is wrong with a joint, naming the field: the name (a
// letter, then letters, digits, '_' or '-', at most 32 bytes), a channel
// 0..15, Min < Max within ±Range/2, Center within [Min, Max], MaxSpeed in
// (0, 2000], pulses within 100µs..3000µs with MinPulse < MaxPulse, Range
// in (0, 360]. Zero pulses and range are their defaults.
func (j Joint) Validate() error {
	j = j.withDefaults()
	fail := func(field, format string, a ...any) error {
		return fmt.Errorf("servo: joint %q: %s: %s", j.Name, field, fmt.Sprintf(format, a...))
	}
	finite := func(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }
	switch {
	case j.Name == "" || len(j.Name) > maxJointName || !jointName.MatchString(j.Name):
		return fail("name", "must be a letter followed by letters, digits, '_' or '-', at most %d bytes", maxJointName)
	case j.Channel < 0 || j.Channel > 15:
		return fail("channel", "%d is not a PCA9685 channel (0..15)", j.Channel)
	case !finite(j.Range) || j.Range <= 0 || j.Range > MaxRange:
		return fail("range", "%g must be in (0, %g] degrees", j.Range, MaxRange)
	case !finite(j.Min) || j.Min < -j.Range/2:
		return fail("min", "%g must be a number of degrees ≥ -range/2 (%g)", j.Min, -j.Range/2)
	case !finite(j.Max) || j.Max > j.Range/2:
		return fail("max", "%g must be a number of degrees ≤ range/2 (%g)", j.Max, j.Range/2)
	case !(j.Min < j.Max):
		return fail("max", "%g must be greater than min (%g)", j.Max, j.Min)
	case !finite(j.Center) || j.Center < j.Min || j.Center > j.Max:
		return fail("center", "%g must be within [min, max] = [%g, %g]", j.Center, j.Min, j.Max)
	case !finite(j.MaxSpeed) || j.MaxSpeed <= 0 || j.MaxSpeed > MaxJointSpd:
		return fail("max_speed", "%g must be in (0, %g] degrees per second", j.MaxSpeed, MaxJointSpd)
	case j.MinPulse < MinPulseLim || j.MinPulse > MaxPulseLim:
		return fail("min_pulse", "%v must be within %v..%v", j.MinPulse, MinPulseLim, MaxPulseLim)
	case j.MaxPulse < MinPulseLim || j.MaxPulse > MaxPulseLim:
		return fail("max_pulse", "%v must be within %v..%v", j.MaxPulse, MinPulseLim, MaxPulseLim)
	case j.MinPulse >= j.MaxPulse:
		return fail("max_pulse", "%v must be longer than min_pulse (%v)", j.MaxPulse, j.MinPulse)
	}
	return nil
}

// Pulse is the pulse that holds the joint at angle (degrees, not clamped).
func (j Joint) Pulse(angle float64) time.Duration {
	j = j.withDefaults()
	frac := (angle + j.Range/2) / j.Range
	return j.MinPulse + time.Duration(math.Round(frac*float64(j.MaxPulse-j.MinPulse)))
}

// counts is the PCA9685 OFF count for angle at 50 Hz:
// round(pulse/20ms×4096), j with its defaults.
func (j Joint) counts(angle float64) gpio.Duty {
	pulse := float64(j.MinPulse) + (angle+j.Range/2)/j.Range*float64(j.MaxPulse-j.MinPulse)
	return gpio.Duty(math.Round(pulse / float64(Period) * Counts))
}

// Step is one stage of a pose: the joints named go to their angles, then
// the pose holds for Hold.
type Step struct {
	Angles map[string]float64
	Hold   time.Duration
}

// Pose is a sequence of steps.
type Pose []Step

// Options tune a Head; the zero value is the usual board.
type Options struct {
	// Address is the PCA9685's I²C address; 0 is 0x40.
	Address uint16
	// Tick is the motion step, 1ms..1s; 0 is 20 ms.
	Tick time.Duration
	// OnWrite, when set, is called after every channel write with the
	// joint and the angle written, from the goroutine that moves.
	OnWrite func(joint string, angle float64)
	// Logger receives debug lines about moves; nil is slog.Default().
	Logger *slog.Logger
}

// Head is the servos of a head on one PCA9685.
type Head struct {
	dev     *pca9685.Dev
	tick    time.Duration
	onWrite func(string, float64)
	log     *slog.Logger
	joints  []Joint // in the order given
	byName  map[string]int

	turn chan struct{} // one Move at a time; holds the fields below
	last time.Time     // when the last tick's writes ended
	duty []gpio.Duty   // per joint: counts last written

	mu    sync.Mutex // guards angle
	angle []float64  // per joint
}

// New validates the joints, initializes the PCA9685 on bus (50 Hz; this
// takes about 200 ms) and writes every joint's Center.
func New(bus i2c.Bus, joints []Joint, o Options) (*Head, error) {
	if bus == nil {
		return nil, errors.New("servo: no I²C bus")
	}
	if len(joints) == 0 || len(joints) > MaxJoints {
		return nil, fmt.Errorf("servo: %d joints: a head has 1..%d", len(joints), MaxJoints)
	}
	if o.Address == 0 {
		o.Address = DefaultAddress
	}
	if o.Address < 0x03 || o.Address > 0x77 {
		return nil, fmt.Errorf("servo: address 0x%02x is not a 7-bit I²C address", o.Address)
	}
	if o.Tick == 0 {
		o.Tick = DefaultTick
	}
	if o.Tick < MinTick || o.Tick > MaxTick {
		return nil, fmt.Errorf("servo: tick %v must be within %v..%v", o.Tick, MinTick, MaxTick)
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	h := &Head{
		tick:    o.Tick,
		onWrite: o.OnWrite,
		log:     o.Logger.With("driver", "servo"),
		byName:  map[string]int{},
		turn:    make(chan struct{}, 1),
	}
	channels := map[int]string{}
	for _, j := range joints {
		if err := j.Validate(); err != nil {
			return nil, err
		}
		if _, dup := h.byName[j.Name]; dup {
			return nil, fmt.Errorf("servo: joint %q: name: declared twice", j.Name)
		}
		if other, dup := channels[j.Channel]; dup {
			return nil, fmt.Errorf("servo: joint %q: channel: %d is joint %q's already", j.Name, j.Channel, other)
		}
		channels[j.Channel] = j.Name
		h.byName[j.Name] = len(h.joints)
		h.joints = append(h.joints, j.withDefaults())
	}
	dev, err := pca9685.NewI2C(bus, o.Address)
	if err != nil {
		return nil, fmt.Errorf("servo: PCA9685 at 0x%02x on %s: %w", o.Address, bus, err)
	}
	h.dev = dev
	h.angle = make([]float64, len(h.joints))
	h.duty = make([]gpio.Duty, len(h.joints))
	for i, j := range h.joints {
		if err := h.write(i, j.Center); err != nil {
			return nil, err
		}
		h.angle[i] = j.Center
	}
	h.last = time.Now()
	return h, nil
}

// write sets joint i's channel to angle; the caller holds the turn (or is
// New).
func (h *Head) write(i int, angle float64) error {
	j := h.joints[i]
	d := j.counts(angle)
	if err := h.dev.SetPwm(j.Channel, 0, d); err != nil {
		return fmt.Errorf("servo: write joint %q (channel %d): %w", j.Name, j.Channel, err)
	}
	h.duty[i] = d
	if h.onWrite != nil {
		h.onWrite(j.Name, angle)
	}
	return nil
}

// Joints are the joints' names in the order New was given them.
func (h *Head) Joints() []string {
	out := make([]string, len(h.joints))
	for i, j := range h.joints {
		out[i] = j.Name
	}
	return out
}

// Angle is where joint is now (degrees), and whether there is such a
// joint.
func (h *Head) Angle(joint string) (float64, bool) {
	i, ok := h.byName[joint]
	if !ok {
		return 0, false
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.angle[i], true
}

// target is one joint of a step: where it goes.
type target struct {
	i  int
	to float64
}

// plan checks every step before anything moves: known joints, finite
// angles (clamped to the joint's limits), holds within 0..1 minute.
func (h *Head) plan(p Pose) ([][]target, error) {
	if len(p) > MaxSteps {
		return nil, fmt.Errorf("servo: a pose of %d steps (at most %d)", len(p), MaxSteps)
	}
	out := make([][]target, len(p))
	for s, st := range p {
		if st.Hold < 0 || st.Hold > MaxHold {
			return nil, fmt.Errorf("servo: step %d: hold %v must be within 0..%v", s+1, st.Hold, MaxHold)
		}
		for name, a := range st.Angles {
			i, ok := h.byName[name]
			if !ok {
				return nil, fmt.Errorf("servo: step %d: no joint named %q (joints: %v)", s+1, name, h.Joints())
			}
			if math.IsNaN(a) || math.IsInf(a, 0) {
				return nil, fmt.Errorf("servo: step %d: joint %q: angle %v is not a number of degrees", s+1, name, a)
			}
			j := h.joints[i]
			out[s] = append(out[s], target{i: i, to: min(max(a, j.Min), j.Max)})
		}
	}
	return out, nil
}

// Move plays pose p: see the package doc for how joints move. It returns
// ctx.Err() when ctx ends first, leaving the joints where they are (the
// last tick is written whole). A pose naming an unknown joint or a NaN or
// infinite angle is an error before anything moves.
func (h *Head) Move(ctx context.Context, p Pose) error {
	steps, err := h.plan(p)
	if err != nil {
		return err
	}
	select {
	case h.turn <- struct{}{}:
	case <-ctx.Done():
		return ctx.Err()
	}
	defer func() { <-h.turn }()
	for s, st := range steps {
		if err := h.step(ctx, st); err != nil {
			if ctx.Err() != nil {
				h.log.Debug("move cancelled", "step", s+1, "of", len(steps))
			}
			return err
		}
		if hold := p[s].Hold; hold > 0 {
			if err := pause.Sleep(ctx, hold); err != nil {
				return err
			}
		}
	}
	return nil
}

// step moves the joints of one step to their targets, one tick at a time.
func (h *Head) step(ctx context.Context, ts []target) error {
	type motion struct {
		i              int
		from, to, dist float64 // dist = |to - from|
		sign, perTick  float64
	}
	h.mu.Lock()
	ms := make([]motion, 0, len(ts))
	for _, t := range ts {
		from := h.angle[t.i]
		d := t.to - from
		if d == 0 {
			continue
		}
		ms = append(ms, motion{i: t.i, from: from, to: t.to, dist: math.Abs(d), sign: math.Copysign(1, d),
			perTick: h.joints[t.i].MaxSpeed * h.tick.Seconds()})
	}
	h.mu.Unlock()
	for k := 1; len(ms) > 0; k++ {
		if err := pause.Sleep(ctx, time.Until(h.last.Add(h.tick))); err != nil {
			return err
		}
		moving := ms[:0]
		for _, m := range ms {
			moved := float64(k) * m.perTick
			a := m.from + m.sign*moved
			if moved >= m.dist {
				moved, a = m.dist, m.to
			}
			if h.joints[m.i].counts(a) != h.duty[m.i] {
				if err := h.write(m.i, a); err != nil {
					h.last = time.Now()
					return err
				}
			}
			h.mu.Lock()
			h.angle[m.i] = a
			h.mu.Unlock()
			if moved < m.dist {
				moving = append(moving, m)
			}
		}
		ms = moving
		h.last = time.Now()
	}
	return nil
}
