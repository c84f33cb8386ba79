package button

import (
	"context"
	"sync"
	"testing"
	"time"

	"periph.io/x/conn/v3/gpio"
	"periph.io/x/conn/v3/gpio/gpiotest"
)

func TestShortAndLongPress(t *testing.T) {
	pin := &gpiotest.Pin{N: "GPIO27", EdgesChan: make(chan gpio.Level, 4)}
	var mu sync.Mutex
	var events []string
	rec := func(e string) { mu.Lock(); events = append(events, e); mu.Unlock() }
	b := &Button{Pin: pin, LongPress: 200 * time.Millisecond,
		OnShort: func() { rec("short") },
		OnLong: func(held bool) {
			if held {
				rec("hold")
			} else {
				rec("release")
			}
		}}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); b.Run(ctx) }()
	waitConfigured(t, pin)

	pin.EdgesChan <- gpio.Low // press
	time.Sleep(50 * time.Millisecond)
	pin.EdgesChan <- gpio.High // release: short
	time.Sleep(50 * time.Millisecond)
	pin.EdgesChan <- gpio.Low // press and hold
	time.Sleep(350 * time.Millisecond)
	mu.Lock()
	heldBeforeRelease := len(events) == 2 && events[1] == "hold"
	mu.Unlock()
	pin.EdgesChan <- gpio.High
	time.Sleep(50 * time.Millisecond)
	cancel()
	wg.Wait()
	mu.Lock()
	defer mu.Unlock()
	if !heldBeforeRelease || len(events) != 3 || events[0] != "short" || events[2] != "release" {
		t.Fatalf("events %v (held before release: %v)", events, heldBeforeRelease)
	}
	if pull(pin) != gpio.PullUp {
		t.Fatal("the button pin must use the internal pull-up")
	}
}

func TestStopReleasesAHeldFloor(t *testing.T) {
	pin := &gpiotest.Pin{N: "GPIO27", EdgesChan: make(chan gpio.Level, 4)}
	var last bool
	var mu sync.Mutex
	b := &Button{Pin: pin, LongPress: 50 * time.Millisecond, OnLong: func(h bool) { mu.Lock(); last = h; mu.Unlock() }}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { b.Run(ctx); close(done) }()
	waitConfigured(t, pin)
	pin.EdgesChan <- gpio.Low
	time.Sleep(150 * time.Millisecond)
	cancel()
	<-done
	mu.Lock()
	defer mu.Unlock()
	if last {
		t.Fatal("the floor stayed held after the button stopped")
	}
}

// waitConfigured waits until Run has set the pin up: gpiotest drops edges
// queued before In.
func waitConfigured(t *testing.T, pin *gpiotest.Pin) {
	t.Helper()
	for deadline := time.Now().Add(2 * time.Second); pull(pin) != gpio.PullUp; {
		if time.Now().After(deadline) {
			t.Fatal("button never configured its pin")
		}
		time.Sleep(time.Millisecond)
	}
	time.Sleep(5 * time.Millisecond)
}

// pull reads the fake's pull under its lock (gpiotest.Pin.Pull does not).
func pull(p *gpiotest.Pin) gpio.Pull {
	p.Lock()
	defer p.Unlock()
	return p.P
}
