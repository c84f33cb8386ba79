// Package timeline is who spoke when in a room, from the speaking statuses
// the devices announce: the silences between robots (the figure overlapped
// turns are measured by), the times two robots talked at once, and a mix of
// every utterance's WAV on one timeline (out/demo/room.wav), so a person
// can listen to the room as it happened. `chorus demo` and `chorus bench
// gap` use it.
package timeline

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/chorus-robotics/chorus/drivers/audio"
	"github.com/chorus-robotics/chorus/runtime/room"
)

// Utterance is one robot's audio: when it really started and how long it
// played (from the end of its speaking status).
type Utterance struct {
	Companion string
	MessageID string
	Start     time.Time
	Duration  time.Duration
}

// End is when the utterance stopped playing.
func (u Utterance) End() time.Time { return u.Start.Add(u.Duration) }

// Recorder collects the utterances of a room.
//
// # Concurrency
//
// Safe for concurrent use: the bus calls it, the caller reads it.
type Recorder struct {
	mu       sync.Mutex
	done     []Utterance
	speaking map[string]string // companion -> message id while its status says speaking
	changed  chan struct{}
}

// Follow records the utterances of r's room from now on.
func Follow(ctx context.Context, r *room.Room) (*Recorder, error) {
	rec := &Recorder{speaking: map[string]string{}, changed: make(chan struct{})}
	err := r.OnSpeaking(ctx, func(e room.SpeakingEvent) {
		rec.mu.Lock()
		defer rec.mu.Unlock()
		switch {
		case e.Cleared:
			delete(rec.speaking, e.ID)
		case e.Speaking.Speaking:
			rec.speaking[e.ID] = e.Speaking.MessageID
		default:
			delete(rec.speaking, e.ID)
			if e.Speaking.DurationMs > 0 && !rec.has(e.Speaking.MessageID) {
				rec.done = append(rec.done, Utterance{Companion: e.ID, MessageID: e.Speaking.MessageID,
					Start: e.Speaking.StartedAt, Duration: time.Duration(e.Speaking.DurationMs) * time.Millisecond})
			}
		}
		close(rec.changed)
		rec.changed = make(chan struct{})
	})
	return rec, err
}

func (r *Recorder) has(id string) bool {
	for _, u := range r.done {
		if u.MessageID == id {
			return true
		}
	}
	return false
}

// Utterances are the ended utterances so far, by start.
func (r *Recorder) Utterances() []Utterance {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := append([]Utterance(nil), r.done...)
	sort.Slice(out, func(i, j int) bool { return out[i].Start.Before(out[j].Start) })
	return out
}

// Quiet waits until nobody's status says speaking, or within passes.
func (r *Recorder) Quiet(ctx context.Context, within time.Duration) error {
	deadline := time.After(within)
	for {
		r.mu.Lock()
		n, changed := len(r.speaking), r.changed
		r.mu.Unlock()
		if n == 0 {
			return nil
		}
		select {
		case <-changed:
		case <-deadline:
			return fmt.Errorf("timeline: still speaking after %v", within)
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// Gaps are the silences between one robot's end and the next one's start,
// in order; a negative gap is an overlap (two robots at once).
func Gaps(us []Utterance) []time.Duration {
	var out []time.Duration
	for i := 1; i < len(us); i++ {
		end := us[i-1].End()
		for _, u := range us[:i-1] { // an earlier, longer one may still play
			if u.End().After(end) {
				end = u.End()
			}
		}
		out = append(out, us[i].Start.Sub(end))
	}
	return out
}

// Overlaps counts the gaps below zero: audio of two robots at once.
func Overlaps(gaps []time.Duration) int {
	n := 0
	for _, g := range gaps {
		if g < 0 {
			n++
		}
	}
	return n
}

// Percentile is the p-th percentile (0–100) of ds, nearest rank.
func Percentile(ds []time.Duration, p float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	i := int(p/100*float64(len(s))+0.5) - 1
	return s[max(0, min(i, len(s)-1))]
}

// Mix writes every utterance's WAV — found under dir/<companion>/ by its
// message id in the file name — at its place on one timeline, into out.
// Each is cut to the duration that played (a barge-in stops a voice short
// of the words synthesized).
func Mix(us []Utterance, dir, out string) error {
	if len(us) == 0 {
		return errors.New("timeline: nothing was said")
	}
	t0 := us[0].Start
	rate := 0
	var tracks []struct {
		at  int
		pcm audio.PCM
	}
	for _, u := range us {
		files, _ := filepath.Glob(filepath.Join(dir, u.Companion, "*.wav"))
		path := ""
		for _, f := range files {
			if strings.Contains(filepath.Base(f), u.MessageID) {
				path = f
			}
		}
		if path == "" {
			return fmt.Errorf("timeline: no WAV for %s's message %s in %s", u.Companion, u.MessageID, filepath.Join(dir, u.Companion))
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return fmt.Errorf("timeline: %w", err)
		}
		p, err := audio.DecodeWAV(b)
		if err != nil {
			return fmt.Errorf("timeline: %s: %w", path, err)
		}
		if rate == 0 {
			rate = p.Rate
		}
		p = audio.Resample(p, rate)
		if n := int(u.Duration.Seconds() * float64(rate)); n < len(p.Samples) {
			p.Samples = p.Samples[:n]
		}
		tracks = append(tracks, struct {
			at  int
			pcm audio.PCM
		}{int(u.Start.Sub(t0).Seconds() * float64(rate)), p})
	}
	n := 0
	for _, tr := range tracks {
		n = max(n, tr.at+len(tr.pcm.Samples))
	}
	mix := make([]int32, n)
	for _, tr := range tracks {
		for i, s := range tr.pcm.Samples {
			mix[tr.at+i] += int32(s)
		}
	}
	pcm := audio.PCM{Rate: rate, Samples: make([]int16, n)}
	for i, s := range mix {
		pcm.Samples[i] = int16(max(-32768, min(32767, s)))
	}
	if err := os.WriteFile(out, audio.EncodeWAV(pcm), 0o644); err != nil {
		return fmt.Errorf("timeline: %w", err)
	}
	return nil
}
