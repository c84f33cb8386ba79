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
	"errors"
	"fmt"
	"time"

	"github.com/chorus-robotics/chorus/drivers/camera"
)

// DefaultMaxAge is how old the newest frame may be before the camera counts
// as not delivering.
const DefaultMaxAge = 5 * time.Second

// Eye answers vision queries.
type Eye struct {
	Camera *camera.Capture
	MaxAge time.Duration
}

// Result is the body of a vision result (aikyo's visionKnowledge reads
// "image").
type Result struct {
	Image      string    `json:"image"` // base64 JPEG
	MIME       string    `json:"mime"`
	Width      int       `json:"width"`
	Height     int       `json:"height"`
	CapturedAt time.Time `json:"capturedAt"`
}

// Handle is the query handler for "vision". It takes no body, or an empty
// object.
func (e *Eye) Handle(ctx context.Context, from string, body json.RawMessage) (any, error) {
	if len(body) > 0 {
		var b map[string]json.RawMessage
		if err := json.Unmarshal(body, &b); err != nil || len(b) > 0 {
			return nil, errors.New("vision: takes no parameters")
		}
	}
	maxAge := e.MaxAge
	if maxAge <= 0 {
		maxAge = DefaultMaxAge
	}
	f, err := e.Camera.Latest(maxAge)
	if err != nil {
		return nil, fmt.Errorf("vision: %w", err)
	}
	return Result{Image: base64.StdEncoding.EncodeToString(f.JPEG), MIME: "image/jpeg", Width: f.Width, Height: f.Height,
		CapturedAt: f.CapturedAt.UTC()}, nil
}

// DecodeResult reads a vision result body (the companion's looker and
// `chorus query` both read one).
func DecodeResult(body []byte) (Result, error) {
	var v Result
	if err := json.Unmarshal(body, &v); err != nil {
		return Result{}, fmt.Errorf("vision result: %w", err)
	}
	if v.Image == "" {
		return Result{}, errors.New("vision result: no image")
	}
	return v, nil
}
