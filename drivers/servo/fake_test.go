package servo

import (
	"errors"
	"sync"
	"time"

	"periph.io/x/conn/v3/physic"
)

// pcaFake is a PCA9685 as the bus sees it: 256 registers written with
// auto-increment and read back, an acknowledge only at its address (a
// NACK elsewhere, as a real bus answers), and the time of every LEDn
// write. Wrap it in i2ctest.Record to see the transactions.
type pcaFake struct {
	addr uint16

	mu     sync.Mutex
	reg    [256]byte
	writes []ledWrite
}

// ledWrite is one write of a channel's four LEDn registers.
type ledWrite struct {
	ch      int
	on, off uint16
	at      time.Time
}

func newPCAFake() *pcaFake {
	f := &pcaFake{addr: 0x40}
	f.reg[0x00] = 0x11 // MODE1 at power-on: SLEEP | ALLCALL
	return f
}

func (f *pcaFake) String() string                  { return "pcafake" }
func (f *pcaFake) SetSpeed(physic.Frequency) error { return nil }

func (f *pcaFake) Tx(addr uint16, w, r []byte) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if addr != f.addr {
		return errors.New("remote I/O error")
	}
	if len(w) == 0 {
		return errors.New("pcafake: no register")
	}
	at := w[0]
	for i, b := range w[1:] {
		f.reg[at+byte(i)] = b
	}
	if len(w) == 5 && at >= 0x06 && at <= 0x42 && (at-0x06)%4 == 0 {
		f.writes = append(f.writes, ledWrite{
			ch:  int(at-0x06) / 4,
			on:  uint16(w[1]) | uint16(w[2])<<8,
			off: uint16(w[3]) | uint16(w[4])<<8,
			at:  time.Now(),
		})
	}
	for i := range r {
		r[i] = f.reg[at+byte(i)]
	}
	return nil
}

func (f *pcaFake) ledWrites() []ledWrite {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]ledWrite(nil), f.writes...)
}
