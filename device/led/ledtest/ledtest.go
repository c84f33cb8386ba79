// Package ledtest is what tests of an LED, and of what drives one, watch
// it with: a fake pin sampled for its level changes.
package ledtest

import (
	"context"
	"sync"
	"testing"
	"time"

	"periph.io/x/conn/v3/gpio"
	"periph.io/x/conn/v3/gpio/gpiotest"
)

// Toggles samples the pin for d and counts level changes.
func Toggles(p *gpiotest.Pin, d time.Duration) (n int, last gpio.Level) {
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

// Start runs run (an LED's or a panel's Run) until stop, which cancels
// its context and waits for it to return.
func Start(run func(context.Context) error) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); run(ctx) }()
	return func() { cancel(); wg.Wait() }
}

// Steady lets the pin settle for 20 ms, then fails the test unless it
// holds level for 300 ms; when names the moment checked ("at start").
func Steady(t *testing.T, p *gpiotest.Pin, when string, level gpio.Level) {
	t.Helper()
	want := "on"
	if level == gpio.Low {
		want = "off"
	}
	time.Sleep(20 * time.Millisecond)
	if n, lvl := Toggles(p, 300*time.Millisecond); n != 0 || lvl != level {
		t.Fatalf("%s: %d toggles, level %v; want steady %s", when, n, lvl, want)
	}
}

// Blinks fails the test unless the pin blinks slowly for a second after
// slow() and at least twice as fast after fast(); the names say what
// each set (for the failure).
func Blinks(t *testing.T, p *gpiotest.Pin, slowName string, slow func(), fastName string, fast func()) {
	t.Helper()
	slow()
	ns, _ := Toggles(p, 1100*time.Millisecond)
	fast()
	nf, _ := Toggles(p, 1100*time.Millisecond)
	if ns < 3 || nf < 2*ns {
		t.Fatalf("%s toggled %d times, %s %d: want a slow and a fast blink", slowName, ns, fastName, nf)
	}
}

// Off fails the test if the pin is left on (after a Run has stopped).
func Off(t *testing.T, p *gpiotest.Pin) {
	t.Helper()
	if p.Read() != gpio.Low {
		t.Fatal("LED left on after stop")
	}
}
