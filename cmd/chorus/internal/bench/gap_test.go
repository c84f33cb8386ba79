package bench

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/chorus-robotics/chorus/drivers/tts"
)

// BenchmarkGap measures the silence between robots (issue 13): go test
// -run XXX -bench Gap -benchtime 1x ./cmd/chorus/internal/bench/ (30
// turns per room; also `chorus bench gap`).
func BenchmarkGap(b *testing.B) {
	for _, e := range []string{"tone", "espeak-ng", "open_jtalk"} {
		for _, lat := range []time.Duration{300 * time.Millisecond, time.Second} {
			for _, order := range []string{"overlapped", "sequential"} {
				b.Run(fmt.Sprintf("%s/%v/%s", e, lat, order), func(b *testing.B) {
					if e != "tone" && !tts.Available(e) {
						b.Skip(e + " not installed")
					}
					for range b.N {
						res, err := Gap(context.Background(), GapCase{Latency: lat, TTS: e, Turns: order, Rounds: 30})
						if err != nil {
							b.Fatal(err)
						}
						st := Summarize(res.Gaps)
						b.ReportMetric(float64(st.P50.Microseconds())/1000, "p50-ms")
						b.ReportMetric(float64(st.P99.Microseconds())/1000, "p99-ms")
						b.ReportMetric(float64(res.Overlaps), "overlaps")
					}
				})
			}
		}
	}
}

// A short overlapped room: no two robots ever talk at once, and none
// starts sooner than the pause after the one before it.
func TestGapSmoke(t *testing.T) {
	res, err := Gap(context.Background(), GapCase{Latency: 300 * time.Millisecond, TTS: "tone", Turns: "overlapped", Rounds: 3})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("gaps %v, median utterance %v", res.Gaps, res.Spoken)
	if res.Overlaps != 0 || len(res.Gaps) != 3 {
		t.Fatalf("%d overlaps in %v", res.Overlaps, res.Gaps)
	}
	for _, g := range res.Gaps {
		if g < Pause-20*time.Millisecond {
			t.Fatalf("a silence of %v, shorter than the pause %v", g, Pause)
		}
	}
}
