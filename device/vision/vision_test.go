package vision

import (
	"bytes"
	"context"
	"encoding/base64"
	"image/jpeg"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chorus-robotics/chorus/drivers/camera"
	"github.com/chorus-robotics/chorus/drivers/camera/testpattern"
	"github.com/chorus-robotics/chorus/runtime/protocol"
)

func TestVision(t *testing.T) {
	c := &camera.Capture{Source: &testpattern.Source{Width: 320, Height: 240}, Interval: 10 * time.Millisecond}
	e := &Eye{Camera: c, MaxAge: time.Second}
	if _, err := e.Handle(context.Background(), "kyoko", nil); err == nil || !strings.Contains(err.Error(), "no frame") {
		t.Fatalf("before the camera runs: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); c.Run(ctx) }()
	defer func() { cancel(); wg.Wait() }()
	var res any
	var err error
	for range 100 {
		if res, err = e.Handle(context.Background(), "kyoko", []byte(`{}`)); err == nil {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err != nil {
		t.Fatal(err)
	}
	r := res.(protocol.VisionResult)
	b, _ := base64.StdEncoding.DecodeString(r.Image)
	img, err := jpeg.Decode(bytes.NewReader(b))
	if err != nil || img.Bounds().Dx() != 320 || r.Width != 320 || r.Height != 240 || r.MIME != "image/jpeg" {
		t.Fatalf("result %dx%d %s, %v", r.Width, r.Height, r.MIME, err)
	}
	if time.Since(r.CapturedAt) > time.Second {
		t.Fatalf("captured %v ago", time.Since(r.CapturedAt))
	}
	if _, err := e.Handle(context.Background(), "kyoko", []byte(`{"zoom":2}`)); err == nil {
		t.Fatal("unknown parameter accepted")
	}
}
