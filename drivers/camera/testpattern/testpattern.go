// Package testpattern is a camera Source that draws a moving pattern with a
// timestamp, pure Go, for the demo and tests.
package testpattern

import (
	"context"
	"image"
	"image/color"
	"image/draw"
	"time"

	"golang.org/x/image/font"
	"golang.org/x/image/font/basicfont"
	"golang.org/x/image/math/fixed"

	"github.com/chorus-robotics/chorus/drivers/camera"
)

// Source draws frames of Width×Height.
type Source struct {
	Width, Height int
	Quality       int
	frame         int
}

var _ camera.Source = (*Source)(nil)

func (s *Source) Name() string                   { return "testpattern" }
func (s *Source) Open(ctx context.Context) error { return ctx.Err() }
func (s *Source) Close() error                   { return nil }

var bars = []color.RGBA{{255, 255, 255, 255}, {255, 255, 0, 255}, {0, 255, 255, 255}, {0, 255, 0, 255},
	{255, 0, 255, 255}, {255, 0, 0, 255}, {0, 0, 255, 255}, {0, 0, 0, 255}}

// Image draws frame n at time t: colour bars that scroll one bar width every
// eight frames, and the time in the corner.
func Image(w, h, n int, t time.Time) *image.RGBA {
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	bw := max(1, w/len(bars))
	shift := n * bw / 8
	for x := range w {
		c := bars[((x+shift)/bw)%len(bars)]
		for y := range h {
			img.SetRGBA(x, y, c)
		}
	}
	draw.Draw(img, image.Rect(0, h-20, w, h), image.NewUniform(color.Black), image.Point{}, draw.Src)
	d := font.Drawer{Dst: img, Src: image.NewUniform(color.White), Face: basicfont.Face7x13,
		Dot: fixed.P(4, h-6)}
	d.DrawString(t.Format("2006-01-02 15:04:05.000"))
	return img
}

// Read implements camera.Source.
func (s *Source) Read(ctx context.Context) (camera.Frame, error) {
	if err := ctx.Err(); err != nil {
		return camera.Frame{}, err
	}
	q := s.Quality
	if q <= 0 {
		q = 80
	}
	now := time.Now()
	f, err := camera.Encode(Image(s.Width, s.Height, s.frame, now), q)
	s.frame++
	f.CapturedAt = now
	return f, err
}
