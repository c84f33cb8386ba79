package bench

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/chorus-robotics/chorus/drivers/tts"
	"github.com/chorus-robotics/chorus/drivers/tts/espeak"
	"github.com/chorus-robotics/chorus/runtime/bus/bustest"
)

// BenchmarkVisionRoundTrip: a 640×480 vision query on the embedded broker.
func BenchmarkVisionRoundTrip(b *testing.B) {
	url := bustest.StartEmbedded(b, bustest.Options{}).URL()
	b.ResetTimer()
	ds, err := VisionRoundTrip(context.Background(), url, 640, 480, b.N)
	report(b, ds, err)
}

// BenchmarkSpeakFirstAudio: three sentences with espeak-ng, sentence by
// sentence against the whole text.
func BenchmarkSpeakFirstAudio(b *testing.B) {
	if !tts.Available("espeak-ng") {
		b.Skip("espeak-ng not installed")
	}
	for _, whole := range []bool{false, true} {
		name := "sentences"
		if whole {
			name = "whole-text"
		}
		b.Run(name, func(b *testing.B) {
			ds, err := FirstAudio(context.Background(), &espeak.Engine{}, ThreeSentences, whole, b.N)
			report(b, ds, err)
		})
	}
}

func TestSmoke(t *testing.T) {
	url := bustest.StartEmbedded(t, bustest.Options{}).URL()
	ds, err := VisionRoundTrip(context.Background(), url, 320, 240, 3)
	if err != nil || len(ds) != 3 {
		t.Fatalf("%d, %v", len(ds), err)
	}
}

func TestStartupReachesReady(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "chorusd")
	cmd := exec.Command("go", "build", "-o", bin, "github.com/chorus-robotics/chorus/cmd/chorusd")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	ready, mem, err := Startup(context.Background(), bin, "../../../../firmware-configs/demo/kyoko.yaml", 200*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	if ready <= 0 || mem.RSS <= 0 || mem.Anon <= 0 || mem.File <= 0 {
		t.Fatalf("ready %v, memory %+v", ready, mem)
	}
	t.Logf("READY after %v, memory %+v kB", ready, mem)
}
