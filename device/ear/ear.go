package ear

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"strings"
	"sync"
	"time"

	"github.com/chorus-robotics/chorus/drivers/mic"
	"github.com/chorus-robotics/chorus/drivers/stt"
	"github.com/chorus-robotics/chorus/drivers/vad"
	"github.com/chorus-robotics/chorus/runtime/bus"
	"github.com/chorus-robotics/chorus/runtime/metrics"
	"github.com/chorus-robotics/chorus/runtime/protocol"
	"github.com/chorus-robotics/chorus/runtime/room"
)

// Frames is where the ear's audio comes from: a mic.Capture.
type Frames interface {
	Next(ctx context.Context) (mic.Frame, error)
}

// DefaultInFlight is how many finished utterances may wait for their
// transcripts at once: a person who speaks again while the engine still
// works on the last sentence is heard; a flood is not.
const DefaultInFlight = 2

// Config configures an Ear.
type Config struct {
	Room   *room.Room // the room the robot reports to, with its roster
	ID     string     // the robot's companion id: reports go out under it
	Device string     // the body's id, in the reports
	Frames Frames
	// Segmenter cuts the audio into utterances; it is the ear's own.
	Segmenter *vad.Segmenter
	STT       stt.Engine
	Gate      *Gate
	// Timeout bounds one transcript after the person stopped.
	Timeout  time.Duration
	InFlight int // default DefaultInFlight
	// OnHeard, if set, is told of every utterance the ear started on:
	// its report and "reported", or why not ("gated", "muted", "empty",
	// "stt_error", "busy", "publish_failed", "stopped") with an empty
	// Text. It must not block.
	OnHeard func(h protocol.Heard, outcome string)
}

// Ear hears a robot's room through its microphone and reports what people
// say (DESIGN.md, "Hearing").
//
// # Concurrency
//
// Run owns the capture loop; each finished utterance waits for its
// transcript on a goroutine of its own (at most InFlight at once), which
// Run waits for before it returns. Reports go out through an outbox: the
// ear never waits on the network for the room.
type Ear struct {
	cfg Config
	log *slog.Logger
	m   *metrics.Metrics
	out *bus.Outbox

	// owned by Run
	sess  stt.Session
	rate  int
	slots chan struct{}
	wg    sync.WaitGroup
}

// New checks cfg and returns an Ear; Run starts it.
func New(cfg Config) (*Ear, error) {
	switch {
	case cfg.Room == nil:
		return nil, errors.New("hearing: no room")
	case cfg.Frames == nil:
		return nil, errors.New("hearing: no microphone")
	case cfg.Segmenter == nil:
		return nil, errors.New("hearing: no voice activity detector")
	case cfg.STT == nil:
		return nil, errors.New("hearing: no speech-to-text engine")
	case cfg.Gate == nil:
		return nil, errors.New("hearing: no gate")
	}
	if why := protocol.ValidIdentity(cfg.ID); why != "" {
		return nil, fmt.Errorf("hearing: companion id %q: %s", cfg.ID, why)
	}
	if cfg.Device == "" {
		cfg.Device = cfg.ID
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = 10 * time.Second
	}
	if cfg.InFlight <= 0 {
		cfg.InFlight = DefaultInFlight
	}
	log := cfg.Room.Log.With("hearing", cfg.ID, "stt", cfg.STT.Name())
	m := cfg.Room.Metrics
	return &Ear{cfg: cfg, log: log, m: m, slots: make(chan struct{}, cfg.InFlight),
		out: &bus.Outbox{Bus: cfg.Room.Bus, Log: log, Timeout: 10 * time.Second,
			OnDrop: func(string, error) { m.Hearing.WithLabelValues("publish_failed").Inc() }},
	}, nil
}

// Run follows the room's speaking status (the gate) and hears until ctx
// ends or the microphone stops for good.
func (e *Ear) Run(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	var outDone sync.WaitGroup
	outDone.Add(1)
	go func() { defer outDone.Done(); e.out.Run(ctx) }()
	defer outDone.Wait()
	defer cancel()
	defer e.wg.Wait() // transcripts under way end with ctx
	if err := e.cfg.Room.OnSpeaking(ctx, func(ev room.SpeakingEvent) { e.cfg.Gate.Voice(ev, time.Now()) }); err != nil {
		return fmt.Errorf("hearing: subscribe: %w", err)
	}
	defer e.abort("stopped")
	for {
		f, err := e.cfg.Frames.Next(ctx)
		if err != nil {
			if ctx.Err() != nil || errors.Is(err, mic.ErrStopped) {
				return nil
			}
			e.m.Hearing.WithLabelValues("mic_error").Inc()
			e.log.Warn("microphone", "err", err)
			continue
		}
		if f.Dropped > 0 {
			// The loop fell behind: what it missed breaks an utterance.
			e.m.Hearing.WithLabelValues("mic_dropped_frames").Add(float64(f.Dropped))
			e.abort("frames dropped")
			e.cfg.Segmenter.Reset()
		}
		if closed, why := e.cfg.Gate.Closed(f.At); closed {
			if e.abort(why) {
				e.m.Hearing.WithLabelValues(gatedLabel(why)).Inc()
				e.tell(protocol.Heard{}, gatedLabel(why))
				e.log.Info("utterance dropped: the room is not listening", "why", why)
			}
			e.cfg.Segmenter.Reset()
			continue
		}
		for _, ev := range e.cfg.Segmenter.Push(f) {
			e.handle(ctx, ev)
		}
	}
}

func gatedLabel(why string) string {
	if why == "muted" {
		return "muted"
	}
	return "gated"
}

func (e *Ear) handle(ctx context.Context, ev vad.Event) {
	switch ev.Kind {
	case vad.Start:
		e.m.Hearing.WithLabelValues("utterance").Inc()
		if len(ev.Frames) > 0 {
			e.rate = ev.Frames[0].Rate
		}
		sess, err := e.cfg.STT.Start(ctx, e.rate)
		if err != nil {
			e.m.Hearing.WithLabelValues("stt_error").Inc()
			e.tell(protocol.Heard{}, "stt_error")
			e.log.Warn("speech to text did not start: the utterance is not heard", "err", err)
			return
		}
		e.sess = sess
		e.write(ev.Frames)
	case vad.Audio:
		e.write(ev.Frames)
	case vad.End, vad.Cut:
		if ev.Kind == vad.Cut {
			e.m.Hearing.WithLabelValues("cut").Inc()
		}
		sess := e.sess
		e.sess = nil
		if sess == nil {
			return
		}
		select {
		case e.slots <- struct{}{}:
		default:
			sess.Abort()
			e.m.Hearing.WithLabelValues("busy").Inc()
			e.tell(protocol.Heard{}, "busy")
			e.log.Warn("utterance dropped: the speech-to-text engine still works on earlier ones", "in_flight", e.cfg.InFlight)
			return
		}
		e.wg.Add(1)
		go func() {
			defer e.wg.Done()
			defer func() { <-e.slots }()
			e.finish(ctx, sess, ev)
		}()
	case vad.Discard:
		e.m.Hearing.WithLabelValues("too_short").Inc()
	}
}

func (e *Ear) write(frames []mic.Frame) {
	if e.sess == nil {
		return
	}
	for _, f := range frames {
		if err := e.sess.Write(f.Samples); err != nil {
			e.m.Hearing.WithLabelValues("stt_error").Inc()
			e.tell(protocol.Heard{}, "stt_error")
			e.log.Warn("speech to text failed while the person spoke", "err", err)
			e.sess.Abort()
			e.sess = nil
			return
		}
	}
}

// abort drops the utterance under way, if any.
func (e *Ear) abort(why string) bool {
	if e.sess == nil {
		return false
	}
	e.sess.Abort()
	e.sess = nil
	return true
}

// finish waits for the transcript and reports it.
func (e *Ear) finish(ctx context.Context, sess stt.Session, ev vad.Event) {
	ctx, cancel := context.WithTimeout(ctx, e.cfg.Timeout)
	defer cancel()
	h := protocol.Heard{From: e.cfg.ID, ID: protocol.NewID(), Device: e.cfg.Device, Start: ev.Start, End: ev.End,
		Level: max(protocol.MinLevel, min(0, ev.RMSDBFS))}
	if math.IsNaN(h.Level) {
		h.Level = protocol.MinLevel
	}
	tr, err := sess.Finish(ctx)
	outcome := "reported"
	switch {
	case errors.Is(err, stt.ErrEmpty) || (err == nil && strings.TrimSpace(tr.Text) == ""):
		outcome = "empty"
	case errors.Is(err, stt.ErrAborted) && ctx.Err() != nil:
		outcome = "stopped"
	case err != nil:
		outcome = "stt_error"
		e.log.Warn("speech to text failed", "err", err)
	default:
		h.Text = clip(strings.TrimSpace(strings.ToValidUTF8(tr.Text, "")), protocol.MaxHeardText)
		h.Confidence = tr.Confidence
		if h.Confidence != protocol.NoConfidence && (h.Confidence < 0 || h.Confidence > 1 || math.IsNaN(h.Confidence)) {
			h.Confidence = protocol.NoConfidence
		}
		if err := e.cfg.Room.QueueHeard(e.out, h); err != nil {
			outcome = "publish_failed"
			e.log.Warn("heard report not queued", "err", err)
		} else {
			e.m.HearingDelay.Observe(time.Since(ev.End).Seconds())
			e.log.Info("heard", "text", h.Text, "confidence", h.Confidence, "level", fmt.Sprintf("%.1f", h.Level),
				"took", time.Since(ev.End).Round(time.Millisecond))
		}
	}
	e.m.Hearing.WithLabelValues(outcome).Inc()
	if outcome != "reported" {
		h.Text = ""
	}
	e.tell(h, outcome)
}

// tell hands OnHeard what became of an utterance.
func (e *Ear) tell(h protocol.Heard, outcome string) {
	if e.cfg.OnHeard != nil {
		e.cfg.OnHeard(h, outcome)
	}
}

// clip cuts s to at most n characters.
func clip(s string, n int) string {
	i := 0
	for j := range s {
		if i == n {
			return s[:j]
		}
		i++
	}
	return s
}
