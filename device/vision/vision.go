// Package vision is the body's eye: it answers "vision" queries with the
// newest frame of a camera that keeps capturing (drivers/camera.Capture),
// as base64 JPEG with its size and capture time. No camera is opened per
// query. Looker is the other side: the brain's vision tool, asking a
// device and decoding its answer.
package vision

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"time"

	"github.com/chorus-robotics/chorus/drivers/camera"
	"github.com/chorus-robotics/chorus/runtime/brain/llm"
	"github.com/chorus-robotics/chorus/runtime/protocol"
	"github.com/chorus-robotics/chorus/runtime/query"
)

// DefaultMaxAge is how old the newest frame may be before the camera counts
// as not delivering.
const DefaultMaxAge = 5 * time.Second

// Eye answers vision queries.
type Eye struct {
	Camera *camera.Capture
	MaxAge time.Duration
}

// Handle is the query handler for "vision": no body (or null, or {}) in,
// a protocol.VisionResult out.
func (e *Eye) Handle(ctx context.Context, from string, body json.RawMessage) (any, error) {
	if _, err := protocol.DecodeVisionRequest(body, 0); err != nil {
		return nil, err
	}
	maxAge := e.MaxAge
	if maxAge <= 0 {
		maxAge = DefaultMaxAge
	}
	f, err := e.Camera.Latest(maxAge)
	if err != nil {
		return nil, fmt.Errorf("vision: %w", err)
	}
	return protocol.VisionResult{Image: base64.StdEncoding.EncodeToString(f.JPEG), MIME: "image/jpeg", Width: f.Width, Height: f.Height,
		CapturedAt: f.CapturedAt.UTC()}, nil
}

// Looker is the brain's vision tool on a device's camera: a vision query
// to device through q, its frame handed to the model.
func Looker(q query.Asker, device string) llm.Looker {
	return func(ctx context.Context) (llm.Image, error) {
		v, err := query.Look(ctx, q, device, 0)
		if err != nil {
			return llm.Image{}, err
		}
		// aikyo's client sends {image} without a type, some bodies a
		// data: URL: the model is given the type the bytes have.
		img, err := llm.NewImage(v.Image, v.MIME)
		if err != nil {
			return llm.Image{}, fmt.Errorf("vision result of %s: %w", device, err)
		}
		return img, nil
	}
}
