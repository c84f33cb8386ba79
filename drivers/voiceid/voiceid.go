// Package voiceid tells voices apart (docs/hearing.md, "Who is
// speaking"): an Embedder turns an utterance's audio into a speaker
// embedding, a vector that lies near the embeddings of the same voice
// and far from others'. Chorus keeps the voiceprints itself
// (memory.Voices), so a service that restarts loses nothing; the
// service only computes.
//
// LocalAI is LocalAI's /v1/voice/embed (ECAPA-TDNN, 192 dimensions, or
// WeSpeaker, 256), its wire format exactly. Services that identify
// rather than embed (a Resemblyzer REST service's /recognize answers a
// name from its own registry) do not fit: their registry would be a
// second gallery, lost or stale apart from the robot's memory
// (docs/choices.md).
package voiceid

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net/http"
	"strings"

	"github.com/chorus-robotics/chorus/drivers/audio"
	"github.com/chorus-robotics/chorus/runtime/modelhttp"
)

// Embedder computes the speaker embedding of one utterance.
type Embedder interface {
	// Embed returns the embedding of pcm (mono, 16-bit, at rate).
	Embed(ctx context.Context, pcm []int16, rate int) ([]float32, error)
	// Model names the embeddings' model: voiceprints of another model
	// are not compared with them.
	Model() string
}

// MaxDims bounds an embedding's dimensions.
const MaxDims = 4096

// LocalAI is LocalAI's voice embedding endpoint: POST {URL}/v1/voice/embed
// {"model", "audio": a data URI of a WAV} → {"embedding": [...], "dim",
// "model"}.
type LocalAI struct {
	URL    string // the server's base, http://host:8080
	Name   string // the model (LocalAI's config name), e.g. speaker-recognition
	APIKey string
	HTTP   *http.Client
	Log    *slog.Logger
}

// Model is the model's name.
func (l *LocalAI) Model() string { return l.Name }

// Embed posts the utterance as a WAV data URI and decodes the answer.
// It is not retried: the ear waits for it only a moment.
func (l *LocalAI) Embed(ctx context.Context, pcm []int16, rate int) ([]float32, error) {
	if len(pcm) == 0 {
		return nil, errors.New("voiceid localai: no audio")
	}
	wav := audio.EncodeWAV(audio.PCM{Rate: rate, Samples: pcm})
	body := map[string]string{"model": l.Name, "audio": "data:audio/wav;base64," + base64.StdEncoding.EncodeToString(wav)}
	header := http.Header{}
	if l.APIKey != "" {
		header.Set("Authorization", "Bearer "+l.APIKey)
	}
	c := &modelhttp.Client{Provider: "voiceid localai", HTTP: l.HTTP, MaxRetries: -1, MaxBody: 1 << 20, Log: l.Log}
	var vec []float32
	err := c.Post(ctx, strings.TrimSuffix(l.URL, "/")+"/v1/voice/embed", header, body, func(b []byte) error {
		var err error
		vec, err = DecodeEmbedding(b)
		return err
	})
	if err != nil {
		return nil, err
	}
	return vec, nil
}

// DecodeEmbedding decodes and checks LocalAI's answer: an embedding of 1
// to MaxDims finite numbers, not all zero, of dim dimensions when dim is
// given.
func DecodeEmbedding(b []byte) ([]float32, error) {
	var w struct {
		Embedding []float64 `json:"embedding"`
		Dim       *int      `json:"dim"`
		Model     string    `json:"model"`
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	if err := dec.Decode(&w); err != nil {
		return nil, fmt.Errorf("voiceid: the answer is not an embedding: %w", err)
	}
	switch {
	case len(w.Embedding) == 0:
		return nil, errors.New("voiceid: the answer's embedding is empty")
	case len(w.Embedding) > MaxDims:
		return nil, fmt.Errorf("voiceid: an embedding of %d dimensions (at most %d)", len(w.Embedding), MaxDims)
	case w.Dim != nil && *w.Dim != len(w.Embedding):
		return nil, fmt.Errorf("voiceid: the answer says dim %d but its embedding has %d", *w.Dim, len(w.Embedding))
	}
	out := make([]float32, len(w.Embedding))
	var sum float64
	for i, x := range w.Embedding {
		if math.IsNaN(x) || math.IsInf(x, 0) || math.Abs(x) > math.MaxFloat32 {
			return nil, fmt.Errorf("voiceid: the embedding's value %d is not a finite number", i)
		}
		out[i] = float32(x)
		sum += x * x
	}
	if sum == 0 || math.IsInf(sum, 0) {
		return nil, errors.New("voiceid: the embedding is all zeros")
	}
	return out, nil
}
