package voiceid_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chorus-robotics/chorus/drivers/voiceid"
	"github.com/chorus-robotics/chorus/drivers/voiceid/voiceidtest"
)

// The client speaks LocalAI's wire format: the fake refuses anything
// else, and answers the embedding of the audio it received.
func TestLocalAIEmbeds(t *testing.T) {
	srv := voiceidtest.New(t)
	pcm := voiceidtest.Say(t, voiceidtest.Mia, "I like green tea in the morning.", 1)
	e := &voiceid.LocalAI{URL: srv.URL + "/", Name: voiceidtest.Model}
	vec, err := e.Embed(context.Background(), pcm, 16000)
	if err != nil {
		t.Fatal(err)
	}
	if want := voiceidtest.Spectral(pcm, 16000); !slices.Equal(vec, want) {
		t.Fatalf("embedding %v, want the spectral embedding of the audio sent %v", vec, want)
	}
	if r := srv.Refused(); len(r) != 0 {
		t.Fatalf("the service refused: %v", r)
	}
	// Another model's name is refused as LocalAI does.
	if _, err := (&voiceid.LocalAI{URL: srv.URL, Name: "ecapa"}).Embed(context.Background(), pcm, 16000); err == nil || !strings.Contains(err.Error(), "404") {
		t.Fatalf("an unknown model: %v", err)
	}
}

// Down, garbage and slow each fail with an error naming the service;
// none is retried (the ear waits only a moment).
func TestLocalAIFaults(t *testing.T) {
	srv := voiceidtest.New(t)
	pcm := voiceidtest.Say(t, voiceidtest.Sam, "Hello there.", 0)
	e := &voiceid.LocalAI{URL: srv.URL, Name: voiceidtest.Model}
	for _, tc := range []struct {
		mode  string
		delay time.Duration
		want  string
	}{
		{"down", 0, "HTTP 503"},
		{"garbage", 0, "not an embedding"},
		{"", 2 * time.Second, "deadline"},
	} {
		srv.Mode(tc.mode)
		srv.Delay(tc.delay)
		before := srv.Calls()
		ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
		_, err := e.Embed(ctx, pcm, 16000)
		cancel()
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "voiceid") && tc.want != "deadline" {
			t.Errorf("%s/%v: %v, want %q", tc.mode, tc.delay, err, tc.want)
		}
		if n := srv.Calls() - before; n != 1 {
			t.Errorf("%s: %d requests, want 1 (no retries)", tc.mode, n)
		}
	}
	if _, err := e.Embed(context.Background(), nil, 16000); err == nil {
		t.Error("no audio was sent")
	}
}

func TestDecodeEmbedding(t *testing.T) {
	for _, tc := range []struct {
		in, err string
	}{
		{`{"embedding":[0.1,-0.2,0.3],"dim":3,"model":"m"}`, ""},
		{`{"embedding":[0.1,-0.2]}`, ""},
		{`{"embedding":[],"dim":0}`, "empty"},
		{`{"embedding":[1,2],"dim":3}`, "dim 3"},
		{`{"embedding":[0,0]}`, "all zeros"},
		{`{"embedding":[1e39]}`, "finite"},
		{`{"embedding":"x"}`, "not an embedding"},
		{`<html>`, "not an embedding"},
	} {
		_, err := voiceid.DecodeEmbedding([]byte(tc.in))
		if (tc.err == "") != (err == nil) || err != nil && !strings.Contains(err.Error(), tc.err) {
			t.Errorf("%s: %v, want %q", tc.in, err, tc.err)
		}
	}
}

func FuzzDecodeEmbedding(f *testing.F) {
	f.Add([]byte(`{"embedding":[0.1,-0.2,0.3],"dim":3,"model":"m"}`))
	f.Add([]byte(`{"embedding":[1e38,1e38]}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		v, err := voiceid.DecodeEmbedding(b)
		if err != nil {
			return
		}
		if len(v) == 0 || len(v) > voiceid.MaxDims {
			t.Fatalf("accepted %d dimensions", len(v))
		}
	})
}
