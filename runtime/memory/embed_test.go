package memory

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"
)

// embedServer is an OpenAI-compatible /v1/embeddings that refuses what
// the real one refuses and answers in reverse order (by index).
func embedServer(t *testing.T, dims int, answer func(w http.ResponseWriter, inputs []string) bool) (*httptest.Server, *[][]string) {
	var calls [][]string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.URL.Path != "/v1/embeddings" {
			http.Error(w, `{"error":{"message":"not found"}}`, http.StatusNotFound)
			return
		}
		if r.Header.Get("Authorization") != "Bearer sk-test" || r.Header.Get("Content-Type") != "application/json" {
			http.Error(w, `{"error":{"message":"unauthorized"}}`, http.StatusUnauthorized)
			return
		}
		b, _ := io.ReadAll(r.Body)
		dec := json.NewDecoder(strings.NewReader(string(b)))
		dec.DisallowUnknownFields()
		var req struct {
			Model string   `json:"model"`
			Input []string `json:"input"`
		}
		if err := dec.Decode(&req); err != nil || req.Model != "embed-small" || len(req.Input) == 0 {
			http.Error(w, `{"error":{"message":"bad request"}}`, http.StatusBadRequest)
			return
		}
		calls = append(calls, req.Input)
		if answer != nil && answer(w, req.Input) {
			return
		}
		type item struct {
			Object    string    `json:"object"`
			Embedding []float64 `json:"embedding"`
			Index     int       `json:"index"`
		}
		var data []item
		for i := len(req.Input) - 1; i >= 0; i-- {
			data = append(data, item{"embedding", fakeVec(req.Input[i], dims), i})
		}
		json.NewEncoder(w).Encode(map[string]any{"object": "list", "data": data, "model": req.Model})
	}))
	t.Cleanup(srv.Close)
	return srv, &calls
}

// fakeVec: one dimension per topic word, so cosine follows topics.
func fakeVec(s string, dims int) []float64 {
	v := make([]float64, dims)
	for i, w := range []string{"tea", "cat", "kyoto", "music"} {
		if strings.Contains(strings.ToLower(s), w) && i < dims {
			v[i] = 1
		}
	}
	v[dims-1] = 0.1
	return v
}

func TestOpenAIEmbedder(t *testing.T) {
	srv, calls := embedServer(t, 8, nil)
	e := NewOpenAIEmbedder(EmbedConfig{BaseURL: srv.URL + "/v1/", APIKey: "sk-test", Model: "embed-small", Batch: 2})
	texts := []string{"likes green tea", "has a cat", "lives in Kyoto"}
	vs, err := e.Embed(context.Background(), texts)
	if err != nil {
		t.Fatal(err)
	}
	for i, v := range vs {
		want := fakeVec(texts[i], 8)
		for j := range v {
			if float64(v[j]) != float64(float32(want[j])) {
				t.Fatalf("vector %d = %v, want %v", i, v, want)
			}
		}
	}
	if fmt.Sprint(*calls) != "[[likes green tea has a cat] [lives in Kyoto]]" {
		t.Errorf("requests %q", *calls)
	}
}

func TestOpenAIEmbedderRefuses(t *testing.T) {
	for _, tc := range []struct {
		name   string
		answer string
		status int
		slow   bool
		want   string
	}{
		{"too few", `{"data":[{"embedding":[1,2],"index":0}]}`, 200, false, "1 embeddings for 2 texts"},
		{"repeated index", `{"data":[{"embedding":[1,2],"index":0},{"embedding":[1,2],"index":0}]}`, 200, false, "repeated index"},
		{"dimensions differ", `{"data":[{"embedding":[1,2],"index":0},{"embedding":[1],"index":1}]}`, 200, false, "dimensions"},
		{"out of float32", `{"data":[{"embedding":[1e300,2],"index":0},{"embedding":[1,2],"index":1}]}`, 200, false, "out of range"},
		{"not json", `<html>`, 200, false, "decoding"},
		{"too large", `{"data":[{"embedding":[` + strings.Repeat("0.123456789,", 1000) + `1],"index":0}]}`, 200, false, "larger than"},
		{"server error", `{"error":{"message":"model not loaded"}}`, 400, false, "model not loaded"},
		{"slow", "", 200, true, "deadline"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv, _ := embedServer(t, 4, func(w http.ResponseWriter, _ []string) bool {
				if tc.slow {
					time.Sleep(300 * time.Millisecond)
					return false
				}
				w.WriteHeader(tc.status)
				io.WriteString(w, tc.answer)
				return true
			})
			e := NewOpenAIEmbedder(EmbedConfig{BaseURL: srv.URL + "/v1", APIKey: "sk-test", Model: "embed-small",
				MaxBody: 4 << 10, Timeout: 50 * time.Millisecond, MaxRetries: -1})
			vs, err := e.Embed(context.Background(), []string{"a", "b"})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Embed = %v, %v; want an error with %q", vs, err, tc.want)
			}
			if strings.Contains(err.Error(), "sk-test") {
				t.Errorf("the key in an error: %v", err)
			}
		})
	}
}

func TestRecallVec(t *testing.T) {
	srv, _ := embedServer(t, 8, nil)
	e := NewOpenAIEmbedder(EmbedConfig{BaseURL: srv.URL + "/v1", APIKey: "sk-test", Model: "embed-small"})
	facts := []Fact{
		{Person: "alice", Key: "name", Text: "name is Alice"},
		{Person: "alice", Text: "likes green tea"},
		{Person: "alice", Text: "has a cat"},
		{Person: "alice", Text: "lives in Kyoto"},
		{Person: "bob", Text: "likes black tea"},
	}
	if err := EmbedFacts(context.Background(), e, facts); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	s := open(t, dir, Limits{})
	add(t, s, facts...)
	add(t, s, Fact{Person: "alice", Text: "plays music"}) // no vector
	s.Close()
	s = open(t, dir, Limits{})
	q, err := e.Embed(context.Background(), []string{"Would you like some tea from Kyoto?"})
	if err != nil {
		t.Fatal(err)
	}
	got := texts(s.RecallVec([]string{"alice"}, q[0], 2))
	if !slices.Equal(got, []string{"name is Alice", "lives in Kyoto", "likes green tea"}) {
		t.Errorf("RecallVec %q", got)
	}
	for _, f := range s.RecallVec([]string{"bob"}, q[0], 10) {
		if f.Person != "bob" {
			t.Errorf("recalled %+v for bob", f)
		}
	}
	if got := s.RecallVec([]string{"alice"}, Vector{1, 2}, 5); len(got) != 1 {
		t.Errorf("other dimensions: %q", texts(got))
	}
}
