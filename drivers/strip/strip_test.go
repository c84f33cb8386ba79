package strip

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"image/color"
	"math"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"
	"periph.io/x/conn/v3/spi"
	"periph.io/x/conn/v3/spi/spireg"
	"periph.io/x/conn/v3/spi/spitest"
)

// TestMain fails the package's tests if any goroutine outlives them.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// leds is a Pixels that keeps every write and, like periph's drivers,
// refuses a stream that is not whole LEDs or is longer than the strip.
type leds struct {
	mu     sync.Mutex
	count  int
	writes [][]byte
	halts  int
	fail   error
}

func (l *leds) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.fail != nil {
		return 0, l.fail
	}
	if len(p)%3 != 0 || len(p) > 3*l.count {
		return 0, errors.New("invalid RGB stream length")
	}
	l.writes = append(l.writes, slices.Clone(p))
	return len(p), nil
}

func (l *leds) Halt() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.halts++
	return nil
}

func (l *leds) got() [][]byte {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.writes)
}

// repeat is n LEDs of (r, g, b).
func repeat(n int, r, g, b byte) []byte { return bytes.Repeat([]byte{r, g, b}, n) }

func TestSolidAndOff(t *testing.T) {
	for _, c := range []struct {
		name       string
		brightness float64
		colour     color.RGBA
		pattern    string
		want       []byte
	}{
		{"red, full", 1, color.RGBA{255, 0, 0, 255}, Solid, repeat(4, 255, 0, 0)},
		{"half", 0.5, color.RGBA{200, 101, 1, 255}, Solid, repeat(4, 100, 51, 1)},
		{"brightness above 1 is 1", 7, color.RGBA{10, 20, 30, 255}, Solid, repeat(4, 10, 20, 30)},
		{"brightness below 0 is 0", -3, color.RGBA{10, 20, 30, 255}, Solid, repeat(4, 0, 0, 0)},
		{"brightness NaN is 0", math.NaN(), color.RGBA{10, 20, 30, 255}, Solid, repeat(4, 0, 0, 0)},
		{"brightness +Inf is 1", math.Inf(1), color.RGBA{10, 20, 30, 255}, Solid, repeat(4, 10, 20, 30)},
		{"off", 1, color.RGBA{255, 255, 255, 255}, Off, repeat(4, 0, 0, 0)},
	} {
		t.Run(c.name, func(t *testing.T) {
			px := &leds{count: 4}
			s := New(px, 4, c.brightness)
			start := time.Now()
			// A duration does not make solid or off wait.
			if err := s.Play(context.Background(), c.colour, c.pattern, time.Hour); err != nil {
				t.Fatal(err)
			}
			if time.Since(start) > time.Second {
				t.Fatal("solid waited")
			}
			if w := px.got(); len(w) != 1 || !bytes.Equal(w[0], c.want) {
				t.Fatalf("writes %v, want [%v]", w, c.want)
			}
		})
	}
}

func TestRefuses(t *testing.T) {
	red := color.RGBA{255, 0, 0, 255}
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	for _, c := range []struct {
		name    string
		count   int
		ctx     context.Context
		pattern string
		d       time.Duration
		wantErr string
	}{
		{"unknown pattern", 3, context.Background(), "disco", 0, `"disco" (known: solid, blink, pulse, rainbow, off)`},
		{"empty pattern", 3, context.Background(), "", 0, `unknown pattern ""`},
		{"no LEDs", 0, context.Background(), Solid, 0, "0 LEDs"},
		{"negative count", -5, context.Background(), Solid, 0, "-5 LEDs"},
		{"huge count", MaxLEDs + 1, context.Background(), Solid, 0, "1025 LEDs"},
		{"negative duration", 3, context.Background(), Blink, -time.Second, "blink for -1s"},
		{"cancelled", 3, cancelled, Solid, 0, "context canceled"},
	} {
		t.Run(c.name, func(t *testing.T) {
			px := &leds{count: max(c.count, 0)}
			err := New(px, c.count, 1).Play(c.ctx, red, c.pattern, c.d)
			if err == nil || !strings.Contains(err.Error(), c.wantErr) {
				t.Fatalf("error %v, want %q", err, c.wantErr)
			}
			if len(px.got()) != 0 {
				t.Fatal("wrote")
			}
		})
	}
	// A failing strip: the error says so.
	px := &leds{count: 2, fail: errors.New("spi: transfer failed")}
	if err := New(px, 2, 1).Play(context.Background(), red, Pulse, time.Second); err == nil || !strings.Contains(err.Error(), "transfer failed") {
		t.Fatalf("write error: %v", err)
	}
}

// runs collapses equal consecutive writes.
func runs(ws [][]byte) [][]byte {
	var out [][]byte
	for _, w := range ws {
		if len(out) == 0 || !bytes.Equal(out[len(out)-1], w) {
			out = append(out, w)
		}
	}
	return out
}

func TestBlink(t *testing.T) {
	px := &leds{count: 3}
	s := New(px, 3, 0.5)
	start := time.Now()
	if err := s.Play(context.Background(), color.RGBA{0, 200, 100, 255}, Blink, 1100*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took < 1100*time.Millisecond || took > 2*time.Second {
		t.Fatalf("blinked for %v", took)
	}
	on, off := repeat(3, 0, 100, 50), repeat(3, 0, 0, 0)
	w := px.got()
	// On at 0 s, off at 0.5 s, on at 1 s, off at the end; a frame the
	// strip shows already is not sent again.
	if want := [][]byte{on, off, on, off}; fmt.Sprint(w) != fmt.Sprint(want) {
		t.Fatalf("writes %v, want %v", w, want)
	}
}

func TestPulse(t *testing.T) {
	px := &leds{count: 2}
	s := New(px, 2, 0.8)
	if err := s.Play(context.Background(), color.RGBA{250, 100, 0, 255}, Pulse, 700*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	w := px.got()
	if len(w) < 10 || len(w) > 25 {
		t.Fatalf("%d writes in 0.7 s at 30 fps", len(w))
	}
	// The first second of a breath rises; every LED alike, red 2.5× green,
	// never above brightness; the strip ends off.
	prev := -1
	for _, f := range w[:len(w)-1] {
		r, g := int(f[0]), int(f[1])
		if r < prev || r > 200 || f[2] != 0 || math.Abs(float64(r)-2.5*float64(g)) > 2 || !bytes.Equal(f[:3], f[3:]) {
			t.Fatalf("frame %v after red %d", f, prev)
		}
		prev = r
	}
	if prev < 50 {
		t.Fatalf("the breath only reached red %d", prev)
	}
	if !bytes.Equal(w[len(w)-1], repeat(2, 0, 0, 0)) {
		t.Fatalf("ends with %v", w[len(w)-1])
	}
}

func TestRainbowUntilCancelled(t *testing.T) {
	px := &leds{count: 6}
	s := New(px, 6, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	err := s.Play(ctx, color.RGBA{}, Rainbow, 0)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Play: %v", err)
	}
	w := px.got()
	first := w[0]
	// Hues along the strip: red, yellow, green, cyan, blue, magenta.
	if want := []byte{255, 0, 0, 255, 255, 0, 0, 255, 0, 0, 255, 255, 0, 0, 255, 255, 0, 255}; !bytes.Equal(first, want) {
		t.Fatalf("first frame %v, want %v", first, want)
	}
	if len(runs(w)) < 5 {
		t.Fatalf("%d distinct frames: the rainbow did not turn", len(runs(w)))
	}
	if !bytes.Equal(w[len(w)-1], repeat(6, 0, 0, 0)) {
		t.Fatal("not off after ctx ended")
	}
}

func TestPlaysAreSerialized(t *testing.T) {
	px := &leds{count: 1}
	s := New(px, 1, 1)
	ctx1, cancel1 := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- s.Play(ctx1, color.RGBA{255, 0, 0, 255}, Blink, 0) }()
	time.Sleep(50 * time.Millisecond)
	// A second Play waits for the first; with a short ctx, it gives up.
	short, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if err := s.Play(short, color.RGBA{0, 0, 255, 255}, Solid, 0); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("a second Play while one runs: %v", err)
	}
	cancel1()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatal(err)
	}
	if err := s.Play(context.Background(), color.RGBA{0, 0, 255, 255}, Solid, 0); err != nil {
		t.Fatal(err)
	}
	w := px.got()
	if !bytes.Equal(w[len(w)-1], []byte{0, 0, 255}) || !bytes.Equal(w[len(w)-2], []byte{0, 0, 0}) {
		t.Fatalf("writes %v", w)
	}
}

// nrz is one byte as the WS2812 SPI stream carries it, written out here:
// 4 SPI bits a bit, MSB first, 1110 for a one and 1000 for a zero.
func nrz(v byte) []byte {
	var out []byte
	for i := 7; i >= 0; i -= 2 {
		nib := func(bit byte) byte {
			if bit != 0 {
				return 0xE
			}
			return 0x8
		}
		out = append(out, nib(v>>i&1)<<4|nib(v>>(i-1)&1))
	}
	return out
}

func TestSPIStreams(t *testing.T) {
	const n = 5
	colour := color.RGBA{200, 100, 51, 255}
	// At brightness 0.5: R 100, G 50, B 26 (25.5 rounds up).
	r, g, b := byte(100), byte(50), byte(26)
	var ws []byte
	ws = append(ws, 0, 0, 0) // a low start, then G R B per LED
	for range n {
		ws = append(ws, nrz(g)...)
		ws = append(ws, nrz(r)...)
		ws = append(ws, nrz(b)...)
	}
	ws = append(ws, 0, 0, 0) // latch
	var apa []byte
	apa = append(apa, 0, 0, 0, 0) // start frame, then 0xFF B G R per LED
	for range n {
		apa = append(apa, 0xFF, b, g, r)
	}
	apa = append(apa, bytes.Repeat([]byte{0xFF}, n/16+1)...) // end frame
	for _, c := range []struct {
		kind string
		want []byte
	}{{WS2812, ws}, {APA102, apa}} {
		t.Run(c.kind, func(t *testing.T) {
			port := &spitest.Record{}
			s, err := newSPI(c.kind, port, n, 0.5)
			if err != nil {
				t.Fatal(err)
			}
			if err := s.Play(context.Background(), colour, Solid, 0); err != nil {
				t.Fatal(err)
			}
			if len(port.Ops) != 1 || !bytes.Equal(port.Ops[0].W, c.want) {
				t.Fatalf("stream\n% x\nwant\n% x", port.Ops[0].W, c.want)
			}
		})
	}
}

func TestOpenSPI(t *testing.T) {
	if err := func() error { _, err := OpenSPI(WS2812, "/dev/spidev0.0", 8, 1); return err }(); err == nil {
		t.Skip("this machine has an SPI port 0.0")
	} else if len(spireg.All()) == 0 && (!strings.Contains(err.Error(), `"/dev/spidev0.0"`) || !strings.Contains(err.Error(), "dtparam=spi=on")) {
		t.Fatalf("open on a machine without SPI: %v", err)
	}
	var port *spitest.Record
	if err := spireg.Register("/dev/spidev9.0", []string{"SPI9.0"}, 90, func() (spi.PortCloser, error) {
		port = &spitest.Record{}
		return port, nil
	}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { spireg.Unregister("/dev/spidev9.0") })
	for _, c := range []struct {
		name, kind, port string
		count            int
		wantErr          string
	}{
		{"ws2812", WS2812, "/dev/spidev9.0", 8, ""},
		{"apa102 by alias", APA102, "SPI9.0", 8, ""},
		{"missing port", WS2812, "/dev/spidev3.1", 8, `"/dev/spidev3.1"`},
		{"unknown kind", "sk6812", "/dev/spidev9.0", 8, `unknown kind "sk6812"`},
		{"no LEDs", WS2812, "/dev/spidev9.0", 0, "0 LEDs"},
		{"too many", WS2812, "/dev/spidev9.0", 5000, "5000 LEDs"},
	} {
		t.Run(c.name, func(t *testing.T) {
			s, err := OpenSPI(c.kind, c.port, c.count, 1)
			if c.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), c.wantErr) {
					t.Fatalf("error %v, want %q", err, c.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if err := s.Play(context.Background(), color.RGBA{1, 2, 3, 255}, Solid, 0); err != nil {
				t.Fatal(err)
			}
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			if err := s.Close(); err != nil {
				t.Fatal("a second Close:", err)
			}
			// The solid write, then Close's halt.
			if len(port.Ops) != 2 {
				t.Fatalf("%d transfers", len(port.Ops))
			}
		})
	}
}

func TestParseColor(t *testing.T) {
	for _, c := range []struct {
		in   string
		want color.RGBA
		ok   bool
	}{
		{"red", color.RGBA{255, 0, 0, 255}, true},
		{"Green", color.RGBA{0, 255, 0, 255}, true},
		{"BLUE", color.RGBA{0, 0, 255, 255}, true},
		{"white", color.RGBA{255, 255, 255, 255}, true},
		{"yellow", color.RGBA{255, 255, 0, 255}, true},
		{"orange", color.RGBA{255, 128, 0, 255}, true},
		{"purple", color.RGBA{128, 0, 255, 255}, true},
		{"pink", color.RGBA{255, 64, 128, 255}, true},
		{"cyan", color.RGBA{0, 255, 255, 255}, true},
		{"off", color.RGBA{0, 0, 0, 255}, true},
		{"black", color.RGBA{0, 0, 0, 255}, true},
		{"#ff8000", color.RGBA{255, 128, 0, 255}, true},
		{"#0A0b0C", color.RGBA{10, 11, 12, 255}, true},
		{"#000000", color.RGBA{0, 0, 0, 255}, true},
		{"", color.RGBA{}, false},
		{"#", color.RGBA{}, false},
		{"#fff", color.RGBA{}, false},
		{"ff8000", color.RGBA{}, false},
		{"#ff80000", color.RGBA{}, false},
		{"#gg0000", color.RGBA{}, false},
		{"# ff800", color.RGBA{}, false},
		{"#+f8000", color.RGBA{}, false},
		{" red", color.RGBA{}, false},
		{"magenta", color.RGBA{}, false},
		{"rgb(1,2,3)", color.RGBA{}, false},
	} {
		t.Run(c.in, func(t *testing.T) {
			got, err := ParseColor(c.in)
			if !c.ok {
				if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("%q", c.in)) || !strings.Contains(err.Error(), "orange") {
					t.Fatalf("ParseColor(%q) = %v, %v", c.in, got, err)
				}
				return
			}
			if err != nil || got != c.want {
				t.Fatalf("ParseColor(%q) = %v, %v; want %v", c.in, got, err, c.want)
			}
		})
	}
}

// FuzzParseColor: any text is a colour or an error; a colour is opaque and
// prints back, as #rrggbb, to itself.
func FuzzParseColor(f *testing.F) {
	for _, s := range []string{"red", "#ff8000", "#FFF", "ORANGE", "#zz0000", "", "off"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		c, err := ParseColor(s)
		if err != nil {
			if c != (color.RGBA{}) {
				t.Fatalf("%q: %v with an error", s, c)
			}
			return
		}
		if c.A != 255 {
			t.Fatalf("%q: alpha %d", s, c.A)
		}
		hex := fmt.Sprintf("#%02x%02x%02x", c.R, c.G, c.B)
		if again, err := ParseColor(hex); err != nil || again != c {
			t.Fatalf("%q → %v → %q → %v, %v", s, c, hex, again, err)
		}
	})
}
