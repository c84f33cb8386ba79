package vad

import (
	"strings"
	"testing"
	"time"

	"github.com/chorus-robotics/chorus/drivers/audio"
	"github.com/chorus-robotics/chorus/drivers/mic"
	"github.com/chorus-robotics/chorus/drivers/mic/mictest"
)

// run pushes every frame and returns the events, with the Audio ones
// counted rather than kept.
func run(s *Segmenter, fs []mic.Frame) (evs []Event, audioFrames int) {
	for _, f := range fs {
		for _, e := range s.Push(f) {
			if e.Kind == Audio {
				audioFrames++
				continue
			}
			evs = append(evs, e)
		}
	}
	return evs, audioFrames
}

func kinds(evs []Event) string {
	var k []string
	for _, e := range evs {
		k = append(k, e.Kind.String())
	}
	return strings.Join(k, " ")
}

func near(t *testing.T, what string, got, want time.Time, tol time.Duration) {
	t.Helper()
	if d := got.Sub(want); d < -tol || d > tol {
		t.Fatalf("%s at +%v, want +%v (±%v)", what, got.Sub(t0), want.Sub(t0), tol)
	}
}

func newSeg() *Segmenter { return &Segmenter{Detector: NewEnergy(rate, LowBitrate)} }

func TestSegmenter(t *testing.T) {
	sec := time.Second
	ms := time.Millisecond
	for _, c := range []struct {
		name   string
		signal []int16
		want   string
	}{
		{"silence", silence(5 * sec), ""},
		{"a click is discarded", cat(silence(sec), speechLike(100*ms, -20, 1), silence(2*sec)), "discard"},
		{"one utterance", cat(silence(sec), speechLike(2*sec, -25, 2), silence(2*sec)), "start end"},
		{"two, apart", cat(silence(sec), speechLike(sec, -25, 3), silence(2*sec), speechLike(sec, -25, 4), silence(2*sec)), "start end start end"},
		{"a pause shorter than the hangover is one", cat(silence(sec), speechLike(sec, -25, 5), silence(300*ms), speechLike(sec, -25, 6), silence(2*sec)), "start end"},
		{"speech past the maximum is cut", cat(silence(sec), speechLike(20*sec, -25, 7), silence(2*sec)), "start cut start end"},
	} {
		t.Run(c.name, func(t *testing.T) {
			evs, _ := run(newSeg(), frames(c.signal))
			if got := kinds(evs); got != c.want {
				t.Fatalf("events %q, want %q", got, c.want)
			}
		})
	}
}

// Start carries the pre-roll and comes after MinLength of speech; every
// frame from the pre-roll on reaches the consumer once; End bounds the
// speech and gives its levels.
func TestUtteranceShape(t *testing.T) {
	sig := cat(silence(time.Second), speechLike(2*time.Second, -25, 2), silence(2*time.Second))
	s := newSeg()
	var start, end *Event
	seqs := map[uint64]int{}
	for _, f := range frames(sig) {
		for _, e := range s.Push(f) {
			switch e.Kind {
			case Start:
				e := e
				start = &e
				near(t, "start sent", f.End(), e.Start.Add(DefaultMinLength), 60*time.Millisecond)
			case End:
				e := e
				end = &e
			}
			for _, g := range e.Frames {
				seqs[g.Seq]++
			}
		}
	}
	if start == nil || end == nil {
		t.Fatal("no utterance")
	}
	near(t, "start", start.Start, t0.Add(time.Second), 60*time.Millisecond)
	near(t, "pre-roll", start.Frames[0].At, start.Start.Add(-DefaultPreRoll), 20*time.Millisecond)
	near(t, "end", end.End, t0.Add(3*time.Second), 150*time.Millisecond)
	first, last := start.Frames[0].Seq, start.Frames[0].Seq+uint64(len(seqs))-1
	for q := first; q <= last; q++ {
		if seqs[q] != 1 {
			t.Fatalf("frame %d sent %d times", q, seqs[q])
		}
	}
	if end.RMSDBFS < -35 || end.RMSDBFS > -20 || end.PeakDBFS < end.RMSDBFS || end.PeakDBFS > 0 {
		t.Fatalf("levels: peak %.1f, rms %.1f dBFS", end.PeakDBFS, end.RMSDBFS)
	}
}

// Reset throws the utterance away: no End, and speech after it starts a
// new one.
func TestReset(t *testing.T) {
	fs := frames(cat(silence(time.Second), speechLike(sec(3), -25, 3), silence(2*time.Second)))
	s := newSeg()
	evs, _ := run(s, fs[:100]) // 1 s of silence, 1 s of speech
	if kinds(evs) != "start" {
		t.Fatalf("before the reset: %q", kinds(evs))
	}
	s.Reset()
	evs, _ = run(s, fs[100:])
	if kinds(evs) != "start end" {
		t.Fatalf("after the reset: %q", kinds(evs))
	}
	near(t, "new start", evs[0].Start, fs[100].At, 100*time.Millisecond)
	if len(evs[0].Frames) > 1+int((DefaultMinLength+100*time.Millisecond)/mic.FrameDuration) {
		t.Fatalf("the new start carries %d frames: the old pre-roll?", len(evs[0].Frames))
	}
}

func sec(n int) time.Duration { return time.Duration(n) * time.Second }

// One hour of quiet room noise, fed as fast as it computes: no event, and
// the segmenter holds no more than its pre-roll.
func TestAnHourOfSilence(t *testing.T) {
	pool := frames(noise(time.Second, -65, 13))
	s := newSeg()
	for i := range 3600 * 50 {
		f := pool[i%len(pool)]
		f.At = t0.Add(time.Duration(i) * mic.FrameDuration)
		if evs := s.Push(f); len(evs) != 0 {
			t.Fatalf("%v at +%v", evs[0].Kind, f.At.Sub(t0))
		}
	}
	if len(s.pre) > 15 || cap(s.pre) > 32 || len(s.pend) != 0 {
		t.Fatalf("holds %d frames of pre-roll (cap %d), %d pending", len(s.pre), cap(s.pre), len(s.pend))
	}
}

// A ten-minute monologue is cut at the maximum again and again; what the
// segmenter holds stays bounded.
func TestATenMinuteMonologue(t *testing.T) {
	pool := frames(speechLike(10*time.Second, -25, 14))
	s := newSeg()
	cuts, maxHeld := 0, 0
	for i := range 600 * 50 {
		f := pool[i%len(pool)]
		f.At = t0.Add(time.Duration(i) * mic.FrameDuration)
		for _, e := range s.Push(f) {
			if e.Kind == Cut {
				cuts++
				if d := e.End.Sub(e.Start); d < DefaultMaxLength || d > DefaultMaxLength+mic.FrameDuration {
					t.Fatalf("cut after %v", d)
				}
			}
			if e.Kind == End || e.Kind == Discard {
				t.Fatalf("%v in a monologue at +%v", e.Kind, f.At.Sub(t0))
			}
		}
		maxHeld = max(maxHeld, len(s.pre)+len(s.pend))
	}
	if cuts < 38 || cuts > 40 || s.Cuts() != uint64(cuts) {
		t.Fatalf("%d cuts in 10 minutes, want ~39", cuts)
	}
	if maxHeld > int((DefaultMinLength+DefaultHangover+DefaultPreRoll)/mic.FrameDuration)+2 {
		t.Fatalf("held up to %d frames", maxHeld)
	}
}

// Real speech: espeak-ng says a sentence, resampled to 16 kHz, with a
// second and a half of quiet room noise around it. Exactly one utterance,
// whose start and end are within 150 ms of the speech.
func TestEspeakSentence(t *testing.T) {
	p := audio.PCM{Samples: mictest.Speech(t, "", "Hello robots, what is the weather like today?"), Rate: rate}
	// Where the speech is: from the first to the last sample above -30 dBFS.
	first, last := -1, -1
	for i, x := range p.Samples {
		if x > 1000 || x < -1000 {
			if first < 0 {
				first = i
			}
			last = i
		}
	}
	pad := 1500 * time.Millisecond
	sig := add(noise(2*pad+p.Duration(), -65, 15), cat(silence(pad), p.Samples))
	evs, n := run(newSeg(), frames(sig))
	if kinds(evs) != "start end" {
		t.Fatalf("events %q, want one utterance", kinds(evs))
	}
	speechStart := t0.Add(pad + time.Duration(first)*time.Second/rate)
	speechEnd := t0.Add(pad + time.Duration(last)*time.Second/rate)
	near(t, "start", evs[1].Start, speechStart, 150*time.Millisecond)
	near(t, "end", evs[1].End, speechEnd, 150*time.Millisecond)
	t.Logf("speech %v-%v, heard %v-%v, %d audio frames, peak %.1f rms %.1f dBFS", speechStart.Sub(t0), speechEnd.Sub(t0),
		evs[1].Start.Sub(t0), evs[1].End.Sub(t0), n, evs[1].PeakDBFS, evs[1].RMSDBFS)
}

// Quiet grows through a pause inside an utterance, is 0 again when the
// person goes on, and 0 outside an utterance.
func TestQuiet(t *testing.T) {
	ms := time.Millisecond
	fs := frames(cat(silence(time.Second), speechLike(sec(1), -25, 8), silence(300*ms), speechLike(sec(1), -25, 9), silence(2*time.Second)))
	s := newSeg()
	var most time.Duration
	resumed, ended := false, false
	for _, f := range fs {
		evs := s.Push(f)
		for _, e := range evs {
			if e.Kind == End {
				ended = true
			}
		}
		q := s.Quiet()
		switch {
		case ended && q != 0:
			t.Fatalf("quiet %v after the utterance ended", q)
		case !ended && f.At.Before(t0.Add(2300*ms)) && f.At.After(t0.Add(2100*ms)):
			most = max(most, q)
		case f.At.After(t0.Add(2500*ms)) && f.At.Before(t0.Add(3*time.Second)):
			resumed = resumed || q == 0
		}
		if f.At.Before(t0.Add(900*ms)) && q != 0 {
			t.Fatalf("quiet %v before anyone spoke", q)
		}
	}
	if most < 100*ms || most > 320*ms {
		t.Fatalf("quiet in the 300 ms pause reached %v", most)
	}
	if !resumed || !ended {
		t.Fatalf("resumed %v, ended %v", resumed, ended)
	}
}
