// Package led shows what the companion is doing on one status LED:
// listening is steady on, thinking a slow blink, speaking a fast blink, an
// error a short flash once a second. On exit the LED is switched off (the
// inert state).
package led

import (
	"context"
	"time"

	"periph.io/x/conn/v3/gpio"

	"github.com/chorus-robotics/chorus/runtime/companion"
)

// Pattern is on-time and off-time; zero off-time is steady on.
type Pattern struct{ On, Off time.Duration }

// Patterns per status.
var Patterns = map[companion.Status]Pattern{
	companion.Listening: {On: time.Hour},
	companion.Thinking:  {On: 250 * time.Millisecond, Off: 250 * time.Millisecond},
	companion.Speaking:  {On: 60 * time.Millisecond, Off: 60 * time.Millisecond},
	companion.Failed:    {On: 100 * time.Millisecond, Off: 900 * time.Millisecond},
}

// LED drives a pin.
type LED struct {
	Pin gpio.PinOut
	set chan companion.Status
}

// New returns an LED on pin.
func New(pin gpio.PinOut) *LED { return &LED{Pin: pin, set: make(chan companion.Status, 1)} }

// Set changes the status; it never blocks (the newest status wins).
func (l *LED) Set(s companion.Status) {
	for {
		select {
		case l.set <- s:
			return
		default:
			select {
			case <-l.set:
			default:
			}
		}
	}
}

// Run drives the LED until ctx ends, then switches it off.
func (l *LED) Run(ctx context.Context) error {
	defer l.Pin.Out(gpio.Low)
	p := Patterns[companion.Listening]
	on := true
	if err := l.Pin.Out(gpio.High); err != nil {
		return err
	}
	t := time.NewTimer(p.On)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case s := <-l.set:
			p = Patterns[s]
			on = true
			l.Pin.Out(gpio.High)
			t.Reset(p.On)
		case <-t.C:
			if p.Off == 0 {
				t.Reset(p.On)
				continue
			}
			on = !on
			if on {
				l.Pin.Out(gpio.High)
				t.Reset(p.On)
			} else {
				l.Pin.Out(gpio.Low)
				t.Reset(p.Off)
			}
		}
	}
}
