package i2cfake

import (
	"testing"

	"github.com/chorus-robotics/chorus/drivers/i2cbus"
)

func TestRegistersAndNACK(t *testing.T) {
	b := New("i2cfake-test", 0x40)
	if err := b.Register(); err != nil {
		t.Fatal(err)
	}
	defer b.Unregister()
	bus, err := i2cbus.Open("i2cfake-test")
	if err != nil {
		t.Fatal(err)
	}
	if err := bus.Tx(0x40, []byte{0x06, 1, 2, 3, 4}, nil); err != nil {
		t.Fatal(err)
	}
	r := make([]byte, 2)
	if err := bus.Tx(0x40, []byte{0x08}, r); err != nil || r[0] != 3 || r[1] != 4 {
		t.Fatalf("read back %v, %v", r, err)
	}
	if err := bus.Tx(0x41, []byte{0}, nil); err == nil {
		t.Fatal("an address with no device answered")
	}
	if w := b.Writes(); len(w) != 2 || w[0].Addr != 0x40 || len(w[0].Data) != 5 || w[0].At.IsZero() {
		t.Fatalf("writes %+v", w)
	}
}
