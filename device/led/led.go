// Package led drives one LED on a pin with the blink pattern it is given: it
// knows nothing of what a pattern means (the front panel, device/panel,
// decides what a companion's status looks like). It starts steady on; on exit
// it is switched off (the inert state).
//
// # Concurrency
//
// Run owns the pin; Set is safe from any goroutine and never blocks.
package led

import (
	"context"
	"time"

	"periph.io/x/conn/v3/gpio"
)

// Pattern is on-time and off-time: zero off-time is steady on, zero (or
// negative) on-time steady off.
type Pattern struct{ On, Off time.Duration }

// Steady and Dark are the two patterns that do not blink.
var (
	Steady = Pattern{On: time.Hour}
	Dark   = Pattern{}
)

// LED drives a pin.
type LED struct {
	Pin gpio.PinOut
	set chan Pattern
}

// New returns an LED on pin.
func New(pin gpio.PinOut) *LED { return &LED{Pin: pin, set: make(chan Pattern, 1)} }

// Set changes the pattern; it never blocks (the newest pattern wins).
func (l *LED) Set(p Pattern) {
	for {
		select {
		case l.set <- p:
			return
		default:
			select {
			case <-l.set:
			default:
			}
		}
	}
}

// Run drives the LED until ctx ends, then switches it off. It starts
// Steady.
func (l *LED) Run(ctx context.Context) error {
	defer l.Pin.Out(gpio.Low)
	p := Steady
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
		case p = <-l.set:
			if p.On <= 0 {
				// Dark: off until the next pattern (a zero timer would spin).
				on = false
				l.Pin.Out(gpio.Low)
				t.Stop()
				continue
			}
			on = true
			l.Pin.Out(gpio.High)
			t.Reset(p.On)
		case <-t.C:
			if p.Off <= 0 {
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
