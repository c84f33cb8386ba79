package panel

import (
	"testing"

	"periph.io/x/conn/v3/gpio"
	"periph.io/x/conn/v3/gpio/gpiotest"

	"github.com/chorus-robotics/chorus/device/led"
	"github.com/chorus-robotics/chorus/device/led/ledtest"
	"github.com/chorus-robotics/chorus/runtime/companion"
)

// TestStatusPatterns: the panel's LED is steady while the companion
// listens, blinks slowly while it thinks and fast while it speaks, and is
// off once the panel stops.
func TestStatusPatterns(t *testing.T) {
	pin := &gpiotest.Pin{N: "GPIO17"}
	p := &Panel{LED: led.New(pin)}
	stop := ledtest.Start(p.Run)
	ledtest.Steady(t, pin, "listening", gpio.High)
	ledtest.Blinks(t, pin,
		"thinking", func() { p.Status(companion.Thinking) },
		"speaking", func() { p.Status(companion.Speaking) })
	stop()
	ledtest.Off(t, pin)
}

// TestEveryStatusHasAPattern: each status the companion reports has its own
// blinking pattern, listening is the LED's start (steady), and a status the
// panel does not know shows as an error.
func TestEveryStatusHasAPattern(t *testing.T) {
	if Patterns[companion.Listening] != led.Steady {
		t.Errorf("listening = %+v; want led.Steady, the LED's start", Patterns[companion.Listening])
	}
	seen := map[led.Pattern]companion.Status{}
	for _, s := range []companion.Status{companion.Listening, companion.Thinking, companion.Speaking, companion.Failed} {
		p, ok := Patterns[s]
		if !ok || p.On <= 0 {
			t.Errorf("status %q: pattern %+v (known %v); want one that lights", s, p, ok)
		}
		if other, dup := seen[p]; dup {
			t.Errorf("statuses %q and %q look the same: %+v", other, s, p)
		}
		seen[p] = s
	}
	if got, want := pattern("rebooting"), Patterns[companion.Failed]; got != want {
		t.Errorf("unknown status shows %+v; want the error pattern %+v", got, want)
	}
}
