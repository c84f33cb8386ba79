//go:build gocv

package gocv

import (
	"bytes"
	"context"
	"image/jpeg"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/chorus-robotics/chorus/drivers/camera"
)

// makeVideo writes a 2-second 320x240 test video with ffmpeg.
func makeVideo(t *testing.T) string {
	t.Helper()
	if _, err := exec.LookPath("ffmpeg"); err != nil {
		t.Skip("ffmpeg not installed (apt-get install ffmpeg)")
	}
	p := filepath.Join(t.TempDir(), "clip.avi")
	out, err := exec.Command("ffmpeg", "-loglevel", "error", "-f", "lavfi", "-i", "testsrc=size=320x240:rate=10:duration=2",
		"-c:v", "mjpeg", p).CombinedOutput()
	if err != nil {
		t.Fatalf("ffmpeg: %v\n%s", err, out)
	}
	return p
}

func TestReadsAVideoFileResizedToJPEG(t *testing.T) {
	s := &Source{Device: makeVideo(t), Width: 640, Height: 480, Quality: 80}
	ctx := context.Background()
	if err := s.Open(ctx); err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	n := 0
	for {
		f, err := s.Read(ctx)
		if err == ErrEnd {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		img, err := jpeg.Decode(bytes.NewReader(f.JPEG))
		if err != nil {
			t.Fatal(err)
		}
		if f.Width != 640 || f.Height != 480 || img.Bounds().Dx() != 640 {
			t.Fatalf("frame %dx%d, jpeg %v", f.Width, f.Height, img.Bounds())
		}
		n++
	}
	if n != 20 {
		t.Fatalf("%d frames, want 20 (2 s at 10 fps)", n)
	}
}

func TestMissingDeviceIsACleanError(t *testing.T) {
	s := &Source{Device: "/dev/video-none"}
	if err := s.Open(context.Background()); err == nil {
		s.Close()
		t.Fatal("opened a camera that does not exist")
	}
}

func TestCaptureLoopsTheFile(t *testing.T) {
	c := &camera.Capture{Source: &Source{Device: makeVideo(t), Width: 160, Height: 120}, MaxBackoff: 50 * time.Millisecond}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	done := make(chan struct{})
	go func() { c.Run(ctx); close(done) }()
	deadline := time.Now().Add(2 * time.Second)
	var f camera.Frame
	var err error
	for time.Now().Before(deadline) {
		if f, err = c.Latest(time.Second); err == nil && f.Seq > 25 { // past the end of the 20-frame file
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	cancel()
	<-done
	if err != nil || f.Seq <= 25 {
		t.Fatalf("latest frame seq %d, err %v: the file was not reopened after its end", f.Seq, err)
	}
}
