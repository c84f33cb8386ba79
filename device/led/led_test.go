package led

import (
	"testing"
	"time"

	"periph.io/x/conn/v3/gpio"
	"periph.io/x/conn/v3/gpio/gpiotest"

	"github.com/chorus-robotics/chorus/device/led/ledtest"
)

// TestShowsThePatternItIsGiven: steady at first, then a slow and a fast
// blink, dark, and off after Run ends.
func TestShowsThePatternItIsGiven(t *testing.T) {
	pin := &gpiotest.Pin{N: "GPIO17"}
	l := New(pin)
	stop := ledtest.Start(l.Run)
	ledtest.Steady(t, pin, "at start", gpio.High)
	ledtest.Blinks(t, pin,
		"slow pattern", func() { l.Set(Pattern{On: 250 * time.Millisecond, Off: 250 * time.Millisecond}) },
		"fast", func() { l.Set(Pattern{On: 60 * time.Millisecond, Off: 60 * time.Millisecond}) })
	l.Set(Dark)
	ledtest.Steady(t, pin, "dark", gpio.Low)
	l.Set(Steady)
	ledtest.Steady(t, pin, "steady", gpio.High)
	stop()
	ledtest.Off(t, pin)
}
