// Package face draws the robot's face — two eyes, eyebrows when angry, a
// mouth that moves while it talks — on a small monochrome display: an
// SSD1306 OLED over I²C (periph.io/x/devices/v3/ssd1306), 128×64 or
// 128×32, or anything with Bounds and Draw.
//
// # Usage
//
//	f, err := face.NewI2C(bus, 0x3c, 128, 64) // draws the neutral face
//	err = f.Show("happy")
//	go f.Talk(ctx) // the mouth moves until ctx ends, then closes
//
// # Drawing
//
// A face is plain geometry (filled ellipses, rings, half rings, thick
// lines) laid out on a 128×64 design grid and scaled to the display, one
// bit per pixel; Render is a pure function of (size, emotion, mouth), so
// the same state is the same picture. Eyes and eyebrows stay above design
// row 39, the mouth below row 40: moving the mouth never touches the eyes.
// A picture is sent only when it differs from the one shown.
//
// # Concurrency
//
// Show, Mouth, Talk, Frame and Halt may be called from any goroutine;
// drawing is serialized. Talk blocks until its ctx ends.
package face

import (
	"context"
	"errors"
	"fmt"
	"image"
	"log/slog"
	"math"
	"slices"
	"strings"
	"sync"
	"time"

	"periph.io/x/conn/v3/i2c"
	"periph.io/x/devices/v3/ssd1306"
)

// Display is where a face is drawn; *ssd1306.Dev is one.
type Display interface {
	Bounds() image.Rectangle
	Draw(r image.Rectangle, src image.Image, sp image.Point) error
}

var _ Display = (*ssd1306.Dev)(nil)

// The emotions a face shows.
const (
	Neutral   = "neutral"
	Happy     = "happy"
	Sad       = "sad"
	Angry     = "angry"
	Surprised = "surprised"
	Sleepy    = "sleepy"
)

// Emotions are the names Show takes.
func Emotions() []string { return []string{Neutral, Happy, Sad, Angry, Surprised, Sleepy} }

// TalkFrame is how long each mouth position lasts while talking (8 a
// second).
const TalkFrame = 125 * time.Millisecond

// ssd1306Addr is where periph's ssd1306 driver talks to the display.
const ssd1306Addr = 0x3c

// A display's defaults: what NewI2C makes of 0.
const (
	DefaultAddress = ssd1306Addr
	DefaultWidth   = 128
	DefaultHeight  = 64
)

// Face is a face on a display.
type Face struct {
	d   Display
	log *slog.Logger

	mu      sync.Mutex
	emotion string
	open    float64
	shown   *image.Gray // what the display shows; nil: unknown
}

// New is a neutral face on d, with the mouth closed. It draws nothing
// until Show or Mouth.
func New(d Display) *Face {
	return &Face{d: d, emotion: Neutral, log: slog.Default().With("driver", "face")}
}

// NewI2C opens an SSD1306 of w×h pixels at addr (0x3c or 0x3d; 0 is
// 0x3c) on bus, initializes it and draws the neutral face. w and h of 0
// are 128×64; w is 64..128 and h 32..64, multiples of 8.
func NewI2C(bus i2c.Bus, addr uint16, w, h int) (*Face, error) {
	if bus == nil {
		return nil, errors.New("face: no I²C bus")
	}
	if w == 0 && h == 0 {
		w, h = DefaultWidth, DefaultHeight
	}
	if w < 64 || w > 128 || w%8 != 0 || h < 32 || h > 64 || h%8 != 0 {
		return nil, fmt.Errorf("face: display of %d×%d: width must be 64..128 and height 32..64, multiples of 8", w, h)
	}
	if addr == 0 {
		addr = ssd1306Addr
	}
	if addr != 0x3c && addr != 0x3d {
		return nil, fmt.Errorf("face: address 0x%02x: an SSD1306 answers at 0x3c or 0x3d", addr)
	}
	var b i2c.Bus = bus
	if addr != ssd1306Addr {
		b = &atAddr{Bus: bus, addr: addr}
	}
	opts := ssd1306.DefaultOpts
	opts.W, opts.H = w, h
	opts.Sequential = sequentialCOM(w, h)
	dev, err := ssd1306.NewI2C(b, &opts)
	if err != nil {
		return nil, fmt.Errorf("face: SSD1306 at 0x%02x on %s: %w", addr, bus, err)
	}
	f := New(&ssd1306Face{bus: b, opts: opts, dev: dev})
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.redraw(); err != nil {
		return nil, err
	}
	return f, nil
}

// ProbeBytes is what `chorusd --doctor` writes to see whether an SSD1306
// answers: control byte 0x00 (a command follows) and command 0xE3, NOP.
// An SSD1306 on I²C may refuse (NACK) a read, so a one-byte read, as
// i2cdetect -r does, can miss a display that is there.
func ProbeBytes() []byte { return []byte{0x00, 0xE3} }

// sequentialCOM says how the panel's rows are wired to the controller's
// COM pins (the byte after command 0xDA; datasheet §10.1.18, table 10-3):
// a 128×32 panel sequentially (0x02), a 128×64 or 64×48 one alternately
// (0x12). With 0x12 a 128×32 panel lights every other row, the face
// doubled in height and cut off (what Adafruit's and u8g2's drivers set
// too).
func sequentialCOM(w, h int) bool { return w == 128 && h == 32 }

// ssd1306Face is periph's SSD1306 driver as the face needs it. periph's Dev
// keeps its own copy of the screen and sends only what differs from it,
// so two things went wrong through it alone: after Halt (display off) the
// same picture sent nothing and the display stayed off, and after a draw
// that failed half way it took the failed picture as shown. So after
// either, the next Draw initialises the controller again (the init
// stream ends with display on) with a fresh Dev, which sends the whole
// picture. Face.mu serializes its use.
type ssd1306Face struct {
	bus   i2c.Bus
	opts  ssd1306.Opts
	dev   *ssd1306.Dev
	stale bool // halted, or a draw failed: initialise and draw whole next time
}

func (o *ssd1306Face) Bounds() image.Rectangle { return o.dev.Bounds() }

func (o *ssd1306Face) Draw(r image.Rectangle, src image.Image, sp image.Point) error {
	if o.stale {
		dev, err := ssd1306.NewI2C(o.bus, &o.opts)
		if err != nil {
			return fmt.Errorf("initialise the display again: %w", err)
		}
		o.dev, o.stale = dev, false
	}
	if err := o.dev.Draw(r, src, sp); err != nil {
		o.stale = true
		return err
	}
	return nil
}

// Halt turns the display off (command 0xAE); the next Draw turns it on.
func (o *ssd1306Face) Halt() error {
	o.stale = true
	return o.dev.Halt()
}

// atAddr sends what periph's ssd1306 driver sends to 0x3c to addr.
type atAddr struct {
	i2c.Bus
	addr uint16
}

func (b *atAddr) Tx(addr uint16, w, r []byte) error {
	if addr == ssd1306Addr {
		addr = b.addr
	}
	return b.Bus.Tx(addr, w, r)
}

// Show changes the face to emotion (see Emotions), keeping the mouth as
// it is. An unknown emotion is an error naming the known ones.
func (f *Face) Show(emotion string) error {
	if !slices.Contains(Emotions(), emotion) {
		return fmt.Errorf("face: unknown emotion %q (known: %s)", emotion, strings.Join(Emotions(), ", "))
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.emotion = emotion
	return f.redraw()
}

// Mouth opens the mouth: 0 is the emotion's closed mouth, 1 wide open.
// Values outside 0..1 are clamped, NaN is 0.
func (f *Face) Mouth(open float64) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.open = clampOpen(open)
	return f.redraw()
}

func clampOpen(v float64) float64 {
	if math.IsNaN(v) {
		return 0
	}
	return min(max(v, 0), 1)
}

// talkOpenings is the mouth's sequence while talking, one per TalkFrame.
var talkOpenings = []float64{0.6, 0.25, 0.9, 0.4, 0.75, 0.1, 0.85, 0.3, 1, 0.5, 0.2, 0.65}

// Talk moves the mouth about 8 times a second until ctx ends, then closes
// it and returns. A display error is logged (once until drawing works
// again) and talking goes on.
func (f *Face) Talk(ctx context.Context) {
	t := time.NewTicker(TalkFrame)
	defer t.Stop()
	var failing bool
	report := func(err error) {
		if err != nil && !failing {
			f.log.Warn("talking face: draw failed", "err", err)
		}
		failing = err != nil
	}
	for i := 0; ; i++ {
		report(f.Mouth(talkOpenings[i%len(talkOpenings)]))
		select {
		case <-ctx.Done():
			report(f.Mouth(0))
			return
		case <-t.C:
		}
	}
}

// Frame is the picture of the face as it is now (a copy): 0 is dark, 255
// lit.
func (f *Face) Frame() *image.Gray {
	f.mu.Lock()
	defer f.mu.Unlock()
	return Render(f.d.Bounds(), f.emotion, f.open)
}

// Halt turns the display off when it can be (an SSD1306 can); the next
// Show or Mouth turns it on and draws the whole face again, also when it
// is the face shown before Halt (a Display that keeps its own copy of the
// screen must draw whole after its Halt, as NewI2C's does).
func (f *Face) Halt() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.shown = nil
	if h, ok := f.d.(interface{ Halt() error }); ok {
		if err := h.Halt(); err != nil {
			return fmt.Errorf("face: halt display: %w", err)
		}
	}
	return nil
}

// redraw sends the face to the display when it differs from what is
// shown; the caller holds f.mu.
func (f *Face) redraw() error {
	img := Render(f.d.Bounds(), f.emotion, f.open)
	if f.shown != nil && slices.Equal(f.shown.Pix, img.Pix) {
		return nil
	}
	if err := f.d.Draw(img.Bounds(), img, img.Bounds().Min); err != nil {
		f.shown = nil // unknown now: draw it all next time
		return fmt.Errorf("face: draw %s face: %w", f.emotion, err)
	}
	f.shown = img
	return nil
}
