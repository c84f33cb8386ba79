package llm

import (
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"strings"
)

// ImageTypes are the media types a picture may have: the ones both the
// OpenAI and the Anthropic APIs accept.
var ImageTypes = []string{"image/jpeg", "image/png", "image/webp", "image/gif"}

// maxImageBytes bounds a picture (decoded): the APIs refuse larger ones.
const maxImageBytes = 20 << 20

// NewImage checks a picture a body sent and gives it the media type its
// bytes have. data is base64, or a data: URL ("data:image/png;base64,…",
// taken apart, never wrapped twice); mime is what the body declared, ""
// when it said nothing (aikyo's client answers {image} alone). The type
// comes from the bytes (JPEG, PNG, WebP or GIF); a declared type that
// contradicts them, bytes of another kind, and text that is not base64
// are errors naming what is wrong: a real API refuses each, and a model
// sent one would look at nothing.
func NewImage(data, mime string) (Image, error) {
	if rest, ok := strings.CutPrefix(data, "data:"); ok {
		head, payload, found := strings.Cut(rest, ",")
		urlType, isB64 := strings.CutSuffix(head, ";base64")
		if !found || !isB64 {
			return Image{}, errors.New("image: a data: URL must be data:<type>;base64,<data>")
		}
		if mime != "" && urlType != "" && !sameType(mime, urlType) {
			return Image{}, fmt.Errorf("image: declared %.40q but its data: URL says %.40q", mime, urlType)
		}
		if urlType != "" {
			mime = urlType
		}
		data = payload
	}
	if data == "" {
		return Image{}, errors.New("image: empty")
	}
	if base64.StdEncoding.DecodedLen(len(data)) > maxImageBytes+3 {
		return Image{}, fmt.Errorf("image: over %d bytes", maxImageBytes)
	}
	raw, err := base64.StdEncoding.DecodeString(data)
	if err != nil {
		return Image{}, fmt.Errorf("image: not base64: %w", err)
	}
	got := http.DetectContentType(raw)
	known := false
	for _, t := range ImageTypes {
		known = known || got == t
	}
	if !known {
		return Image{}, fmt.Errorf("image: the bytes are %s, not a JPEG, PNG, WebP or GIF picture", got)
	}
	if mime != "" && !sameType(mime, got) {
		return Image{}, fmt.Errorf("image: declared %.40q but the bytes are %s", mime, got)
	}
	// Encoded anew: line breaks some encoders put in base64 go.
	return Image{MIME: got, Base64: base64.StdEncoding.EncodeToString(raw)}, nil
}

// sameType compares media types, ignoring case, parameters and the
// common image/jpg spelling.
func sameType(a, b string) bool {
	norm := func(s string) string {
		s, _, _ = strings.Cut(s, ";")
		s = strings.ToLower(strings.TrimSpace(s))
		if s == "image/jpg" {
			s = "image/jpeg"
		}
		return s
	}
	return norm(a) == norm(b)
}
