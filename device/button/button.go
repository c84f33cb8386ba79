// Package button reads a push button on a GPIO pin: it debounces it and
// tells a short press from a long one held until release. What a press
// means (mute, the human's floor hold) is the panel's (device/panel). The
// button pulls the pin low when pressed (internal pull-up).
package button

import (
	"context"
	"time"

	"periph.io/x/conn/v3/gpio"
)

// DefaultLongPress is how long a press must last to count as long.
const DefaultLongPress = 800 * time.Millisecond

// Button watches a pin.
type Button struct {
	Pin       gpio.PinIn
	LongPress time.Duration
	// OnShort is called on the release of a short press.
	OnShort func()
	// OnLong is called with true once a press has lasted LongPress, and
	// with false at its release.
	OnLong func(held bool)
	// Debounce ignores edges closer than this (default DefaultDebounce).
	Debounce time.Duration
}

// DefaultDebounce ignores edges closer than this.
const DefaultDebounce = 20 * time.Millisecond

// Run watches until ctx ends.
func (b *Button) Run(ctx context.Context) error {
	long := b.LongPress
	if long <= 0 {
		long = DefaultLongPress
	}
	debounce := b.Debounce
	if debounce <= 0 {
		debounce = DefaultDebounce
	}
	if err := b.Pin.In(gpio.PullUp, gpio.BothEdges); err != nil {
		return err
	}
	var pressedAt time.Time
	pressed, held := false, false
	var lastEdge time.Time
	for ctx.Err() == nil {
		wait := 200 * time.Millisecond // check ctx this often
		if pressed && !held {
			if rest := long - time.Since(pressedAt); rest < wait {
				wait = max(rest, 0)
			}
		}
		if !b.Pin.WaitForEdge(wait) {
			if pressed && !held && time.Since(pressedAt) >= long {
				held = true
				if b.OnLong != nil {
					b.OnLong(true)
				}
			}
			continue
		}
		now := time.Now()
		if now.Sub(lastEdge) < debounce {
			continue
		}
		lastEdge = now
		down := b.Pin.Read() == gpio.Low
		switch {
		case down && !pressed:
			pressed, pressedAt = true, now
		case !down && pressed:
			pressed = false
			if held {
				held = false
				if b.OnLong != nil {
					b.OnLong(false)
				}
			} else if b.OnShort != nil {
				b.OnShort()
			}
		}
	}
	if held && b.OnLong != nil {
		b.OnLong(false) // never leave the floor held when stopping
	}
	return nil
}
