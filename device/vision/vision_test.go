package vision

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"image"
	"image/jpeg"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chorus-robotics/chorus/drivers/camera"
	"github.com/chorus-robotics/chorus/drivers/camera/testpattern"
	"github.com/chorus-robotics/chorus/runtime/protocol"
	"github.com/chorus-robotics/chorus/runtime/query"
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

// asker answers every query with one body.
type asker struct{ body string }

func (a asker) Ask(context.Context, string, string, any, time.Duration, ...query.CallOption) (json.RawMessage, error) {
	return json.RawMessage(a.body), nil
}

// The looker hands the model a picture with the type its bytes have:
// aikyo's client answers {image} with no type, others a data: URL; a body
// that sends something else is refused, never passed on untyped.
func TestLookerTypesThePicture(t *testing.T) {
	var b bytes.Buffer
	jpeg.Encode(&b, image.NewGray(image.Rect(0, 0, 16, 16)), nil)
	jpg := base64.StdEncoding.EncodeToString(b.Bytes())
	cases := []struct{ body, mime, err string }{
		{`{"image":"` + jpg + `"}`, "image/jpeg", ""},
		{`{"image":"data:image/jpeg;base64,` + jpg + `"}`, "image/jpeg", ""},
		{`{"image":"` + jpg + `","mime":"image/jpeg"}`, "image/jpeg", ""},
		{`{"image":"` + jpg + `","mime":"image/png"}`, "", "the bytes are image/jpeg"},
		{`{"image":"aGVsbG8gd29ybGQ="}`, "", "not a JPEG, PNG, WebP or GIF"},
		{`{"image":"%%%"}`, "", "not base64"},
	}
	for _, tc := range cases {
		img, err := Looker(asker{tc.body}, "web-bot")(context.Background())
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) || !strings.Contains(err.Error(), "web-bot") {
				t.Fatalf("%.60s: %v, want an error naming web-bot and saying %q", tc.body, err, tc.err)
			}
			continue
		}
		if err != nil || img.MIME != tc.mime || img.Base64 != jpg {
			t.Fatalf("%.60s: %s %.20q, %v", tc.body, img.MIME, img.Base64, err)
		}
	}
}
