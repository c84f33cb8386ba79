// Package pulse drives a GPIO output to a level for a while and back: a
// buzzer's beep, a relay's click, a solenoid's tap. Whatever happens the
// pin is put back to the other level before Pulse returns.
package pulse

import (
	"context"
	"errors"
	"fmt"
	"time"

	"periph.io/x/conn/v3/gpio"
)

// MaxDuration is the longest pulse.
const MaxDuration = 10 * time.Second

// Pulse sets pin to active, waits d (or until ctx ends), then sets it to
// the other level. The pin is set back even when ctx ends or setting it
// active failed; an error names the pin. d is 0..10 s. A ctx that has
// ended already is an error and the pin is not touched.
func Pulse(ctx context.Context, pin gpio.PinOut, d time.Duration, active gpio.Level) error {
	if pin == nil {
		return errors.New("pulse: no pin")
	}
	if d < 0 || d > MaxDuration {
		return fmt.Errorf("pulse: %s for %v: a pulse lasts 0..%v", pin.Name(), d, MaxDuration)
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("pulse: %s: %w", pin.Name(), err)
	}
	name := pin.Name()
	rest := !active
	if err := pin.Out(active); err != nil {
		err = fmt.Errorf("pulse: set %s %s: %w", name, active, err)
		if rerr := pin.Out(rest); rerr != nil {
			err = errors.Join(err, fmt.Errorf("pulse: set %s back %s: %w", name, rest, rerr))
		}
		return err
	}
	var waitErr error
	if d > 0 {
		t := time.NewTimer(d)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			waitErr = fmt.Errorf("pulse: %s cut short: %w", name, ctx.Err())
		}
	}
	if err := pin.Out(rest); err != nil {
		return errors.Join(waitErr, fmt.Errorf("pulse: set %s back %s: %w", name, rest, err))
	}
	return waitErr
}
