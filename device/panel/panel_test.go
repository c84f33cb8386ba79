package panel

import (
	"context"
	"sync"
	"testing"
	"time"

	"periph.io/x/conn/v3/gpio"
	"periph.io/x/conn/v3/gpio/gpiotest"

	"github.com/chorus-robotics/chorus/device/led"
	"github.com/chorus-robotics/chorus/runtime/companion"
)

// toggles samples the pin for d and counts level changes.
func toggles(p *gpiotest.Pin, d time.Duration) (n int, last gpio.Level) {
	prev := p.Read()
	end := time.Now().Add(d)
	for time.Now().Before(end) {
		if l := p.Read(); l != prev {
			n++
			prev = l
		}
		time.Sleep(5 * time.Millisecond)
	}
	return n, prev
}

// TestStatusPatterns: the panel's LED is steady while the companion
// listens, blinks slowly while it thinks and fast while it speaks, and is
// off once the panel stops.
func TestStatusPatterns(t *testing.T) {
	pin := &gpiotest.Pin{N: "GPIO17"}
	p := &Panel{LED: led.New(pin)}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); p.Run(ctx) }()
	time.Sleep(20 * time.Millisecond)
	if n, lvl := toggles(pin, 300*time.Millisecond); n != 0 || lvl != gpio.High {
		t.Fatalf("listening: %d toggles, level %v; want steady on", n, lvl)
	}
	p.Status(companion.Thinking)
	slow, _ := toggles(pin, 1100*time.Millisecond)
	p.Status(companion.Speaking)
	fast, _ := toggles(pin, 1100*time.Millisecond)
	if slow < 3 || fast < 2*slow {
		t.Fatalf("thinking toggled %d times, speaking %d: want a slow and a fast blink", slow, fast)
	}
	cancel()
	wg.Wait()
	if pin.Read() != gpio.Low {
		t.Fatal("LED left on after stop")
	}
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
