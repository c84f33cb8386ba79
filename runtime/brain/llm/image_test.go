package llm

import (
	"bytes"
	"encoding/base64"
	"image"
	"image/gif"
	"image/jpeg"
	"image/png"
	"strings"
	"testing"
)

func encoded(t testing.TB, enc func(*bytes.Buffer, image.Image) error) string {
	t.Helper()
	img := image.NewRGBA(image.Rect(0, 0, 8, 8))
	var b bytes.Buffer
	if err := enc(&b, img); err != nil {
		t.Fatal(err)
	}
	return base64.StdEncoding.EncodeToString(b.Bytes())
}

// A picture is given the type its bytes have, whatever the body said or
// did not say; a data: URL is taken apart, not wrapped again; anything
// that is not a picture of the four kinds the APIs take is refused.
func TestNewImage(t *testing.T) {
	jpg := encoded(t, func(b *bytes.Buffer, m image.Image) error { return jpeg.Encode(b, m, nil) })
	pngs := encoded(t, func(b *bytes.Buffer, m image.Image) error { return png.Encode(b, m) })
	gifs := encoded(t, func(b *bytes.Buffer, m image.Image) error { return gif.Encode(b, m, nil) })
	webp := base64.StdEncoding.EncodeToString([]byte("RIFF\x24\x00\x00\x00WEBPVP8 \x18\x00\x00\x00 a webp body"))
	cases := []struct {
		name, data, mime string
		want, err        string
	}{
		{"jpeg without a type (aikyo's client)", jpg, "", "image/jpeg", ""},
		{"jpeg declared", jpg, "image/jpeg", "image/jpeg", ""},
		{"jpeg as image/jpg", jpg, "image/jpg", "image/jpeg", ""},
		{"png", pngs, "", "image/png", ""},
		{"gif", gifs, "", "image/gif", ""},
		{"webp", webp, "", "image/webp", ""},
		{"data URL", "data:image/jpeg;base64," + jpg, "", "image/jpeg", ""},
		{"data URL without a type", "data:;base64," + pngs, "", "image/png", ""},
		{"data URL and the same declared type", "data:image/png;base64," + pngs, "image/png", "image/png", ""},
		{"base64 with line breaks", jpg[:20] + "\n" + jpg[20:], "", "image/jpeg", ""},
		{"declared type contradicts the bytes", jpg, "image/png", "", `declared "image/png" but the bytes are image/jpeg`},
		{"data URL contradicts the declared type", "data:image/png;base64," + pngs, "image/gif", "", "its data: URL says"},
		{"data URL type contradicts the bytes", "data:image/png;base64," + jpg, "", "", "the bytes are image/jpeg"},
		{"data URL not base64", "data:image/png," + pngs, "", "", "data:<type>;base64"},
		{"not base64", "this is not base64!", "", "", "not base64"},
		{"text, not a picture", base64.StdEncoding.EncodeToString([]byte("hello, I am text")), "", "", "not a JPEG, PNG, WebP or GIF"},
		{"empty", "", "image/jpeg", "", "empty"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			img, err := NewImage(tc.data, tc.mime)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err %v, want one saying %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if img.MIME != tc.want || strings.HasPrefix(img.Base64, "data:") || strings.ContainsAny(img.Base64, "\n,;") {
				t.Fatalf("got %s %.40q", img.MIME, img.Base64)
			}
			if _, err := base64.StdEncoding.DecodeString(img.Base64); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// NewImage never panics, and what it accepts is a picture in canonical
// base64 with one of the four types.
func FuzzNewImage(f *testing.F) {
	f.Add(encoded(f, func(b *bytes.Buffer, m image.Image) error { return png.Encode(b, m) }), "")
	f.Add("data:image/jpeg;base64,/9j/4AAQ", "image/jpeg")
	f.Add("data:;base64,", "")
	f.Add("R0lGODlh", "image/gif")
	f.Fuzz(func(t *testing.T, data, mime string) {
		img, err := NewImage(data, mime)
		if err != nil {
			return
		}
		raw, derr := base64.StdEncoding.DecodeString(img.Base64)
		if derr != nil || base64.StdEncoding.EncodeToString(raw) != img.Base64 {
			t.Fatalf("accepted %q as %q", data, img.Base64)
		}
		ok := false
		for _, ty := range ImageTypes {
			ok = ok || img.MIME == ty
		}
		if !ok {
			t.Fatalf("type %q", img.MIME)
		}
	})
}
