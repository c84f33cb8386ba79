// Package image is a camera Source that serves still images: one file, or
// every PNG/JPEG in a folder in name order, looping. Pure Go; every device
// path comes from config so tests point it at a fixture.
package image

import (
	"context"
	"errors"
	"fmt"
	stdimage "image"
	_ "image/jpeg" // register decoders
	_ "image/png"
	"os"
	"path/filepath"
	"sort"
	"strings"

	xdraw "golang.org/x/image/draw"

	"github.com/chorus-robotics/chorus/drivers/camera"
)

// Source reads Path (a file or a folder).
type Source struct {
	Path          string
	Width, Height int // 0 keeps the image's size
	Quality       int
	files         []string
	i             int
}

var _ camera.Source = (*Source)(nil)

func (s *Source) Name() string { return "image:" + s.Path }

// Open lists the frames.
func (s *Source) Open(ctx context.Context) error {
	st, err := os.Stat(s.Path)
	if err != nil {
		return fmt.Errorf("camera image: %w", err)
	}
	s.files = nil
	if !st.IsDir() {
		s.files = []string{s.Path}
		return nil
	}
	ents, err := os.ReadDir(s.Path)
	if err != nil {
		return fmt.Errorf("camera image: %w", err)
	}
	for _, e := range ents {
		ext := strings.ToLower(filepath.Ext(e.Name()))
		if !e.IsDir() && (ext == ".png" || ext == ".jpg" || ext == ".jpeg") {
			s.files = append(s.files, filepath.Join(s.Path, e.Name()))
		}
	}
	sort.Strings(s.files)
	if len(s.files) == 0 {
		return fmt.Errorf("camera image: no PNG or JPEG files in %s", s.Path)
	}
	return nil
}

func (s *Source) Close() error { return nil }

// Read implements camera.Source.
func (s *Source) Read(ctx context.Context) (camera.Frame, error) {
	if err := ctx.Err(); err != nil {
		return camera.Frame{}, err
	}
	if len(s.files) == 0 {
		return camera.Frame{}, errors.New("camera image: not open")
	}
	p := s.files[s.i%len(s.files)]
	s.i++
	f, err := os.Open(p)
	if err != nil {
		return camera.Frame{}, fmt.Errorf("camera image: %w", err)
	}
	defer f.Close()
	img, _, err := stdimage.Decode(f)
	if err != nil {
		return camera.Frame{}, fmt.Errorf("camera image %s: %w", p, err)
	}
	if s.Width > 0 && s.Height > 0 && (img.Bounds().Dx() != s.Width || img.Bounds().Dy() != s.Height) {
		dst := stdimage.NewRGBA(stdimage.Rect(0, 0, s.Width, s.Height))
		xdraw.ApproxBiLinear.Scale(dst, dst.Bounds(), img, img.Bounds(), xdraw.Src, nil)
		img = dst
	}
	q := s.Quality
	if q <= 0 {
		q = 80
	}
	return camera.Encode(img, q)
}
