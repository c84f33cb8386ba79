// Package voicevox speaks through a VOICEVOX engine over HTTP: POST
// /audio_query?text=…&speaker=N for the prosody, adjusted for the emotion,
// then POST /synthesis?speaker=N for the WAV.
package voicevox

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/chorus-robotics/chorus/drivers/audio"
	"github.com/chorus-robotics/chorus/drivers/tts"
)

// Engine is a VOICEVOX engine client.
type Engine struct {
	URL     string // e.g. http://127.0.0.1:50021
	Speaker int    // style id
	Speed   float64
	Client  *http.Client
}

var _ tts.Engine = (*Engine)(nil)

func (e *Engine) Name() string { return "voicevox" }

// maxWAV caps a synthesis answer (5 minutes at 48 kHz).
const maxWAV = 30 << 20

func (e *Engine) client() *http.Client {
	if e.Client != nil {
		return e.Client
	}
	return &http.Client{Timeout: 60 * time.Second}
}

func (e *Engine) post(ctx context.Context, path string, q url.Values, body []byte, limit int64) ([]byte, error) {
	u := strings.TrimRight(e.URL, "/") + path + "?" + q.Encode()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u, bytes.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("tts voicevox: %w", err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := e.client().Do(req)
	if err != nil {
		return nil, fmt.Errorf("tts voicevox: %s: %w", path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, limit+1))
	if err != nil {
		return nil, fmt.Errorf("tts voicevox: %s: %w", path, err)
	}
	if resp.StatusCode != http.StatusOK {
		msg := string(b)
		if len(msg) > 200 {
			msg = msg[:200]
		}
		return nil, fmt.Errorf("tts voicevox: %s: HTTP %d: %s", path, resp.StatusCode, msg)
	}
	if int64(len(b)) > limit {
		return nil, fmt.Errorf("tts voicevox: %s: answer larger than %d bytes", path, limit)
	}
	return b, nil
}

// Synthesize implements tts.Engine.
func (e *Engine) Synthesize(ctx context.Context, text, emotion string) (audio.PCM, error) {
	p, err := tts.Check(text, emotion)
	if err != nil {
		return audio.PCM{}, err
	}
	q := url.Values{"text": {text}, "speaker": {strconv.Itoa(e.Speaker)}}
	raw, err := e.post(ctx, "/audio_query", q, nil, 1<<20)
	if err != nil {
		return audio.PCM{}, err
	}
	// Keep every field the engine sent; change only the prosody.
	var aq map[string]any
	if err := json.Unmarshal(raw, &aq); err != nil {
		return audio.PCM{}, fmt.Errorf("tts voicevox: audio_query answer is not JSON: %w", err)
	}
	speed := e.Speed
	if speed <= 0 {
		speed = 1
	}
	aq["speedScale"] = speed * p.Speed
	aq["pitchScale"] = float64(p.Pitch) / 500 // VOICEVOX pitch is a small offset around 0
	body, _ := json.Marshal(aq)
	wav, err := e.post(ctx, "/synthesis", url.Values{"speaker": {strconv.Itoa(e.Speaker)}}, body, maxWAV)
	if err != nil {
		return audio.PCM{}, err
	}
	return audio.DecodeWAV(wav)
}
