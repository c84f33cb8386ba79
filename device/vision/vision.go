// Package vision is the body's eye: it answers "vision" queries with the
// newest frame of a camera that keeps capturing (drivers/camera.Capture),
// as base64 JPEG with its size and capture time. No camera is opened per
// query. It is only the eye: the brain's vision tool, which asks a device
// for a frame and hands it to the model, is on the mind's side
// (runtime/brain/llm.DeviceLooker).
package vision

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"time"

	"github.com/chorus-robotics/chorus/drivers/camera"
	"github.com/chorus-robotics/chorus/runtime/protocol"
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
