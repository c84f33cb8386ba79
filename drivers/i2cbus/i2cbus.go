// Package i2cbus opens an I²C bus by name with periph and tells whether a
// device answers at an address: the one place the drivers on I²C (servo,
// face) get their bus from, and what `chorusd --doctor` asks.
//
// # Usage
//
//	bus, err := i2cbus.Open("/dev/i2c-1") // or "1", "I2C1"; "" is the first bus
//	if err != nil { ... }
//	defer bus.Close()
//	if err := i2cbus.Probe(ctx, bus, 0x40); err != nil { ... } // a PCA9685: a read
//	err = i2cbus.ProbeWrite(ctx, bus, 0x3c, face.ProbeBytes()) // an SSD1306: a write
//
// host.Init() runs once, on the first Open. On a Raspberry Pi it registers
// the buses the kernel offers (/dev/i2c-*); elsewhere it registers none and
// Open says so, naming the bus and what to check. Tests register periph
// fakes with i2creg.Register and open them by name.
package i2cbus

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"

	"periph.io/x/conn/v3/i2c"
	"periph.io/x/conn/v3/i2c/i2creg"
	"periph.io/x/host/v3"
)

// The 7-bit addresses a device may have: 0x00..0x02 and 0x78..0x7f are
// reserved by the I²C specification (general call, CBUS, 10-bit
// addressing, ...).
const (
	MinAddr = 0x03
	MaxAddr = 0x77
)

// DefaultBus is the Pi's I²C bus on the header (pins 3 and 5).
const DefaultBus = "/dev/i2c-1"

// hint is what to check when a bus is missing.
const hint = "enable I²C with raspi-config (Interface Options → I2C) or dtparam=i2c_arm=on in /boot/firmware/config.txt, reboot, and check that /dev/i2c-* exists and is readable by this user (group i2c)"

var (
	initOnce sync.Once
	initErr  error
)

func hostInit() error {
	initOnce.Do(func() {
		if _, err := host.Init(); err != nil {
			initErr = fmt.Errorf("i2cbus: periph host init: %w", err)
		}
	})
	return initErr
}

// Open opens the I²C bus called name: "/dev/i2c-1", its alias "I2C1" or
// its number "1"; "" opens the first bus registered. A bus this machine
// does not have is an error naming it and saying what to check. The
// caller closes the bus.
func Open(name string) (i2c.BusCloser, error) {
	if err := hostInit(); err != nil {
		return nil, err
	}
	shown := strconv.Quote(name)
	if name == "" {
		shown = "(the first bus)"
	}
	refs := i2creg.All()
	if len(refs) == 0 {
		return nil, fmt.Errorf("i2cbus: open I²C bus %s: this machine has no I²C bus: %s", shown, hint)
	}
	b, err := i2creg.Open(name)
	if err != nil {
		return nil, fmt.Errorf("i2cbus: open I²C bus %s (buses here: %s): %w; %s", shown, names(refs), err, hint)
	}
	return b, nil
}

// names lists the buses periph knows, for an error message.
func names(refs []*i2creg.Ref) string {
	var out []string
	for _, r := range refs {
		out = append(out, r.Name)
	}
	sort.Strings(out)
	return strings.Join(out, ", ")
}

// Probe tells whether a device answers at addr on bus: it reads one byte
// from it (as i2cdetect -r does), and an address nobody acknowledges is an
// error naming it. ctx is checked before the read; the read itself is
// bounded by the bus driver (the kernel's adapter timeout on Linux). A
// device that may refuse reads (an SSD1306) is probed with ProbeWrite.
func Probe(ctx context.Context, bus i2c.Bus, addr uint16) error {
	var b [1]byte
	return probe(ctx, bus, addr, nil, b[:])
}

// ProbeWrite tells whether a device answers at addr on bus by writing w
// to it, which must be harmless to the device (an SSD1306: a command-mode
// no-op); otherwise as Probe.
func ProbeWrite(ctx context.Context, bus i2c.Bus, addr uint16, w []byte) error {
	if len(w) == 0 {
		return fmt.Errorf("i2cbus: probe 0x%02x: nothing to write", addr)
	}
	return probe(ctx, bus, addr, w, nil)
}

func probe(ctx context.Context, bus i2c.Bus, addr uint16, w, r []byte) error {
	if addr < MinAddr || addr > MaxAddr {
		return fmt.Errorf("i2cbus: probe 0x%02x: not a 7-bit device address (0x%02x..0x%02x)", addr, MinAddr, MaxAddr)
	}
	if bus == nil {
		return fmt.Errorf("i2cbus: probe 0x%02x: no bus", addr)
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("i2cbus: probe 0x%02x on %s: %w", addr, bus, err)
	}
	if err := bus.Tx(addr, w, r); err != nil {
		return fmt.Errorf("i2cbus: no device answers at 0x%02x on %s: %w", addr, bus, err)
	}
	return nil
}

// ErrAddr is what ParseAddr's errors wrap.
var ErrAddr = errors.New("not an I²C address")

// ParseAddr reads a 7-bit I²C address as written in a config file: hex
// with a 0x prefix ("0x40") or decimal ("64"), within 0x03..0x77.
func ParseAddr(s string) (uint16, error) {
	digits, base := s, 10
	if len(s) > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X') {
		digits, base = s[2:], 16
	}
	// ParseUint with an explicit base takes neither a sign nor '_'.
	v, err := strconv.ParseUint(digits, base, 16)
	if err != nil || len(digits) > 4 {
		return 0, fmt.Errorf("i2cbus: address %q: %w (write it as 0x40 or 64)", s, ErrAddr)
	}
	if v < MinAddr || v > MaxAddr {
		return 0, fmt.Errorf("i2cbus: address %q: %w: 7-bit addresses are 0x%02x..0x%02x", s, ErrAddr, MinAddr, MaxAddr)
	}
	return uint16(v), nil
}
