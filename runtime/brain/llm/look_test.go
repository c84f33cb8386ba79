package llm

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"image"
	"image/jpeg"
	"strings"
	"testing"
)

// The vision tool hands the model a picture with the type its bytes have:
// aikyo's client answers {image} with no type, others a data: URL; a body
// that sends something else is refused, never passed on untyped, with an
// error naming the device; the eye's own error is passed on as it is.
func TestDeviceLookerTypesThePicture(t *testing.T) {
	var b bytes.Buffer
	jpeg.Encode(&b, image.NewGray(image.Rect(0, 0, 16, 16)), nil)
	jpg := base64.StdEncoding.EncodeToString(b.Bytes())
	offline := errors.New("device is offline")
	cases := []struct {
		name, image, declared string
		eyeErr                error
		mime, err             string
	}{
		{"untyped", jpg, "", nil, "image/jpeg", ""},
		{"data URL", "data:image/jpeg;base64," + jpg, "", nil, "image/jpeg", ""},
		{"typed", jpg, "image/jpeg", nil, "image/jpeg", ""},
		{"wrong type", jpg, "image/png", nil, "", "the bytes are image/jpeg"},
		{"not a picture", "aGVsbG8gd29ybGQ=", "", nil, "", "not a JPEG, PNG, WebP or GIF"},
		{"not base64", "%%%", "", nil, "", "not base64"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var asked string
			eye := func(_ context.Context, device string) (string, string, error) {
				asked = device
				return tc.image, tc.declared, tc.eyeErr
			}
			img, err := DeviceLooker(eye, "web-bot")(context.Background())
			if asked != "web-bot" {
				t.Fatalf("asked %q; want web-bot", asked)
			}
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) || !strings.Contains(err.Error(), "web-bot") {
					t.Fatalf("%.60s: %v, want an error naming web-bot and saying %q", tc.image, err, tc.err)
				}
				return
			}
			if err != nil || img.MIME != tc.mime || img.Base64 != jpg {
				t.Fatalf("%.60s: %s %.20q, %v", tc.image, img.MIME, img.Base64, err)
			}
		})
	}
	eye := func(context.Context, string) (string, string, error) { return "", "", offline }
	if _, err := DeviceLooker(eye, "web-bot")(context.Background()); !errors.Is(err, offline) {
		t.Fatalf("eye failed: %v; want its error", err)
	}
}
