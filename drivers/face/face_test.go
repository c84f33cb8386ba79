package face

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"image"
	"math"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"
	"periph.io/x/conn/v3/i2c/i2ctest"
)

// TestMain fails the package's tests if any goroutine outlives them.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// pack is img in the SSD1306's GDDRAM order, written out here: page p
// holds rows 8p..8p+7, one byte per column, the top row in bit 0.
func pack(img *image.Gray) []byte {
	b := img.Bounds()
	out := make([]byte, 0, b.Dx()*b.Dy()/8)
	for p := 0; p < b.Dy()/8; p++ {
		for x := 0; x < b.Dx(); x++ {
			var v byte
			for bit := 0; bit < 8; bit++ {
				if img.GrayAt(x, 8*p+bit).Y >= 128 {
					v |= 1 << bit
				}
			}
			out = append(out, v)
		}
	}
	return out
}

// oled replays I²C writes into a model of the controller's memory: a
// command write [0x00, 0xB0|page, 0x0L, 0x1H] sets where a data write
// [0x40, ...] lands (page addressing, the column advancing per byte).
type oled struct {
	w, h      int
	ram       []byte
	page, col int
	pages     map[int]bool // pages written
}

func newOLED(w, h int) *oled {
	return &oled{w: w, h: h, ram: make([]byte, w*h/8), pages: map[int]bool{}}
}

func (o *oled) apply(t *testing.T, ops []i2ctest.IO) {
	t.Helper()
	for _, op := range ops {
		switch {
		case len(op.W) == 4 && op.W[0] == 0x00 && op.W[1]&0xf8 == 0xb0 && op.W[2] < 0x10 && op.W[3]&0xf0 == 0x10:
			o.page = int(op.W[1] & 7)
			o.col = int(op.W[2]) | int(op.W[3]&0x0f)<<4
		case len(op.W) > 1 && op.W[0] == 0x40:
			if o.page >= o.h/8 || o.col+len(op.W)-1 > o.w {
				t.Fatalf("data beyond the screen: page %d col %d, %d bytes", o.page, o.col, len(op.W)-1)
			}
			copy(o.ram[o.page*o.w+o.col:], op.W[1:])
			o.col += len(op.W) - 1
			o.pages[o.page] = true
		default:
			t.Fatalf("unexpected write % x", op.W)
		}
	}
}

func TestI2CShowHappy(t *testing.T) {
	rec := &i2ctest.Record{}
	f, err := NewI2C(rec, 0x3c, 128, 64)
	if err != nil {
		t.Fatal(err)
	}
	// Init: one command stream (control byte 0x00), display off first and
	// on last, as the datasheet's power-up sequence has it, with the
	// charge pump on and a multiplex ratio of 64 rows.
	init := rec.Ops[0]
	if init.Addr != 0x3c || init.W[0] != 0x00 || init.W[1] != 0xAE || init.W[len(init.W)-1] != 0xAF {
		t.Fatalf("init % x at 0x%02x", init.W, init.Addr)
	}
	for _, seq := range [][]byte{{0x8D, 0x14}, {0xA8, 63}, {0x20, 0x00}, {0x21, 0, 127}, {0x22, 0, 7}} {
		if !bytes.Contains(init.W, seq) {
			t.Fatalf("init % x lacks % x", init.W, seq)
		}
	}
	// Then the neutral face, whole: 8 pages of 128 columns.
	neutral := pack(Render(image.Rect(0, 0, 128, 64), Neutral, 0))
	ops := rec.Ops[1:]
	if len(ops) != 16 {
		t.Fatalf("%d writes for the first frame", len(ops))
	}
	for p := range 8 {
		if want := []byte{0x00, 0xB0 | byte(p), 0x00, 0x10}; !bytes.Equal(ops[2*p].W, want) {
			t.Fatalf("page %d: command % x, want % x", p, ops[2*p].W, want)
		}
		if want := append([]byte{0x40}, neutral[128*p:128*(p+1)]...); !bytes.Equal(ops[2*p+1].W, want) {
			t.Fatalf("page %d: data % x\nwant % x", p, ops[2*p+1].W, want)
		}
	}
	screen := newOLED(128, 64)
	screen.apply(t, ops)

	// Show("happy"): what is sent makes the screen the happy face.
	n := len(rec.Ops)
	if err := f.Show(Happy); err != nil {
		t.Fatal(err)
	}
	happy := Render(image.Rect(0, 0, 128, 64), Happy, 0)
	if !slices.Equal(f.Frame().Pix, happy.Pix) {
		t.Fatal("Frame is not the rendered happy face")
	}
	screen.apply(t, rec.Ops[n:])
	if !bytes.Equal(screen.ram, pack(happy)) {
		t.Fatal("the screen does not hold the happy face")
	}
	if bytes.Equal(pack(happy), neutral) || bytes.Count(pack(happy), []byte{0}) == len(neutral) {
		t.Fatal("happy is blank or neutral")
	}

	// The same face again sends nothing.
	n = len(rec.Ops)
	if err := f.Show(Happy); err != nil {
		t.Fatal(err)
	}
	if len(rec.Ops) != n {
		t.Fatalf("%d writes to show the face shown", len(rec.Ops)-n)
	}

	// The mouth only touches the pages of the mouth: rows 40.. are pages 5..7.
	screen.pages = map[int]bool{}
	if err := f.Mouth(0.8); err != nil {
		t.Fatal(err)
	}
	screen.apply(t, rec.Ops[n:])
	if len(screen.pages) == 0 || screen.pages[0] || screen.pages[1] || screen.pages[2] || screen.pages[3] || screen.pages[4] {
		t.Fatalf("Mouth wrote pages %v", screen.pages)
	}
	if !bytes.Equal(screen.ram, pack(Render(image.Rect(0, 0, 128, 64), Happy, 0.8))) {
		t.Fatal("the screen does not hold the open mouth")
	}
}

func TestI2COptions(t *testing.T) {
	for _, c := range []struct {
		name    string
		addr    uint16
		w, h    int
		wantErr string
	}{
		{"default", 0, 0, 0, ""},
		{"0x3d", 0x3d, 128, 64, ""},
		{"128x32", 0x3c, 128, 32, ""},
		{"64x48", 0x3c, 64, 48, ""},
		{"address", 0x40, 128, 64, "address 0x40"},
		{"too wide", 0x3c, 256, 64, "256×64"},
		{"too high", 0x3c, 128, 128, "128×128"},
		{"odd", 0x3c, 128, 60, "128×60"},
		{"tiny", 0x3c, 8, 8, "8×8"},
		{"width only", 0x3c, 128, 0, "128×0"},
	} {
		t.Run(c.name, func(t *testing.T) {
			rec := &i2ctest.Record{}
			f, err := NewI2C(rec, c.addr, c.w, c.h)
			if c.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), c.wantErr) {
					t.Fatalf("error %v, want %q", err, c.wantErr)
				}
				if len(rec.Ops) != 0 {
					t.Fatal("wrote to a display it refused")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			w, h, addr := c.w, c.h, c.addr
			if w == 0 {
				w, h = 128, 64
			}
			if addr == 0 {
				addr = 0x3c
			}
			for _, op := range rec.Ops {
				if op.Addr != addr {
					t.Fatalf("a write at 0x%02x", op.Addr)
				}
			}
			if !bytes.Contains(rec.Ops[0].W, []byte{0xA8, byte(h - 1)}) {
				t.Fatalf("init % x: no multiplex of %d rows", rec.Ops[0].W, h)
			}
			screen := newOLED(w, h)
			screen.apply(t, rec.Ops[1:])
			if err := f.Show(Surprised); err != nil {
				t.Fatal(err)
			}
			fr := f.Frame()
			if fr.Bounds() != image.Rect(0, 0, w, h) {
				t.Fatalf("frame of %v", fr.Bounds())
			}
			screen.apply(t, rec.Ops[1+2*h/8:])
			if !bytes.Equal(screen.ram, pack(fr)) {
				t.Fatal("the screen does not hold the frame")
			}
		})
	}
	if _, err := NewI2C(nil, 0x3c, 128, 64); err == nil {
		t.Fatal("NewI2C on no bus")
	}
}

// lit counts lit pixels in rows [y0, y1).
func lit(img *image.Gray, y0, y1 int) int {
	n := 0
	for y := y0; y < y1; y++ {
		for x := img.Rect.Min.X; x < img.Rect.Max.X; x++ {
			if img.GrayAt(x, y).Y != 0 {
				n++
			}
		}
	}
	return n
}

func TestFacesDiffer(t *testing.T) {
	for _, size := range []image.Rectangle{image.Rect(0, 0, 128, 64), image.Rect(0, 0, 128, 32)} {
		t.Run(fmt.Sprint(size.Max), func(t *testing.T) {
			mouthAt := mouthRow(size.Dy())
			seen := map[string]string{}
			for _, e := range Emotions() {
				img := Render(size, e, 0)
				for _, v := range img.Pix {
					if v != 0 && v != 255 {
						t.Fatalf("%s: a pixel of %d", e, v)
					}
				}
				if !slices.Equal(img.Pix, Render(size, e, 0).Pix) {
					t.Fatalf("%s: two renders differ", e)
				}
				if lit(img, 0, mouthAt) < 20 || lit(img, mouthAt, size.Dy()) < 10 {
					t.Fatalf("%s: eyes %d px, mouth %d px", e, lit(img, 0, mouthAt), lit(img, mouthAt, size.Dy()))
				}
				// Nothing at the edges: the face fits the screen.
				if lit(img, 0, 1) != 0 || lit(img, size.Dy()-1, size.Dy()) != 0 {
					t.Fatalf("%s touches the top or bottom edge", e)
				}
				key := string(img.Pix)
				if other, ok := seen[key]; ok {
					t.Fatalf("%s looks like %s", e, other)
				}
				seen[key] = e
			}
		})
	}
}

func TestMouthChangesOnlyMouthRows(t *testing.T) {
	for _, size := range []image.Rectangle{image.Rect(0, 0, 128, 64), image.Rect(0, 0, 128, 32), image.Rect(0, 0, 64, 48)} {
		mouthAt := mouthRow(size.Dy())
		if want := map[int]int{64: 40, 32: 20, 48: 30}[size.Dy()]; mouthAt != want {
			t.Fatalf("mouth at row %d of %d", mouthAt, size.Dy())
		}
		for _, e := range Emotions() {
			closed := Render(size, e, 0)
			for _, open := range []float64{0.05, 0.3, 0.7, 1} {
				img := Render(size, e, open)
				var changed int
				for y := 0; y < size.Dy(); y++ {
					for x := 0; x < size.Dx(); x++ {
						if img.GrayAt(x, y) != closed.GrayAt(x, y) {
							if y < mouthAt {
								t.Fatalf("%v %s open %v changed row %d", size.Max, e, open, y)
							}
							changed++
						}
					}
				}
				if changed == 0 {
					t.Fatalf("%v %s: opening %v changes nothing", size.Max, e, open)
				}
			}
		}
	}
}

// screen is a Display that keeps every frame drawn, or fails while fail
// is set.
type screen struct {
	mu     sync.Mutex
	r      image.Rectangle
	frames []*image.Gray
	fail   error
}

func (s *screen) Bounds() image.Rectangle { return s.r }
func (s *screen) Draw(r image.Rectangle, src image.Image, sp image.Point) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.fail != nil {
		return s.fail
	}
	if r != s.r || sp != s.r.Min {
		return fmt.Errorf("partial draw %v from %v", r, sp)
	}
	g := image.NewGray(s.r)
	for y := r.Min.Y; y < r.Max.Y; y++ {
		for x := r.Min.X; x < r.Max.X; x++ {
			g.Set(x, y, src.At(x, y))
		}
	}
	s.frames = append(s.frames, g)
	return nil
}

func (s *screen) drawn() []*image.Gray {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.frames)
}

func TestShowAndMouth(t *testing.T) {
	r := image.Rect(0, 0, 128, 64)
	s := &screen{r: r}
	f := New(s)
	if len(s.drawn()) != 0 {
		t.Fatal("New drew")
	}
	err := f.Show("smug")
	if err == nil || !strings.Contains(err.Error(), `"smug"`) || !strings.Contains(err.Error(), "neutral, happy, sad, angry, surprised, sleepy") {
		t.Fatalf("unknown emotion: %v", err)
	}
	if len(s.drawn()) != 0 {
		t.Fatal("an unknown emotion drew")
	}
	for _, c := range []struct {
		open, as float64
	}{
		{2, 1}, {math.Inf(1), 1}, {-1, 0}, {math.Inf(-1), 0}, {math.NaN(), 0}, {0.5, 0.5},
	} {
		if err := f.Mouth(c.open); err != nil {
			t.Fatal(err)
		}
		if got, want := f.Frame(), Render(r, Neutral, c.as); !slices.Equal(got.Pix, want.Pix) {
			t.Fatalf("Mouth(%v) is not Mouth(%v)", c.open, c.as)
		}
	}
	// Drawn only on change: 1, 0 (changes), -1, -Inf, NaN (same), 0.5.
	frames := s.drawn()
	if len(frames) != 3 {
		t.Fatalf("%d draws", len(frames))
	}
	// A failing display: the error says so, and the face is drawn whole
	// again once it works.
	s.mu.Lock()
	s.fail = errors.New("i2c: remote I/O error")
	s.mu.Unlock()
	if err := f.Show(Sad); err == nil || !strings.Contains(err.Error(), "remote I/O error") || !strings.Contains(err.Error(), "sad") {
		t.Fatalf("Show on a failing display: %v", err)
	}
	s.mu.Lock()
	s.fail = nil
	s.mu.Unlock()
	if err := f.Show(Sad); err != nil {
		t.Fatal(err)
	}
	frames = s.drawn()
	if last := frames[len(frames)-1]; !slices.Equal(last.Pix, Render(r, Sad, 0.5).Pix) {
		t.Fatal("the sad face was not drawn after the display came back")
	}
	if err := f.Halt(); err != nil {
		t.Fatal(err)
	}
	if err := f.Show(Sad); err != nil || len(s.drawn()) != len(frames)+1 {
		t.Fatalf("after Halt, the face is not drawn again: %v", err)
	}
}

func TestTalk(t *testing.T) {
	r := image.Rect(0, 0, 128, 32)
	s := &screen{r: r}
	f := New(s)
	if err := f.Show(Happy); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 700*time.Millisecond)
	defer cancel()
	start := time.Now()
	done := make(chan struct{})
	go func() {
		defer close(done)
		f.Talk(ctx)
	}()
	// Show while talking: the mouth goes on moving under the new eyes.
	time.Sleep(300 * time.Millisecond)
	if err := f.Show(Surprised); err != nil {
		t.Fatal(err)
	}
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("Talk did not return after its ctx ended")
	}
	took := time.Since(start)
	if took < 700*time.Millisecond || took > 700*time.Millisecond+500*time.Millisecond {
		t.Fatalf("Talk returned after %v", took)
	}
	frames := s.drawn()
	// About 8 frames a second for 0.7 s, plus the Shows and the close.
	if len(frames) < 5 || len(frames) > 10 {
		t.Fatalf("%d frames", len(frames))
	}
	distinct := map[string]bool{}
	for _, fr := range frames {
		distinct[string(fr.Pix)] = true
	}
	if len(distinct) < 5 {
		t.Fatalf("%d distinct frames", len(distinct))
	}
	if last := frames[len(frames)-1]; !slices.Equal(last.Pix, Render(r, Surprised, 0).Pix) {
		t.Fatal("the mouth is not closed after talking")
	}
}
