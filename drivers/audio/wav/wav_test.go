package wav

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/chorus-robotics/chorus/drivers/audio"
)

func TestUtteranceFile(t *testing.T) {
	o, err := New(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	s, err := o.Begin(ctx, "kyoko/../hello")
	if err != nil {
		t.Fatal(err)
	}
	chunk := audio.PCM{Rate: 16000, Samples: make([]int16, 8000)}
	for i := range chunk.Samples {
		chunk.Samples[i] = int16(i % 1000)
	}
	s.Write(ctx, chunk)
	s.Write(ctx, audio.PCM{Rate: 8000, Samples: make([]int16, 4000)}) // resampled to 16 kHz
	d, err := s.Drain(ctx)
	if err != nil || d != time.Second {
		t.Fatalf("drain %v %v, want 1s", d, err)
	}
	b, err := os.ReadFile(Path(s))
	if err != nil {
		t.Fatal(err)
	}
	p, err := audio.DecodeWAV(b)
	if err != nil || p.Rate != 16000 || len(p.Samples) != 16000 || p.Samples[999] != 999 {
		t.Fatalf("file: %v rate %d samples %d", err, p.Rate, len(p.Samples))
	}
	if err := s.Write(ctx, chunk); err == nil {
		t.Fatal("write after drain accepted")
	}
}
