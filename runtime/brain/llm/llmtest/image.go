package llmtest

import (
	"encoding/base64"
	"fmt"
	"net/http"
	"strings"
)

// ImageProblem says what a real model API refuses in a picture of
// mediaType with base64 data ("" when it would take it): both the OpenAI
// and the Anthropic APIs want one of four media types, valid base64, and
// bytes of the type named. A fake that took anything hid a body's
// untyped picture for months.
func ImageProblem(mediaType, data string) string {
	switch mediaType {
	case "image/jpeg", "image/png", "image/gif", "image/webp":
	case "":
		return "the image has no media type"
	default:
		return fmt.Sprintf("media type %.40q: only image/jpeg, image/png, image/gif and image/webp are supported", mediaType)
	}
	raw, err := base64.StdEncoding.DecodeString(data)
	if err != nil || len(raw) == 0 {
		return "the image data is not valid base64"
	}
	if got := http.DetectContentType(raw); got != mediaType {
		return fmt.Sprintf("the image does not match the provided media type %s (its bytes are %s)", mediaType, got)
	}
	return ""
}

// DataURLProblem is ImageProblem for an OpenAI image_url: a data URL
// data:<type>;base64,<data> (Chorus never sends a web address).
func DataURLProblem(url string) string {
	rest, ok := strings.CutPrefix(url, "data:")
	head, data, found := strings.Cut(rest, ",")
	mediaType, b64 := strings.CutSuffix(head, ";base64")
	if !ok || !found || !b64 {
		return fmt.Sprintf("invalid image URL %.40q: want data:<type>;base64,<data>", url)
	}
	if strings.HasPrefix(data, "data:") {
		return "invalid image URL: a data URL inside a data URL"
	}
	return ImageProblem(mediaType, data)
}
