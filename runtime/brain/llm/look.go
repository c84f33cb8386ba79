package llm

import (
	"context"
	"fmt"
)

// Eye asks a device for its newest camera frame (a vision query): image is
// base64 or a data: URL, mime the type the device declared ("" when it
// declared none). device/daemon wires it to runtime/query's client.
type Eye func(ctx context.Context, device string) (image, mime string, err error)

// DeviceLooker is the brain's vision tool on a companion's own camera:
// each look asks device through eye and hands the model the frame with the
// type its bytes have (NewImage). A frame the model would refuse is an
// error naming the device, so the turn goes on without a picture.
func DeviceLooker(eye Eye, device string) Looker {
	return func(ctx context.Context) (Image, error) {
		data, mime, err := eye(ctx, device)
		if err != nil {
			return Image{}, err
		}
		// aikyo's client sends {image} without a type, some bodies a
		// data: URL: the model is given the type the bytes have.
		img, err := NewImage(data, mime)
		if err != nil {
			return Image{}, fmt.Errorf("vision result of %s: %w", device, err)
		}
		return img, nil
	}
}
