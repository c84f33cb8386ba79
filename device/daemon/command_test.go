//go:build unix

package daemon

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/chorus-robotics/chorus/runtime/bus"
	"github.com/chorus-robotics/chorus/runtime/bus/bustest"
	"github.com/chorus-robotics/chorus/runtime/protocol"
	"github.com/chorus-robotics/chorus/runtime/query"
	"github.com/chorus-robotics/chorus/runtime/topic"
)

// A device whose camera and speaker are programs (issue 19): ffmpeg's
// test source as the camera, after a line of text that is not a JPEG
// (counted), and a "speaker" that stores the PCM; vision and speak
// queries answer as with any other driver.
func TestDeviceWithCommandCameraAndSpeaker(t *testing.T) {
	if _, err := exec.LookPath("ffmpeg"); err != nil {
		t.Skip("ffmpeg not installed")
	}
	br := bustest.StartEmbedded(t, bustest.Options{})
	port := bustest.FreePort(t)
	pcm := filepath.Join(t.TempDir(), "speaker.raw")
	yaml := fmt.Sprintf(botYAML+`drivers:
  camera:
    kind: command
    command: [sh, -c, "echo starting; exec ffmpeg -hide_banner -loglevel error -re -f lavfi -i testsrc2=size=640x480:rate=10 -f mjpeg -"]
  audio: {kind: command, command: [sh, -c, "cat >> %s"], sample_rate: 16000}
  tts: {kind: tone}
http: {listen: "127.0.0.1:%d"}
`, br.URL(), pcm, port)
	_, stop, _ := start(t, load(t, yaml))
	defer stop()
	ctx := context.Background()
	cb, err := bus.Dial(ctx, bus.Options{Broker: br.URL(), ClientID: "asker", Username: "asker"})
	if err != nil {
		t.Fatal(err)
	}
	defer cb.Close()
	c := query.NewClient(cb, topic.New(""), "asker", query.ClientOptions{Timeout: 10 * time.Second})

	var v protocol.VisionResult
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		v, err = query.Call(ctx, c, "bot", query.Vision, protocol.VisionRequest{}, 2*time.Second)
		if errors.Is(err, query.ErrBadResult) {
			t.Fatal(err)
		}
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no vision answer: %v", err)
		}
	}
	if v.Width != 640 || v.Height != 480 || v.MIME != "image/jpeg" || len(v.Image) < 1000 {
		t.Fatalf("vision %dx%d %s, %d base64 bytes", v.Width, v.Height, v.MIME, len(v.Image))
	}

	start := time.Now()
	res, err := query.Call(ctx, c, "bot", query.Speak, protocol.SpeakRequest{Message: "Hello there. Nice to see you."}, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	st, _ := os.Stat(pcm)
	stored := time.Duration(st.Size()/2) * time.Second / 16000
	if res.DurationMs < 100 || res.DurationMs != stored.Milliseconds() || res.StartedAt.IsZero() {
		t.Fatalf("speak %+v; the speaker got %v of audio", res, stored)
	}
	if took := time.Since(start); took < stored {
		t.Fatalf("the result came after %v, before the %v of audio played", took, stored)
	}

	_, metrics := get(t, fmt.Sprintf("http://127.0.0.1:%d/metrics", port))
	if !regexp.MustCompile(`chorus_bad_input_total\{kind="not_jpeg",source="camera command"\} [1-9]`).MatchString(metrics) {
		t.Errorf("the text before the stream is not counted:\n%s", grepLines(metrics, "bad_input"))
	}
}

func grepLines(s, sub string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}
