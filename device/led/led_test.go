package led

import (
	"context"
	"sync"
	"testing"
	"time"

	"periph.io/x/conn/v3/gpio"
	"periph.io/x/conn/v3/gpio/gpiotest"
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

// TestShowsThePatternItIsGiven: steady at first, then a slow and a fast
// blink, dark, and off after Run ends.
func TestShowsThePatternItIsGiven(t *testing.T) {
	pin := &gpiotest.Pin{N: "GPIO17"}
	l := New(pin)
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); l.Run(ctx) }()
	time.Sleep(20 * time.Millisecond)
	if n, lvl := toggles(pin, 300*time.Millisecond); n != 0 || lvl != gpio.High {
		t.Fatalf("at start: %d toggles, level %v; want steady on", n, lvl)
	}
	l.Set(Pattern{On: 250 * time.Millisecond, Off: 250 * time.Millisecond})
	slow, _ := toggles(pin, 1100*time.Millisecond)
	l.Set(Pattern{On: 60 * time.Millisecond, Off: 60 * time.Millisecond})
	fast, _ := toggles(pin, 1100*time.Millisecond)
	if slow < 3 || fast < 2*slow {
		t.Fatalf("slow pattern toggled %d times, fast %d: want a slow and a fast blink", slow, fast)
	}
	l.Set(Dark)
	time.Sleep(20 * time.Millisecond)
	if n, lvl := toggles(pin, 300*time.Millisecond); n != 0 || lvl != gpio.Low {
		t.Fatalf("dark: %d toggles, level %v; want steady off", n, lvl)
	}
	l.Set(Steady)
	time.Sleep(20 * time.Millisecond)
	if n, lvl := toggles(pin, 300*time.Millisecond); n != 0 || lvl != gpio.High {
		t.Fatalf("steady: %d toggles, level %v; want steady on", n, lvl)
	}
	cancel()
	wg.Wait()
	if pin.Read() != gpio.Low {
		t.Fatal("LED left on after stop")
	}
}
