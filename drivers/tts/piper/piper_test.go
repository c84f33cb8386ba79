package piper

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chorus-robotics/chorus/drivers/audio"
)

// A stand-in for the piper binary: it checks its arguments and stdin the way
// piper takes them and writes a WAV to --output_file.
const fakePiper = `#!/bin/sh
set -e
model=""; out=""; ls=""
while [ $# -gt 0 ]; do
  case "$1" in
    --model) model="$2"; shift 2;;
    --output_file) out="$2"; shift 2;;
    --length_scale) ls="$2"; shift 2;;
    *) echo "unknown flag $1" >&2; exit 2;;
  esac
done
[ -f "$model" ] || { echo "model $model missing" >&2; exit 3; }
text=$(cat)
[ -n "$text" ] || { echo "no text" >&2; exit 4; }
echo "$ls" > "$(dirname "$model")/length_scale"
cp "$(dirname "$model")/fixture.wav" "$out"
`

func TestRunsTheBinary(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "piper")
	os.WriteFile(bin, []byte(fakePiper), 0o755)
	model := filepath.Join(dir, "en_US-voice.onnx")
	os.WriteFile(model, []byte("onnx"), 0o644)
	os.WriteFile(filepath.Join(dir, "fixture.wav"), audio.EncodeWAV(audio.PCM{Rate: 22050, Samples: make([]int16, 2205)}), 0o644)
	e := &Engine{Binary: bin, Model: model}
	p, err := e.Synthesize(context.Background(), "Hello there.", "sad")
	if err != nil {
		t.Fatal(err)
	}
	if p.Rate != 22050 || len(p.Samples) != 2205 {
		t.Fatalf("rate %d, %d samples", p.Rate, len(p.Samples))
	}
	ls, _ := os.ReadFile(filepath.Join(dir, "length_scale"))
	if strings.TrimSpace(string(ls)) != "1.18" { // sad speaks at 0.85×
		t.Fatalf("length scale %q", ls)
	}
	_, err = (&Engine{Binary: bin, Model: filepath.Join(dir, "missing.onnx")}).Synthesize(context.Background(), "hi", "")
	if err == nil || !strings.Contains(err.Error(), "missing") {
		t.Fatalf("a crashing piper: %v", err)
	}
}
