package i2cbus

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"go.uber.org/goleak"
	"periph.io/x/conn/v3/i2c"
	"periph.io/x/conn/v3/i2c/i2creg"
	"periph.io/x/conn/v3/physic"
)

// TestMain fails the package's tests if any goroutine outlives them.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// fakeBus acknowledges the addresses in acks and refuses the others, as a
// real adapter answers a NACK (Linux: EREMOTEIO).
type fakeBus struct {
	mu      sync.Mutex
	acks    map[uint16]bool
	noReads map[uint16]bool // acknowledge writes, refuse reads (an SSD1306)
	reads   []uint16
	written [][]byte
	closed  bool
}

func (f *fakeBus) String() string { return "fakebus" }
func (f *fakeBus) Close() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.closed = true
	return nil
}
func (f *fakeBus) SetSpeed(physic.Frequency) error { return nil }
func (f *fakeBus) Tx(addr uint16, w, r []byte) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.reads = append(f.reads, addr)
	if !f.acks[addr] || (len(r) > 0 && f.noReads[addr]) {
		return errors.New("remote I/O error")
	}
	f.written = append(f.written, append([]byte(nil), w...))
	for i := range r {
		r[i] = 0xff
	}
	return nil
}

func TestOpen(t *testing.T) {
	if err := hostInit(); err != nil {
		t.Fatal(err)
	}
	if len(i2creg.All()) == 0 {
		// Off a Pi: a clear error, no panic.
		_, err := Open("/dev/i2c-1")
		if err == nil || !strings.Contains(err.Error(), `"/dev/i2c-1"`) || !strings.Contains(err.Error(), "raspi-config") {
			t.Fatalf("open on a machine without I²C: %v", err)
		}
	}
	bus := &fakeBus{}
	if err := i2creg.Register("/dev/i2c-97", []string{"I2C97"}, 97, func() (i2c.BusCloser, error) { return bus, nil }); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { i2creg.Unregister("/dev/i2c-97") })
	only := len(i2creg.All()) == 1

	for _, c := range []struct {
		name, bus string
		ok        bool
	}{
		{"by path", "/dev/i2c-97", true},
		{"by alias", "I2C97", true},
		{"by number", "97", true},
		{"the first", "", only},
		{"missing path", "/dev/i2c-5", false},
		{"missing number", "5", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			if c.bus == "" && !only {
				t.Skip("this machine has buses of its own")
			}
			b, err := Open(c.bus)
			if !c.ok {
				if err == nil {
					t.Fatal("opened a bus that is not there")
				}
				for _, want := range []string{fmt.Sprintf("%q", c.bus), "/dev/i2c-97", "raspi-config"} {
					if !strings.Contains(err.Error(), want) {
						t.Fatalf("error %q does not say %s", err, want)
					}
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if b != bus {
				t.Fatalf("opened %v", b)
			}
		})
	}
}

func TestProbe(t *testing.T) {
	bus := &fakeBus{acks: map[uint16]bool{0x40: true, 0x3c: true}}
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	for _, c := range []struct {
		name    string
		ctx     context.Context
		addr    uint16
		wantErr string
	}{
		{"answers", context.Background(), 0x40, ""},
		{"answers too", context.Background(), 0x3c, ""},
		{"nobody", context.Background(), 0x41, "no device answers at 0x41"},
		{"reserved low", context.Background(), 0x00, "0x00: not a 7-bit"},
		{"reserved high", context.Background(), 0x78, "0x78: not a 7-bit"},
		{"10-bit", context.Background(), 0x3ff, "0x3ff: not a 7-bit"},
		{"cancelled", cancelled, 0x40, "context canceled"},
	} {
		t.Run(c.name, func(t *testing.T) {
			before := len(bus.reads)
			err := Probe(c.ctx, bus, c.addr)
			if c.wantErr == "" {
				if err != nil {
					t.Fatal(err)
				}
				if len(bus.reads) != before+1 {
					t.Fatalf("%d reads", len(bus.reads)-before)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), c.wantErr) {
				t.Fatalf("error %v, want %q", err, c.wantErr)
			}
		})
	}
	if err := Probe(context.Background(), nil, 0x40); err == nil {
		t.Fatal("probed a nil bus")
	}
}

// A display that refuses reads is found by a write, and the write is the
// bytes given; nothing to write is refused.
func TestProbeWrite(t *testing.T) {
	bus := &fakeBus{acks: map[uint16]bool{0x3c: true}, noReads: map[uint16]bool{0x3c: true}}
	if err := Probe(context.Background(), bus, 0x3c); err == nil {
		t.Fatal("a read of a device that refuses reads succeeded")
	}
	if err := ProbeWrite(context.Background(), bus, 0x3c, []byte{0x00, 0xE3}); err != nil {
		t.Fatal(err)
	}
	if last := bus.written[len(bus.written)-1]; string(last) != "\x00\xe3" {
		t.Fatalf("wrote % x", last)
	}
	if err := ProbeWrite(context.Background(), bus, 0x3d, []byte{0x00, 0xE3}); err == nil || !strings.Contains(err.Error(), "no device answers at 0x3d") {
		t.Fatalf("nobody at 0x3d: %v", err)
	}
	if err := ProbeWrite(context.Background(), bus, 0x3c, nil); err == nil {
		t.Fatal("a probe writing nothing")
	}
}

func TestParseAddr(t *testing.T) {
	for _, c := range []struct {
		in   string
		want uint16
		ok   bool
	}{
		{"0x40", 0x40, true},
		{"0X3C", 0x3c, true},
		{"0x3d", 0x3d, true},
		{"64", 64, true},
		{"3", 3, true},
		{"0x77", 0x77, true},
		{"119", 119, true},
		{"0x03", 3, true},
		{"0x0040", 0x40, true},
		{"", 0, false},
		{"0x", 0, false},
		{"0x78", 0, false},
		{"120", 0, false},
		{"0x02", 0, false},
		{"0", 0, false},
		{"-64", 0, false},
		{"+64", 0, false},
		{" 64", 0, false},
		{"6_4", 0, false},
		{"0x4_0", 0, false},
		{"0o100", 0, false},
		{"0b1000000", 0, false},
		{"40h", 0, false},
		{"0x10040", 0, false},
		{"65600", 0, false},
		{"99999999999999999999", 0, false},
	} {
		t.Run(c.in, func(t *testing.T) {
			got, err := ParseAddr(c.in)
			if !c.ok {
				if err == nil || !errors.Is(err, ErrAddr) || !strings.Contains(err.Error(), fmt.Sprintf("%q", c.in)) {
					t.Fatalf("ParseAddr(%q) = %#x, %v", c.in, got, err)
				}
				return
			}
			if err != nil || got != c.want {
				t.Fatalf("ParseAddr(%q) = %#x, %v; want %#x", c.in, got, err, c.want)
			}
		})
	}
}

// FuzzParseAddr: any text gives an address in 0x03..0x77 or an error,
// and an address read prints back, in both notations, to itself.
func FuzzParseAddr(f *testing.F) {
	for _, s := range []string{"0x40", "64", "0x78", "", "0x", "-1", "0x0040", "1e3"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		a, err := ParseAddr(s)
		if err != nil {
			if a != 0 {
				t.Fatalf("%q: %#x with an error", s, a)
			}
			return
		}
		if a < MinAddr || a > MaxAddr {
			t.Fatalf("%q: %#x out of range", s, a)
		}
		for _, again := range []string{fmt.Sprintf("0x%02x", a), fmt.Sprint(a)} {
			if b, err := ParseAddr(again); err != nil || b != a {
				t.Fatalf("%q → %#x → %q → %#x, %v", s, a, again, b, err)
			}
		}
	})
}
