//go:build gocv

// Package gocv is a camera Source on OpenCV through gocv: a V4L2 device by
// index ("0") or path ("/dev/video0"), or a video file or image sequence
// ("clip.mp4", "img_%03d.png"). Frames are resized to Width×Height and
// JPEG-encoded by OpenCV, so no gocv.Mat leaves this package.
//
// Build with -tags gocv and Debian's libopencv-dev (gocv v0.31.0 matches
// OpenCV 4.6, NOTES.md).
package gocv

import (
	"context"
	"errors"
	"fmt"
	"image"
	"strconv"
	"sync"

	cv "gocv.io/x/gocv"

	"github.com/chorus-robotics/chorus/drivers/camera"
)

// Source grabs from Device.
type Source struct {
	Device        string
	Width, Height int
	Quality       int

	mu    sync.Mutex
	vc    *cv.VideoCapture
	raw   cv.Mat
	small cv.Mat
}

var _ camera.Source = (*Source)(nil)

func (s *Source) Name() string { return "gocv:" + s.Device }

// Open opens the device or file; a missing /dev/video0 is a clean error.
func (s *Source) Open(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closeLocked()
	var dev any = s.Device
	if n, err := strconv.Atoi(s.Device); err == nil {
		dev = n
	}
	vc, err := cv.OpenVideoCapture(dev)
	if err != nil {
		return fmt.Errorf("camera gocv: open %q: %w", s.Device, err)
	}
	if !vc.IsOpened() {
		vc.Close()
		return fmt.Errorf("camera gocv: open %q: not opened", s.Device)
	}
	if _, isIndex := dev.(int); isIndex && s.Width > 0 {
		vc.Set(cv.VideoCaptureFrameWidth, float64(s.Width))
		vc.Set(cv.VideoCaptureFrameHeight, float64(s.Height))
	}
	s.vc, s.raw, s.small = vc, cv.NewMat(), cv.NewMat()
	return nil
}

// ErrEnd is returned when a file has no more frames or the device stops
// delivering; Capture reopens the source (a file then loops).
var ErrEnd = errors.New("camera gocv: no frame")

// Read grabs, resizes and encodes one frame.
func (s *Source) Read(ctx context.Context) (camera.Frame, error) {
	if err := ctx.Err(); err != nil {
		return camera.Frame{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.vc == nil {
		return camera.Frame{}, errors.New("camera gocv: not open")
	}
	if ok := s.vc.Read(&s.raw); !ok || s.raw.Empty() {
		return camera.Frame{}, ErrEnd
	}
	img := s.raw
	if s.Width > 0 && s.Height > 0 && (s.raw.Cols() != s.Width || s.raw.Rows() != s.Height) {
		cv.Resize(s.raw, &s.small, image.Pt(s.Width, s.Height), 0, 0, cv.InterpolationLinear)
		img = s.small
	}
	q := s.Quality
	if q <= 0 {
		q = 80
	}
	buf, err := cv.IMEncodeWithParams(cv.JPEGFileExt, img, []int{cv.IMWriteJpegQuality, q})
	if err != nil {
		return camera.Frame{}, fmt.Errorf("camera gocv: encode: %w", err)
	}
	defer buf.Close()
	b := append([]byte(nil), buf.GetBytes()...)
	return camera.Frame{JPEG: b, Width: img.Cols(), Height: img.Rows()}, nil
}

// Close releases the device; it is idempotent.
func (s *Source) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closeLocked()
	return nil
}

func (s *Source) closeLocked() {
	if s.vc != nil {
		s.vc.Close()
		s.raw.Close()
		s.small.Close()
		s.vc = nil
	}
}
