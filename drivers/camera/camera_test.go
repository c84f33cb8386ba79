package camera_test

import (
	"bytes"
	"context"
	"errors"
	"image"
	"image/color"
	"image/jpeg"
	"image/png"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/chorus-robotics/chorus/drivers/camera"
	cimage "github.com/chorus-robotics/chorus/drivers/camera/image"
	"github.com/chorus-robotics/chorus/drivers/camera/testpattern"
)

func run(t *testing.T, c *camera.Capture) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); c.Run(ctx) }()
	t.Cleanup(func() { cancel(); wg.Wait() })
}

func waitFrame(t *testing.T, c *camera.Capture, minSeq uint64) camera.Frame {
	t.Helper()
	deadline := time.Now().Add(3 * time.Second)
	for time.Now().Before(deadline) {
		if f, err := c.Latest(0); err == nil && f.Seq >= minSeq {
			return f
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatalf("no frame with seq >= %d", minSeq)
	return camera.Frame{}
}

func TestTestPatternMovesAndIsAJPEG(t *testing.T) {
	c := &camera.Capture{Source: &testpattern.Source{Width: 640, Height: 480}, Interval: 10 * time.Millisecond}
	if _, err := c.Latest(0); !errors.Is(err, camera.ErrNoFrame) {
		t.Fatalf("before the first frame: %v", err)
	}
	run(t, c)
	a := waitFrame(t, c, 1)
	b := waitFrame(t, c, a.Seq+8)
	if bytes.Equal(a.JPEG, b.JPEG) {
		t.Fatal("the pattern does not move")
	}
	img, err := jpeg.Decode(bytes.NewReader(b.JPEG))
	if err != nil || img.Bounds().Dx() != 640 || img.Bounds().Dy() != 480 {
		t.Fatalf("%v %v", img.Bounds(), err)
	}
}

// flaky fails to open twice, then serves 3 frames and breaks.
type flaky struct {
	mu     sync.Mutex
	opens  int
	served int
}

func (f *flaky) Name() string { return "flaky" }
func (f *flaky) Open(context.Context) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.opens++
	if f.opens <= 2 {
		return errors.New("no such device")
	}
	f.served = 0
	return nil
}
func (f *flaky) Read(ctx context.Context) (camera.Frame, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.served >= 3 {
		return camera.Frame{}, errors.New("device unplugged")
	}
	f.served++
	return camera.Encode(image.NewRGBA(image.Rect(0, 0, 8, 8)), 50)
}
func (f *flaky) Close() error { return nil }

func TestReopensALostCamera(t *testing.T) {
	src := &flaky{}
	c := &camera.Capture{Source: src, Interval: time.Millisecond, MaxBackoff: 20 * time.Millisecond}
	run(t, c)
	waitFrame(t, c, 7) // frames from at least three openings
	src.mu.Lock()
	defer src.mu.Unlock()
	if src.opens < 5 {
		t.Fatalf("%d opens", src.opens)
	}
}

func TestStaleFrameIsAnError(t *testing.T) {
	src := &flaky{opens: 2}
	c := &camera.Capture{Source: src, Interval: time.Millisecond, MaxBackoff: time.Hour}
	run(t, c)
	waitFrame(t, c, 3)
	time.Sleep(60 * time.Millisecond)
	if _, err := c.Latest(50 * time.Millisecond); !errors.Is(err, camera.ErrNoFrame) {
		t.Fatalf("a camera that stopped delivering: %v", err)
	}
}

func TestImageFolder(t *testing.T) {
	dir := t.TempDir()
	for i, col := range []color.RGBA{{255, 0, 0, 255}, {0, 0, 255, 255}} {
		img := image.NewRGBA(image.Rect(0, 0, 100, 50))
		for x := range 100 {
			for y := range 50 {
				img.SetRGBA(x, y, col)
			}
		}
		f, _ := os.Create(filepath.Join(dir, string(rune('a'+i))+".png"))
		png.Encode(f, img)
		f.Close()
	}
	s := &cimage.Source{Path: dir, Width: 64, Height: 32}
	ctx := context.Background()
	if err := s.Open(ctx); err != nil {
		t.Fatal(err)
	}
	var reds []uint32
	for range 3 {
		f, err := s.Read(ctx)
		if err != nil {
			t.Fatal(err)
		}
		img, _ := jpeg.Decode(bytes.NewReader(f.JPEG))
		r, _, _, _ := img.At(10, 10).RGBA()
		reds = append(reds, r>>8)
		if f.Width != 64 || f.Height != 32 {
			t.Fatalf("%dx%d", f.Width, f.Height)
		}
	}
	if reds[0] < 200 || reds[1] > 50 || reds[2] < 200 {
		t.Fatalf("red channel per frame %v: want red, blue, red (looping in name order)", reds)
	}
	if err := (&cimage.Source{Path: t.TempDir()}).Open(ctx); err == nil {
		t.Fatal("an empty folder opened")
	}
}
