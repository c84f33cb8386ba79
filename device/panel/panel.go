// Package panel is the robot's front panel and what it means: the status
// LED shows what the companion is doing (Patterns: listening is steady on,
// thinking a slow blink, speaking a fast blink, an error a short flash once
// a second; the LED only shows the pattern the panel gives it), a short
// press of the button mutes the companion (it votes listen and never takes
// the floor), and a long press holds the floor for the human until
// released (docs/protocol.md: the retained floor/hold topic; the floor grants
// nobody meanwhile).
//
// # Concurrency
//
// Run owns the LED's and the button's goroutines; Muted and Status are
// safe from any goroutine.
package panel

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/chorus-robotics/chorus/device/button"
	"github.com/chorus-robotics/chorus/device/led"
	"github.com/chorus-robotics/chorus/runtime/companion"
	"github.com/chorus-robotics/chorus/runtime/room"
)

// holdTimeout bounds publishing a hold or its release.
const holdTimeout = 2 * time.Second

// Patterns is what each companion status looks like on the LED. A status
// not in it shows as Failed does.
var Patterns = map[companion.Status]led.Pattern{
	companion.Listening: led.Steady,
	companion.Thinking:  {On: 250 * time.Millisecond, Off: 250 * time.Millisecond},
	companion.Speaking:  {On: 60 * time.Millisecond, Off: 60 * time.Millisecond},
	companion.Failed:    {On: 100 * time.Millisecond, Off: 900 * time.Millisecond},
}

// pattern is what s looks like on the LED.
func pattern(s companion.Status) led.Pattern {
	if p, ok := Patterns[s]; ok {
		return p
	}
	return Patterns[companion.Failed]
}

// Panel is an LED and a button, both optional.
type Panel struct {
	LED    *led.LED       // nil: no LED
	Button *button.Button // nil: no button; Run sets its OnShort and OnLong
	Room   *room.Room     // where a hold is published
	ID     string         // the companion the panel belongs to
	Log    *slog.Logger

	// OnMute, if set, is told every mute and unmute (the button's, Home
	// Assistant's); it must not block.
	OnMute func(muted bool)

	muted    atomic.Bool
	micOff   atomic.Bool
	status   atomic.Value // the companion's status (companion.Status)
	flashing atomic.Bool  // a Flash shows on the LED
	flashes  atomic.Int64 // the newest Flash, so that only it restores the status
}

// Muted reports whether the companion is muted (companion.Config.Muted).
func (p *Panel) Muted() bool { return p.muted.Load() }

// Status shows s on the LED (companion.Config.OnStatus).
func (p *Panel) Status(s companion.Status) {
	p.status.Store(s)
	if p.LED != nil && !p.flashing.Load() {
		p.LED.Set(pattern(s))
	}
}

// Flash shows pt on the LED for d (an led action on the status LED), then
// the companion's status again; a newer Flash replaces it. It never
// blocks.
func (p *Panel) Flash(pt led.Pattern, d time.Duration) {
	if p.LED == nil {
		return
	}
	n := p.flashes.Add(1)
	p.flashing.Store(true)
	p.LED.Set(pt)
	time.AfterFunc(d, func() {
		if p.flashes.Load() == n {
			p.flashing.Store(false)
			s, _ := p.status.Load().(companion.Status)
			if s == "" {
				s = companion.Listening
			}
			p.LED.Set(pattern(s))
		}
	})
}

// Run drives the LED and the button until ctx ends; a hold still on then
// is released.
func (p *Panel) Run(ctx context.Context) error {
	var wg sync.WaitGroup
	errs := make(chan error, 2)
	if p.LED != nil {
		wg.Add(1)
		go func() { defer wg.Done(); errs <- p.LED.Run(ctx) }()
	}
	if p.Button != nil {
		p.Button.OnShort = p.toggleMute
		p.Button.OnLong = p.hold
		wg.Add(1)
		go func() { defer wg.Done(); errs <- p.Button.Run(ctx) }()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

func (p *Panel) toggleMute() {
	m := !p.muted.Load()
	p.SetMuted(m)
	p.log().Info("button: mute", "muted", m)
}

// SetMuted mutes or unmutes the companion, as the button's short press
// does (Home Assistant's mute switch); OnMute is told.
func (p *Panel) SetMuted(m bool) {
	p.muted.Store(m)
	if p.OnMute != nil {
		p.OnMute(m)
	}
}

// MicOff reports whether the microphone alone is switched off (Home
// Assistant's microphone switch); the mute stops it too.
func (p *Panel) MicOff() bool { return p.micOff.Load() }

// SetMic switches the microphone on or off.
func (p *Panel) SetMic(on bool) { p.micOff.Store(!on) }

// Deaf reports whether the ear must not listen: muted, or the microphone
// off (ear.Gate.Muted).
func (p *Panel) Deaf() bool { return p.Muted() || p.MicOff() }

func (p *Panel) hold(held bool) {
	p.log().Info("button: the human holds the floor", "held", held)
	ctx, cancel := context.WithTimeout(context.Background(), holdTimeout)
	defer cancel()
	if err := p.Room.SendHold(ctx, p.ID, held, time.Now()); err != nil {
		p.log().Error("button: hold not published", "held", held, "err", err)
	}
}

func (p *Panel) log() *slog.Logger {
	if p.Log == nil {
		return slog.New(slog.DiscardHandler)
	}
	return p.Log
}
