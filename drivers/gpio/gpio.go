// Package gpio finds GPIO pins by name with periph: host.Init() loads the
// board's drivers once (on a Raspberry Pi; elsewhere it loads none and is
// not an error), then pins are looked up in periph's registry, where tests
// register gpiotest fakes.
package gpio

import (
	"fmt"
	"sync"

	"periph.io/x/conn/v3/gpio"
	"periph.io/x/conn/v3/gpio/gpioreg"
	"periph.io/x/host/v3"
)

var (
	initOnce sync.Once
	initErr  error
)

// Pin returns the pin called name (e.g. "GPIO17"); a name this board does
// not have is a clear error naming it.
func Pin(name string) (gpio.PinIO, error) {
	initOnce.Do(func() {
		if _, err := host.Init(); err != nil {
			initErr = fmt.Errorf("gpio: periph host init: %w", err)
		}
	})
	if initErr != nil {
		return nil, initErr
	}
	p := gpioreg.ByName(name)
	if p == nil {
		return nil, fmt.Errorf("gpio: no pin named %q on this board (periph knows %d pins)", name, len(gpioreg.All()))
	}
	return p, nil
}
