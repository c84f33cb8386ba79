// Package strip lights an RGB LED strip — WS2812 ("NeoPixel", periph's
// nrzled) or APA102 ("DotStar", periph's apa102) on an SPI port — with a
// colour and a pattern: solid, blink, pulse, rainbow, off.
//
// # Usage
//
//	s, err := strip.OpenSPI("ws2812", "/dev/spidev0.0", 12, 0.3)
//	defer s.Close()
//	c, _ := strip.ParseColor("orange")
//	err = s.Play(ctx, c, "pulse", 3*time.Second)
//
// # Patterns
//
// solid and off write once and return. blink (½ s on, ½ s off), pulse (a
// 2 s breath) and rainbow (hues along the strip, turning every 3 s)
// animate at 30 frames a second, each frame computed from its number, not
// the clock; they run for d, or until ctx ends when d is 0, and leave the
// strip off. Every byte written is scaled by the brightness (0..1).
//
// # Concurrency
//
// Plays are serialized: a Play waits (as long as its ctx allows) for the
// one before it to return; the caller cancels the older one first.
package strip

import (
	"context"
	"errors"
	"fmt"
	"image/color"
	"io"
	"math"
	"slices"
	"strings"
	"sync"
	"time"

	"periph.io/x/conn/v3/physic"
	"periph.io/x/conn/v3/spi"
	"periph.io/x/conn/v3/spi/spireg"
	"periph.io/x/devices/v3/apa102"
	"periph.io/x/devices/v3/nrzled"
	"periph.io/x/host/v3"
)

// Pixels is a strip as a byte sink: 3 bytes (R, G, B) per LED. Both
// periph drivers (*nrzled.Dev, *apa102.Dev) are Pixels.
type Pixels interface {
	Write(p []byte) (int, error)
	Halt() error
}

var (
	_ Pixels = (*nrzled.Dev)(nil)
	_ Pixels = (*apa102.Dev)(nil)
)

// Limits and timing.
const (
	MaxLEDs    = 1024
	FrameRate  = 30 // frames a second while animating
	frame      = time.Second / FrameRate
	blinkHalf  = FrameRate / 2 // frames on, then off
	pulseCycle = 2 * FrameRate // frames a breath lasts
	rainbowRev = 3 * FrameRate // frames for the hues to turn once
)

// Kinds of strip OpenSPI drives.
const (
	WS2812 = "ws2812"
	APA102 = "apa102"
)

// A strip's defaults: the Pi's first SPI port, at half brightness.
const (
	DefaultPort       = "/dev/spidev0.0"
	DefaultBrightness = 0.5
)

// Patterns Play takes.
const (
	Solid   = "solid"
	Blink   = "blink"
	Pulse   = "pulse"
	Rainbow = "rainbow"
	Off     = "off"
)

// Patterns are the names Play takes.
func Patterns() []string { return []string{Solid, Blink, Pulse, Rainbow, Off} }

// Strip is an LED strip and how bright it may be.
type Strip struct {
	px         Pixels
	count      int
	brightness float64
	closer     io.Closer // the port OpenSPI opened; nil after New

	turn chan struct{} // one Play at a time; holds buf and last
	buf  []byte
	last []byte // what was written last; nil: unknown

	closeOnce sync.Once
	closeErr  error
}

// New is a strip of count LEDs on px, every write scaled by brightness
// (clamped to 0..1, NaN is 0). A count outside 1..1024 makes Play refuse.
func New(px Pixels, count int, brightness float64) *Strip {
	return &Strip{px: px, count: count, brightness: clampUnit(brightness), turn: make(chan struct{}, 1)}
}

func clampUnit(v float64) float64 {
	if math.IsNaN(v) {
		return 0
	}
	return min(max(v, 0), 1)
}

func checkCount(count int) error {
	if count < 1 || count > MaxLEDs {
		return fmt.Errorf("strip: %d LEDs: a strip has 1..%d", count, MaxLEDs)
	}
	return nil
}

var (
	initOnce sync.Once
	initErr  error
)

// spiHint is what to check when an SPI port is missing.
const spiHint = "enable SPI with raspi-config (Interface Options → SPI) or dtparam=spi=on in /boot/firmware/config.txt, reboot, and check that /dev/spidev* exists and is readable by this user (group spi)"

// OpenSPI opens the SPI port (e.g. "/dev/spidev0.0"; "" is the first) and
// drives count LEDs of kind ("ws2812" or "apa102") on it. Close releases
// the port.
func OpenSPI(kind, port string, count int, brightness float64) (*Strip, error) {
	if kind != WS2812 && kind != APA102 {
		return nil, fmt.Errorf("strip: unknown kind %q (known: %s, %s)", kind, WS2812, APA102)
	}
	if err := checkCount(count); err != nil {
		return nil, err
	}
	initOnce.Do(func() {
		if _, err := host.Init(); err != nil {
			initErr = fmt.Errorf("strip: periph host init: %w", err)
		}
	})
	if initErr != nil {
		return nil, initErr
	}
	shown := fmt.Sprintf("%q", port)
	if port == "" {
		shown = "(the first port)"
	}
	if len(spireg.All()) == 0 {
		return nil, fmt.Errorf("strip: open SPI port %s: this machine has no SPI port: %s", shown, spiHint)
	}
	p, err := spireg.Open(port)
	if err != nil {
		return nil, fmt.Errorf("strip: open SPI port %s: %w; %s", shown, err, spiHint)
	}
	s, err := newSPI(kind, p, count, brightness)
	if err != nil {
		p.Close()
		return nil, fmt.Errorf("strip: %s on %s: %w", kind, shown, err)
	}
	s.closer = p
	return s, nil
}

// newSPI drives count LEDs of kind on port p.
func newSPI(kind string, p spi.Port, count int, brightness float64) (*Strip, error) {
	var px Pixels
	var err error
	switch kind {
	case WS2812:
		px, err = nrzled.NewSPI(p, &nrzled.Opts{NumPixels: count, Channels: 3, Freq: 2500 * physic.KiloHertz})
	case APA102:
		// The colours as given, without periph's perceptual curve or
		// colour temperature: brightness is this package's to apply.
		o := apa102.PassThruOpts
		o.NumPixels = count
		px, err = apa102.New(p, &o)
	default:
		err = fmt.Errorf("unknown kind %q (known: %s, %s)", kind, WS2812, APA102)
	}
	if err != nil {
		return nil, err
	}
	return New(px, count, brightness), nil
}

// Close turns the strip off and releases the port OpenSPI opened.
func (s *Strip) Close() error {
	s.closeOnce.Do(func() {
		var errs []error
		if err := s.px.Halt(); err != nil {
			errs = append(errs, fmt.Errorf("strip: halt: %w", err))
		}
		if s.closer != nil {
			if err := s.closer.Close(); err != nil {
				errs = append(errs, fmt.Errorf("strip: close port: %w", err))
			}
		}
		s.closeErr = errors.Join(errs...)
	})
	return s.closeErr
}

// Play shows colour c in pattern on the strip: see the package doc. d is
// how long an animated pattern runs (0: until ctx ends); solid and off
// ignore it. When ctx ends first the strip is turned off and Play returns
// ctx.Err() (also when d is 0). An unknown pattern is an error naming the
// known ones, and nothing is written.
func (s *Strip) Play(ctx context.Context, c color.RGBA, pattern string, d time.Duration) error {
	if !slices.Contains(Patterns(), pattern) {
		return fmt.Errorf("strip: unknown pattern %q (known: %s)", pattern, strings.Join(Patterns(), ", "))
	}
	if d < 0 {
		return fmt.Errorf("strip: %s for %v: a duration is 0 (until cancelled) or more", pattern, d)
	}
	if err := checkCount(s.count); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	select {
	case s.turn <- struct{}{}:
	case <-ctx.Done():
		return ctx.Err()
	}
	defer func() { <-s.turn }()
	if s.buf == nil {
		s.buf = make([]byte, 3*s.count)
	}
	switch pattern {
	case Solid:
		return s.write(func(int) color.RGBA { return c }, 1, true)
	case Off:
		return s.off()
	}
	var deadline <-chan time.Time
	if d > 0 {
		t := time.NewTimer(d)
		defer t.Stop()
		deadline = t.C
	}
	tick := time.NewTicker(frame)
	defer tick.Stop()
	for n := 0; ; n++ {
		var err error
		switch pattern {
		case Blink:
			on := 0.0
			if (n/blinkHalf)%2 == 0 {
				on = 1
			}
			err = s.write(func(int) color.RGBA { return c }, on, false)
		case Pulse:
			level := 0.5 - 0.5*math.Cos(2*math.Pi*float64(n%pulseCycle)/pulseCycle)
			err = s.write(func(int) color.RGBA { return c }, level, false)
		case Rainbow:
			err = s.write(func(i int) color.RGBA {
				return hue(float64(i)/float64(s.count) + float64(n%rainbowRev)/rainbowRev)
			}, 1, false)
		}
		if err != nil {
			s.off()
			return err
		}
		select {
		case <-tick.C:
		case <-deadline:
			return s.off()
		case <-ctx.Done():
			if err := s.off(); err != nil {
				return errors.Join(ctx.Err(), err)
			}
			return ctx.Err()
		}
	}
}

// write sends LED i the colour at(i) × level × brightness, skipping a
// frame the strip shows already unless always.
func (s *Strip) write(at func(i int) color.RGBA, level float64, always bool) error {
	k := level * s.brightness
	for i := range s.count {
		c := at(i)
		s.buf[3*i] = scale(c.R, k)
		s.buf[3*i+1] = scale(c.G, k)
		s.buf[3*i+2] = scale(c.B, k)
	}
	if !always && s.last != nil && slices.Equal(s.buf, s.last) {
		return nil
	}
	if _, err := s.px.Write(s.buf); err != nil {
		s.last = nil
		return fmt.Errorf("strip: write %d LEDs: %w", s.count, err)
	}
	s.last = append(s.last[:0], s.buf...)
	return nil
}

func (s *Strip) off() error {
	return s.write(func(int) color.RGBA { return color.RGBA{} }, 0, true)
}

func scale(v uint8, k float64) uint8 {
	return uint8(math.Round(float64(v) * k))
}

// hue is the fully saturated colour at h turns around the colour wheel
// (red at 0, green at ⅓, blue at ⅔).
func hue(h float64) color.RGBA {
	h -= math.Floor(h)
	x := h * 6
	f := x - math.Floor(x)
	up, down := uint8(math.Round(255*f)), uint8(math.Round(255*(1-f)))
	switch int(x) {
	case 0:
		return color.RGBA{255, up, 0, 255}
	case 1:
		return color.RGBA{down, 255, 0, 255}
	case 2:
		return color.RGBA{0, 255, up, 255}
	case 3:
		return color.RGBA{0, down, 255, 255}
	case 4:
		return color.RGBA{up, 0, 255, 255}
	default:
		return color.RGBA{255, 0, down, 255}
	}
}

// colours are the names ParseColor knows.
var colours = map[string]color.RGBA{
	"red":    {255, 0, 0, 255},
	"green":  {0, 255, 0, 255},
	"blue":   {0, 0, 255, 255},
	"white":  {255, 255, 255, 255},
	"yellow": {255, 255, 0, 255},
	"orange": {255, 128, 0, 255},
	"purple": {128, 0, 255, 255},
	"pink":   {255, 64, 128, 255},
	"cyan":   {0, 255, 255, 255},
	"off":    {0, 0, 0, 255},
	"black":  {0, 0, 0, 255},
}

// ColorNames are the names ParseColor knows, sorted.
func ColorNames() []string {
	out := make([]string, 0, len(colours))
	for n := range colours {
		out = append(out, n)
	}
	slices.Sort(out)
	return out
}

// ParseColor reads a colour: a name (red, green, blue, white, yellow,
// orange, purple, pink, cyan, off or black; any case) or #rrggbb.
func ParseColor(s string) (color.RGBA, error) {
	if c, ok := colours[strings.ToLower(s)]; ok {
		return c, nil
	}
	if len(s) == 7 && s[0] == '#' {
		var v [3]uint8
		ok := true
		for i := range v {
			hi, ok1 := unhex(s[1+2*i])
			lo, ok2 := unhex(s[2+2*i])
			ok = ok && ok1 && ok2
			v[i] = hi<<4 | lo
		}
		if ok {
			return color.RGBA{v[0], v[1], v[2], 255}, nil
		}
	}
	return color.RGBA{}, fmt.Errorf("strip: colour %q: write #rrggbb or one of %s", s, strings.Join(ColorNames(), ", "))
}

func unhex(b byte) (uint8, bool) {
	switch {
	case '0' <= b && b <= '9':
		return b - '0', true
	case 'a' <= b && b <= 'f':
		return b - 'a' + 10, true
	case 'A' <= b && b <= 'F':
		return b - 'A' + 10, true
	}
	return 0, false
}
