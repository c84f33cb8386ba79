package daemon

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"image"
	"image/jpeg"
	"strings"
	"testing"
	"time"

	"github.com/chorus-robotics/chorus/runtime/brain/llm"
	"github.com/chorus-robotics/chorus/runtime/query"
)

// askFunc is a query.Asker made of a function.
type askFunc func(ctx context.Context, device, typ string, body any, timeout time.Duration, opts ...query.CallOption) (json.RawMessage, error)

func (f askFunc) Ask(ctx context.Context, device, typ string, body any, timeout time.Duration, opts ...query.CallOption) (json.RawMessage, error) {
	return f(ctx, device, typ, body, timeout, opts...)
}

// The brain's vision tool, wired as the daemon wires it, hands the model a
// picture with the type its bytes have: aikyo's client answers {image}
// with no type, others a data: URL; a body that sends something else is
// refused, never passed on untyped.
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
		var asked []string
		ask := askFunc(func(_ context.Context, device, typ string, _ any, timeout time.Duration, _ ...query.CallOption) (json.RawMessage, error) {
			asked = append(asked, device, typ, timeout.String())
			return json.RawMessage(tc.body), nil
		})
		img, err := llm.DeviceLooker(visionEye(ask), "web-bot")(context.Background())
		if want := []string{"web-bot", "vision", query.LookTimeout.String()}; strings.Join(asked, " ") != strings.Join(want, " ") {
			t.Fatalf("asked %v; want %v", asked, want)
		}
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
