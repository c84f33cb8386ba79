package face

import (
	"bytes"
	"errors"
	"image"
	"sync"
	"testing"

	"periph.io/x/conn/v3/i2c"
	"periph.io/x/conn/v3/i2c/i2ctest"
	"periph.io/x/conn/v3/physic"
)

// comPins is the byte after the Set COM Pins command (0xDA) in an init
// command stream, or -1.
func comPins(init []byte) int {
	for i := 1; i+1 < len(init); i++ { // init[0] is the control byte
		if init[i] == 0xDA {
			return int(init[i+1])
		}
	}
	return -1
}

// The COM pins configuration follows the panel: a 128×64 panel wires
// its rows alternately (0x12), a 128×32 one sequentially (0x02); with
// 0x12 a 128×32 shows every other row and the face comes out stretched
// and gapped.
func TestI2CCOMPins(t *testing.T) {
	for _, c := range []struct {
		w, h int
		want int
	}{{128, 64, 0x12}, {128, 32, 0x02}, {64, 48, 0x12}} {
		rec := &i2ctest.Record{}
		if _, err := NewI2C(rec, 0x3c, c.w, c.h); err != nil {
			t.Fatal(err)
		}
		if got := comPins(rec.Ops[0].W); got != c.want {
			t.Errorf("%d×%d: init % x sets COM pins 0x%02x, want 0x%02x", c.w, c.h, rec.Ops[0].W, got, c.want)
		}
	}
}

// isInit says whether w is a whole init command stream: display off
// first, display on last.
func isInit(w []byte) bool {
	return len(w) > 3 && w[0] == 0x00 && w[1] == 0xAE && w[len(w)-1] == 0xAF
}

// After Halt (display off), showing the very face that was shown turns
// the display on again and sends the whole face: the controller may have
// lost its memory while off, and a screen left dark is a robot that
// looks dead.
func TestI2CShowAfterHaltTurnsOnAndRedraws(t *testing.T) {
	rec := &i2ctest.Record{}
	f, err := NewI2C(rec, 0x3c, 128, 64)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Show(Happy); err != nil {
		t.Fatal(err)
	}
	n := len(rec.Ops)
	if err := f.Halt(); err != nil {
		t.Fatal(err)
	}
	if len(rec.Ops) != n+1 || !bytes.Equal(rec.Ops[n].W, []byte{0x00, 0xAE}) {
		t.Fatalf("Halt wrote %v, want display off (00 ae)", rec.Ops[n:])
	}
	n = len(rec.Ops)
	if err := f.Show(Happy); err != nil {
		t.Fatal(err)
	}
	ops := rec.Ops[n:]
	if len(ops) == 0 {
		t.Fatal("Show after Halt sent nothing: the display stays off")
	}
	if !isInit(ops[0].W) {
		t.Fatalf("Show after Halt began with % x, want the init stream ending in display on (af)", ops[0].W)
	}
	if got := comPins(ops[0].W); got != 0x12 {
		t.Fatalf("the init after Halt sets COM pins 0x%02x", got)
	}
	screen := newOLED(128, 64) // what the controller holds, from nothing
	screen.apply(t, ops[1:])
	happy := Render(image.Rect(0, 0, 128, 64), Happy, 0)
	if len(screen.pages) != 8 || !bytes.Equal(screen.ram, pack(happy)) {
		t.Fatalf("after Halt, Show wrote pages %v, not the whole happy face", screen.pages)
	}
	// Once on, the same face again sends nothing.
	n = len(rec.Ops)
	if err := f.Show(Happy); err != nil || len(rec.Ops) != n {
		t.Fatalf("the face shown again: %d writes, %v", len(rec.Ops)-n, err)
	}
}

// flaky fails the writes while fail is set, like a loose wire.
type flaky struct {
	mu   sync.Mutex
	rec  i2ctest.Record
	fail bool
}

func (b *flaky) String() string                  { return "flaky" }
func (b *flaky) SetSpeed(physic.Frequency) error { return nil }
func (b *flaky) Tx(addr uint16, w, r []byte) error {
	b.mu.Lock()
	fail := b.fail
	b.mu.Unlock()
	if fail {
		return errors.New("remote I/O error")
	}
	return b.rec.Tx(addr, w, r)
}

var _ i2c.Bus = (*flaky)(nil)

// A draw that failed half way leaves the screen unknown: once the bus
// works again, the same face is sent whole (periph's driver alone had
// taken the failed picture as shown, and sent nothing).
func TestI2CRedrawsWholeAfterAFailedDraw(t *testing.T) {
	bus := &flaky{}
	f, err := NewI2C(bus, 0x3c, 128, 32)
	if err != nil {
		t.Fatal(err)
	}
	bus.mu.Lock()
	bus.fail = true
	bus.mu.Unlock()
	if err := f.Show(Sad); err == nil {
		t.Fatal("Show on a failing bus said nothing")
	}
	bus.mu.Lock()
	bus.fail = false
	n := len(bus.rec.Ops)
	bus.mu.Unlock()
	if err := f.Show(Sad); err != nil {
		t.Fatal(err)
	}
	ops := bus.rec.Ops[n:]
	if len(ops) == 0 || !isInit(ops[0].W) {
		t.Fatalf("after the failure, Show sent %d writes, not the init first", len(ops))
	}
	screen := newOLED(128, 32)
	screen.apply(t, ops[1:])
	if !bytes.Equal(screen.ram, pack(Render(image.Rect(0, 0, 128, 32), Sad, 0))) {
		t.Fatalf("after the failure, the screen does not hold the sad face (pages %v)", screen.pages)
	}
}
