package memory

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/chorus-robotics/chorus/runtime/modelhttp"
)

// Embedder turns texts into vectors, one per text in order. Embed is
// bounded by ctx and must not block past it.
type Embedder interface {
	Embed(ctx context.Context, texts []string) ([]Vector, error)
}

// Defaults of EmbedConfig.
const (
	DefaultEmbedTimeout = 10 * time.Second
	DefaultEmbedMaxBody = 4 << 20
	DefaultEmbedBatch   = 64
)

// EmbedConfig configures an OpenAIEmbedder.
type EmbedConfig struct {
	BaseURL    string        // e.g. http://192.0.2.20:8080/v1; empty means OpenAI
	APIKey     string        // sent as a bearer token; never logged
	Model      string        // e.g. text-embedding-3-small, nomic-embed-text
	Timeout    time.Duration // a call without a deadline in its context (default 10 s)
	MaxBody    int64         // of an answer (default 4 MiB)
	Batch      int           // texts per request at most (default 64)
	MaxRetries int           // on 429 and 5xx (modelhttp's default 2; negative none)
	HTTPClient *http.Client  // default modelhttp's
	Log        *slog.Logger
}

// OpenAIEmbedder is a client of an OpenAI-compatible POST
// {base_url}/embeddings (OpenAI, a llama.cpp server, Ollama, vLLM).
type OpenAIEmbedder struct {
	cfg    EmbedConfig
	url    string
	header http.Header
	client *modelhttp.Client
}

var _ Embedder = (*OpenAIEmbedder)(nil)

// NewOpenAIEmbedder returns the client; it makes no request.
func NewOpenAIEmbedder(cfg EmbedConfig) *OpenAIEmbedder {
	base := strings.TrimRight(cfg.BaseURL, "/")
	if base == "" {
		base = modelhttp.OpenAIBaseURL
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = DefaultEmbedTimeout
	}
	if cfg.MaxBody <= 0 {
		cfg.MaxBody = DefaultEmbedMaxBody
	}
	if cfg.Batch <= 0 {
		cfg.Batch = DefaultEmbedBatch
	}
	h := http.Header{}
	if cfg.APIKey != "" {
		h.Set("Authorization", "Bearer "+cfg.APIKey)
	}
	return &OpenAIEmbedder{cfg: cfg, url: base + "/embeddings", header: h,
		client: &modelhttp.Client{Provider: "openai-embeddings", HTTP: cfg.HTTPClient, MaxRetries: cfg.MaxRetries,
			MaxBody: cfg.MaxBody, Log: cfg.Log}}
}

type (
	embedRequest struct {
		Model string   `json:"model"`
		Input []string `json:"input"`
	}
	embedResponse struct {
		Data []struct {
			Embedding []float64 `json:"embedding"`
			Index     int       `json:"index"`
		} `json:"data"`
	}
)

// Embed asks the server for the vectors of texts, Batch at a time. Every
// answer is checked: one vector per text, each index once, all of the
// same dimensions (at most MaxDims), finite.
func (e *OpenAIEmbedder) Embed(ctx context.Context, texts []string) ([]Vector, error) {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, e.cfg.Timeout)
		defer cancel()
	}
	out := make([]Vector, 0, len(texts))
	for start := 0; start < len(texts); start += e.cfg.Batch {
		batch := texts[start:min(len(texts), start+e.cfg.Batch)]
		var vs []Vector
		err := e.client.Post(ctx, e.url, e.header, embedRequest{Model: e.cfg.Model, Input: batch}, func(b []byte) error {
			var err error
			vs, err = decodeEmbeddings(b, len(batch))
			return err
		})
		if err != nil {
			return nil, fmt.Errorf("memory: embeddings: %w", err)
		}
		if len(out) > 0 && len(vs) > 0 && len(vs[0]) != len(out[0]) {
			return nil, errors.New("memory: embeddings: the dimensions changed between batches")
		}
		out = append(out, vs...)
	}
	return out, nil
}

func decodeEmbeddings(b []byte, n int) ([]Vector, error) {
	var r embedResponse
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("decoding the answer: %w", err)
	}
	if len(r.Data) != n {
		return nil, fmt.Errorf("%d embeddings for %d texts", len(r.Data), n)
	}
	out := make([]Vector, n)
	for _, d := range r.Data {
		if d.Index < 0 || d.Index >= n || out[d.Index] != nil {
			return nil, fmt.Errorf("a bad or repeated index %d", d.Index)
		}
		if len(d.Embedding) == 0 || len(d.Embedding) > MaxDims || len(d.Embedding) != len(r.Data[0].Embedding) {
			return nil, fmt.Errorf("an embedding of %d dimensions", len(d.Embedding))
		}
		v := make(Vector, len(d.Embedding))
		for i, x := range d.Embedding {
			if math.IsNaN(x) || math.IsInf(x, 0) || math.Abs(x) > math.MaxFloat32 {
				return nil, errors.New("an embedding with a number out of range")
			}
			v[i] = float32(x)
		}
		out[d.Index] = v
	}
	return out, nil
}

// EmbedFacts sets the Vec of each fact to the embedding of its Text,
// before Add; on an error no fact is changed.
func EmbedFacts(ctx context.Context, e Embedder, facts []Fact) error {
	texts := make([]string, len(facts))
	for i, f := range facts {
		texts[i] = f.Text
	}
	vs, err := e.Embed(ctx, texts)
	if err != nil {
		return err
	}
	if len(vs) != len(facts) {
		return fmt.Errorf("memory: %d embeddings for %d facts", len(vs), len(facts))
	}
	for i := range facts {
		facts[i].Vec = vs[i]
	}
	return nil
}

// RecallVec is Recall by meaning: the pinned core of people (at most 3
// each), then up to n more of their facts whose vectors are nearest vec
// by cosine, if at all near (facts without a vector, or of other
// dimensions, or at a cosine of 0 or less, are left out). No fact of someone not in people is ever returned.
func (s *Store) RecallVec(people []string, vec Vector, n int) []Fact {
	st := s.cur()
	out, taken := core(st, people)
	qn := norm32(vec)
	if qn == 0 || n <= 0 {
		return out
	}
	who := map[string]bool{}
	for _, p := range people {
		who[p] = true
	}
	type scored struct {
		e   *entry
		i   int
		cos float64
	}
	var found []scored
	for i, e := range st.facts {
		if !who[e.f.Person] || taken[e] || len(e.f.Vec) != len(vec) || e.norm == 0 {
			continue
		}
		var dot float64
		for j, x := range e.f.Vec {
			dot += float64(x) * float64(vec[j])
		}
		if cos := dot / (e.norm * qn); cos > 0 { // a fact unrelated to the message is not recalled
			found = append(found, scored{e, i, cos})
		}
	}
	slices.SortFunc(found, func(a, b scored) int {
		if c := cmp.Compare(b.cos, a.cos); c != 0 {
			return c
		}
		return cmp.Compare(b.i, a.i)
	})
	for _, x := range found[:min(n, len(found))] {
		out = append(out, x.e.f)
	}
	return out
}

func norm32(v Vector) float64 {
	var s float64
	for _, x := range v {
		s += float64(x) * float64(x)
	}
	return math.Sqrt(s)
}
