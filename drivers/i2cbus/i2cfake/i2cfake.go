// Package i2cfake is an I²C bus without hardware, for tests, benchmarks
// and demos: the devices on it answer as register files (a write sets
// registers from its first byte on, auto-incrementing, as a PCA9685 does;
// a read returns them; RefuseReads makes one refuse reads), every other
// address is refused as a real adapter refuses it (a NACK), and every
// write is recorded with its time.
// Register makes it a bus periph knows by name, so a config's
// body.servos.bus or body.face.bus can name it (drivers/i2cbus.Open).
package i2cfake

import (
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"periph.io/x/conn/v3/i2c"
	"periph.io/x/conn/v3/i2c/i2creg"
	"periph.io/x/conn/v3/physic"
)

// Write is one write transaction as the bus saw it.
type Write struct {
	Addr uint16
	Data []byte
	At   time.Time
}

// MaxWrites bounds the writes a Bus keeps (the oldest are forgotten).
const MaxWrites = 1 << 16

// Bus is a fake I²C bus.
type Bus struct {
	name string

	mu      sync.Mutex
	regs    map[uint16]*[256]byte
	noReads map[uint16]bool
	writes  []Write
}

var _ i2c.BusCloser = (*Bus)(nil)

// New returns a bus called name with a device at each of addrs.
func New(name string, addrs ...uint16) *Bus {
	b := &Bus{name: name, regs: map[uint16]*[256]byte{}}
	for _, a := range addrs {
		b.regs[a] = new([256]byte)
	}
	return b
}

// RefuseReads makes the device at addr take writes and refuse (NACK)
// every read, as an SSD1306 on I²C may.
func (b *Bus) RefuseReads(addr uint16) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.noReads == nil {
		b.noReads = map[uint16]bool{}
	}
	b.noReads[addr] = true
}

// Register makes the bus known to periph as its name, until Unregister.
func (b *Bus) Register() error {
	return i2creg.Register(b.name, nil, -1, func() (i2c.BusCloser, error) { return b, nil })
}

// Unregister forgets the bus's name in periph.
func (b *Bus) Unregister() error { return i2creg.Unregister(b.name) }

func (b *Bus) String() string { return b.name }

// Close does nothing: the bus outlives its users.
func (b *Bus) Close() error { return nil }

// SetSpeed accepts any speed.
func (b *Bus) SetSpeed(physic.Frequency) error { return nil }

// Tx writes w to the device at addr and reads len(r) registers back.
func (b *Bus) Tx(addr uint16, w, r []byte) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	regs, ok := b.regs[addr]
	if !ok {
		return fmt.Errorf("i2cfake %s: no device at 0x%02x (remote I/O error)", b.name, addr)
	}
	if len(r) > 0 && b.noReads[addr] {
		return fmt.Errorf("i2cfake %s: the device at 0x%02x refuses reads (remote I/O error)", b.name, addr)
	}
	if len(w) == 0 {
		if len(r) > 0 {
			clear(r) // a read without a register: the device's current one; zeros here
		}
		return nil
	}
	at := w[0]
	for i, v := range w[1:] {
		regs[at+byte(i)] = v
	}
	if len(b.writes) >= MaxWrites {
		b.writes = b.writes[1:]
	}
	b.writes = append(b.writes, Write{Addr: addr, Data: slices.Clone(w), At: time.Now()})
	for i := range r {
		r[i] = regs[at+byte(i)]
	}
	return nil
}

// Writes is a copy of the writes so far, oldest first.
func (b *Bus) Writes() []Write {
	b.mu.Lock()
	defer b.mu.Unlock()
	return slices.Clone(b.writes)
}

// Reg is the register reg of the device at addr.
func (b *Bus) Reg(addr uint16, reg byte) (byte, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	regs, ok := b.regs[addr]
	if !ok {
		return 0, errors.New("i2cfake: no device there")
	}
	return regs[reg], nil
}
