package cli

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"image"
	_ "image/jpeg" // the size of a frame its device did not give
	_ "image/png"
	"io"
	"os"
	"time"

	"github.com/chorus-robotics/chorus/runtime/protocol"
	"github.com/chorus-robotics/chorus/runtime/query"
	"github.com/chorus-robotics/chorus/runtime/room"
)

func init() {
	commands["query"] = command{"ask a device: query -device D -type vision|speak [-body JSON] [-out frame.jpg]", runQuery}
}

func runQuery(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs, rf := newRoomFlags("query", stderr)
	device := fs.String("device", "", "the device to ask (required)")
	typ := fs.String("type", "", "query type: vision, speak, ... (required)")
	body := fs.String("body", "", `query body, a JSON object, e.g. '{"message":"Hello","emotion":"happy"}'`)
	out := fs.String("out", "", "vision: write the frame to this JPEG file")
	timeout := fs.Duration("timeout", 30*time.Second, "give up after this long")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *device == "" || *typ == "" {
		return errors.New("-device and -type are required")
	}
	var b any
	if *body != "" {
		var m map[string]any
		if err := json.Unmarshal([]byte(*body), &m); err != nil {
			return fmt.Errorf("-body: must be a JSON object: %w", err)
		}
		b = m
	}
	if rf.room == "" {
		rf.room = "_"
	}
	r, bus, err := rf.connect(ctx, "query")
	if err != nil {
		return err
	}
	defer bus.Close()
	var online func(string) (bool, bool)
	if rf.room != "_" { // with a room, a device known to be offline fails at once
		devices, err := room.FollowDevices(ctx, r)
		if err != nil {
			return err
		}
		time.Sleep(200 * time.Millisecond) // retained presence arrives
		online = devices.Online
	}
	c := query.NewClient(bus, r.Scheme, rf.user, query.ClientOptions{Online: online})
	defer c.Close()
	// The operator stopped waiting (timeout, Ctrl-C): the device stops too
	// (a speak falls silent), whatever the type.
	res, err := c.Ask(ctx, *device, *typ, b, *timeout, query.CancelOnGiveUp())
	if errors.Is(err, query.ErrTimeout) {
		return fmt.Errorf("%w (no result came back: only a room's members read devices' results, so -as must name a member, with its password in CHORUS_MQTT_PASSWORD; the device may also be off)", err)
	}
	if err != nil {
		return err
	}
	if *typ == protocol.TypeVision && *out != "" {
		v, err := protocol.DecodeVisionResult(res, 0)
		if err != nil {
			return fmt.Errorf("vision result of %s: %w", *device, err)
		}
		img, err := base64.StdEncoding.DecodeString(v.Image)
		if err != nil {
			return fmt.Errorf("vision result image: %w", err)
		}
		if err := os.WriteFile(*out, img, 0o644); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "%s written to %s\n", describeFrame(v, img), *out)
		return nil
	}
	fmt.Fprintln(stdout, string(res))
	return nil
}

// describeFrame says what a vision result is: its size (from the image
// itself when the device did not say, as aikyo's client answers {image}
// alone) and when it was captured, if the device said.
func describeFrame(v protocol.VisionResult, img []byte) string {
	w, h := v.Width, v.Height
	if w <= 0 || h <= 0 {
		if c, _, err := image.DecodeConfig(bytes.NewReader(img)); err == nil {
			w, h = c.Width, c.Height
		}
	}
	d := "frame"
	if w > 0 && h > 0 {
		d = fmt.Sprintf("%dx%d frame", w, h)
	}
	if !v.CapturedAt.IsZero() {
		d += " captured at " + v.CapturedAt.Format(time.RFC3339Nano)
	}
	return d
}
