package vad

import (
	"math"
	"time"

	"github.com/chorus-robotics/chorus/drivers/mic"
)

// Segmenter defaults.
const (
	DefaultPreRoll   = 300 * time.Millisecond
	DefaultMinLength = 300 * time.Millisecond
	DefaultMaxLength = 15 * time.Second
)

// The hangover is the silence that ends an utterance (Segmenter.Hangover,
// a config's hearing.vad.hangover): DefaultHangover unless one is set,
// and a setting is held from MinHangover, below which a person's pause
// between two words ends what they say, to MaxHangover, beyond which the
// room waits seconds after the person stopped. Declared here alone: the
// ear's settings (device/ear), the benchmarks and their labels name these.
const (
	DefaultHangover = 500 * time.Millisecond
	MinHangover     = 100 * time.Millisecond
	MaxHangover     = 5 * time.Second
)

// Kind is what an Event says.
type Kind int

// Kinds of Event.
const (
	// Start: speech has gone on for MinLength. Frames are the pre-roll
	// and every frame since the speech began.
	Start Kind = iota + 1
	// Audio: one more frame of the utterance (the hangover's included).
	Audio
	// End: the speech stopped for Hangover. Start and End bound it;
	// PeakDBFS and RMSDBFS are its levels.
	End
	// Cut: the utterance reached MaxLength and ends here, as End; speech
	// that goes on starts a new utterance.
	Cut
	// Discard: a burst stopped before MinLength. No Start was sent for
	// it; Start and End bound it.
	Discard
)

func (k Kind) String() string {
	switch k {
	case Start:
		return "start"
	case Audio:
		return "audio"
	case End:
		return "end"
	case Cut:
		return "cut"
	case Discard:
		return "discard"
	}
	return "unknown"
}

// Event is a step of an utterance.
type Event struct {
	Kind Kind
	// Frames: Start's pre-roll and speech so far, or Audio's one frame.
	Frames []mic.Frame
	// Start and End bound the speech (End, Cut, Discard; Start for Start).
	Start, End time.Time
	// Levels of the speech in dBFS (End, Cut).
	PeakDBFS, RMSDBFS float64
}

// Segmenter turns frames into utterances. Its zero durations are the
// defaults. The audio it holds is bounded: the pre-roll, and the frames of
// a burst not yet MinLength long (at most MinLength plus Hangover).
//
// # Concurrency
//
// One goroutine calls Push and Reset.
type Segmenter struct {
	Detector Detector
	// PreRoll is kept before the detected start, so the first syllable
	// is kept.
	PreRoll time.Duration
	// Hangover is how long speech must stop for the utterance to end.
	Hangover time.Duration
	// MinLength: shorter bursts are discarded. MaxLength: utterances are
	// cut there.
	MinLength, MaxLength time.Duration

	state      int
	pre        []mic.Frame // idle: the last PreRoll of audio
	pend       []mic.Frame // pending: the burst so far
	start      time.Time   // first speech frame's start
	lastSpeech time.Time   // last speech frame's end
	last       time.Time   // the newest frame's end
	lv, tail   levels      // speech so far; frames since the last speech frame
	discarded  uint64
	cuts       uint64
}

const (
	idle = iota
	pending
	speaking
)

type levels struct {
	sum  float64
	n    int
	peak int32
}

func (l *levels) add(s []int16) {
	for _, x := range s {
		v := int32(x)
		if v < 0 {
			v = -v
		}
		l.peak = max(l.peak, v)
		l.sum += float64(x) * float64(x)
	}
	l.n += len(s)
}

func (l *levels) merge(o levels) {
	l.sum += o.sum
	l.n += o.n
	l.peak = max(l.peak, o.peak)
}

func dbfs(v float64) float64 {
	if v <= 0 {
		return silent
	}
	return max(silent, 20*math.Log10(v/32768))
}

func or(d, def time.Duration) time.Duration {
	if d > 0 {
		return d
	}
	return def
}

// Discarded is how many bursts were too short.
func (s *Segmenter) Discarded() uint64 { return s.discarded }

// Cuts is how many utterances were cut at MaxLength.
func (s *Segmenter) Cuts() uint64 { return s.cuts }

// Quiet is how long the speech of the utterance under way has stopped,
// as of the newest frame: 0 while the person speaks or no utterance is
// under way (an utterance ends when it reaches Hangover).
func (s *Segmenter) Quiet() time.Duration {
	if s.state != speaking {
		return 0
	}
	return s.last.Sub(s.lastSpeech)
}

// Pending is when the burst under way began, while it is not yet
// MinLength long (no Start sent yet for it).
func (s *Segmenter) Pending() (start time.Time, ok bool) {
	return s.start, s.state == pending
}

// Reset throws the current utterance and the pre-roll away (a robot of
// the room starts speaking: docs/hearing.md's gating rule); no event is sent for
// it. The detector keeps its noise floor.
func (s *Segmenter) Reset() {
	clear(s.pre)
	clear(s.pend)
	s.pre, s.pend = s.pre[:0], s.pend[:0]
	s.state = idle
}

// Push takes the next frame and returns what it completes.
func (s *Segmenter) Push(f mic.Frame) []Event {
	speech := s.Detector.IsSpeech(f.Samples)
	end := f.End()
	s.last = end
	switch s.state {
	case idle:
		if !speech {
			s.keep(f)
			return nil
		}
		s.state, s.start, s.lastSpeech = pending, f.At, end
		s.lv, s.tail = levels{}, levels{}
		s.lv.add(f.Samples)
		s.pend = append(s.pend[:0], f)
		return s.promote()
	case pending:
		s.pend = append(s.pend, f)
		s.account(f, speech)
		if ev := s.promote(); ev != nil {
			return ev
		}
		if !speech && end.Sub(s.lastSpeech) >= or(s.Hangover, DefaultHangover) {
			s.discarded++
			ev := []Event{{Kind: Discard, Start: s.start, End: s.lastSpeech}}
			for _, p := range s.pend {
				s.keep(p)
			}
			clear(s.pend)
			s.pend, s.state = s.pend[:0], idle
			return ev
		}
		return nil
	}
	// speaking
	s.account(f, speech)
	ev := []Event{{Kind: Audio, Frames: []mic.Frame{f}}}
	switch {
	case end.Sub(s.start) >= or(s.MaxLength, DefaultMaxLength):
		s.cuts++
		s.lv.merge(s.tail)
		ev = append(ev, s.finish(Cut, end))
	case !speech && end.Sub(s.lastSpeech) >= or(s.Hangover, DefaultHangover):
		ev = append(ev, s.finish(End, s.lastSpeech))
	}
	return ev
}

func (s *Segmenter) account(f mic.Frame, speech bool) {
	s.tail.add(f.Samples)
	if speech {
		s.lastSpeech = f.End()
		s.lv.merge(s.tail)
		s.tail = levels{}
	}
}

// promote sends Start once the burst is MinLength long.
func (s *Segmenter) promote() []Event {
	if s.lastSpeech.Sub(s.start) < or(s.MinLength, DefaultMinLength) {
		return nil
	}
	frames := make([]mic.Frame, 0, len(s.pre)+len(s.pend))
	frames = append(append(frames, s.pre...), s.pend...)
	clear(s.pre)
	clear(s.pend)
	s.pre, s.pend, s.state = s.pre[:0], s.pend[:0], speaking
	return []Event{{Kind: Start, Frames: frames, Start: s.start}}
}

func (s *Segmenter) finish(k Kind, end time.Time) Event {
	s.state = idle
	var rms float64
	if s.lv.n > 0 {
		rms = math.Sqrt(s.lv.sum / float64(s.lv.n))
	}
	return Event{Kind: k, Start: s.start, End: end, PeakDBFS: dbfs(float64(s.lv.peak)), RMSDBFS: dbfs(rms)}
}

// keep adds f to the pre-roll, dropping what is older than PreRoll.
func (s *Segmenter) keep(f mic.Frame) {
	s.pre = append(s.pre, f)
	preRoll := or(s.PreRoll, DefaultPreRoll)
	var total time.Duration
	for _, p := range s.pre {
		total += p.Duration()
	}
	drop := 0
	for drop < len(s.pre)-1 && total-s.pre[drop].Duration() >= preRoll {
		total -= s.pre[drop].Duration()
		drop++
	}
	if drop > 0 {
		n := copy(s.pre, s.pre[drop:])
		clear(s.pre[n:])
		s.pre = s.pre[:n]
	}
}
