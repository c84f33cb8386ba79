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
	"github.com/chorus-robotics/chorus/drivers/wake"
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
	// EndOfTurn, if set, says how long a pause ends an utterance from its
	// words so far (runtime/endofturn): the ear asks it at each newer
	// hypothesis an engine that gives them (stt.Partials) hands over, and
	// holds the segmenter's hangover to its answer for the rest of that
	// utterance, or until a newer hypothesis.
	EndOfTurn Judge
	// Eager, if above 0, is the pause after which the ear tells the room
	// the words so far, as a tentative report, when the engine gives
	// hypotheses and the words do not promise more (eager.go); 0 never.
	Eager time.Duration
	STT   stt.Engine
	Gate  *Gate
	// Wake, if set, is a wake-word detector: the ear then hears the room
	// only for ListenFor after a wake word (its audio goes to speech to
	// text only then), and reports each wake word heard — also while a
	// robot speaks, which barges in on it (docs/hearing.md).
	Wake      wake.Detector
	ListenFor time.Duration // default DefaultListenFor
	// Timeout bounds one transcript after the person stopped.
	Timeout  time.Duration
	InFlight int // default DefaultInFlight
	// OnHeard, if set, is told of every utterance the ear started on:
	// its report and "reported", or why not ("gated", "muted", "empty",
	// "stt_error", "busy", "publish_failed", "stopped") with an empty
	// Text. It must not block.
	OnHeard func(h protocol.Heard, outcome string)
	// OnListening, if set, is told when the ear starts streaming a
	// person's words to speech to text (true) and when that utterance is
	// over, heard or not (false): Home Assistant's "listening". It must
	// not block.
	OnListening func(bool)
	// Voice, if set, says whose voice each utterance is (voice.go).
	Voice *Voice
}

// Judge says how long a pause after a person's words so far ends what
// they say (runtime/endofturn's Waits; a model-based detector later).
type Judge interface {
	Pause(text string) time.Duration
}

// Ear hears a robot's room through its microphone and reports what people
// say (docs/hearing.md).
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
	sess    stt.Session
	utt     string             // the utterance under way's id, once its session started (its open report went out)
	uttFrom time.Time          // when the utterance under way began
	hyps    <-chan stt.Partial // the session's hypotheses, from an engine that gives them
	said    string             // the newest hypothesis of the utterance under way
	saidAt  time.Time          // when it came (capture time)
	told    string             // the words of the tentative report standing, if any
	shown   string             // the words of the last partial report (caption)
	shownAt time.Time          // when it went out
	pause   time.Duration      // the segmenter's own hangover, between utterances
	rate    int
	audio   []int16     // the utterance's audio, for its speaker embedding (Voice): bounded by maxVoiceAudio
	inUtt   bool        // an utterance is under way
	pending []mic.Frame // its audio while the room is not listening (wake mode): bounded by the VAD's maximum
	now     time.Time   // the capture time of the newest frame
	slots   chan struct{}
	wg      sync.WaitGroup

	wl          wake.Listener
	wakeRetry   time.Time
	wakeBackoff time.Duration
	listenUntil time.Time
	droppedLog  time.Time
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
		cfg.Timeout = DefaultTimeout
	}
	if cfg.InFlight <= 0 {
		cfg.InFlight = DefaultInFlight
	}
	if cfg.ListenFor <= 0 {
		cfg.ListenFor = DefaultListenFor
	}
	if v := cfg.Voice; v != nil {
		if v.Embedder == nil || v.Prints == nil {
			return nil, errors.New("hearing: a voice identifier needs its embedding service and the voiceprints")
		}
		v.defaults()
	}
	if cfg.Segmenter.Hangover <= 0 {
		cfg.Segmenter.Hangover = vad.DefaultHangover // as the segmenter reads it: the words' pauses are weighed against it
	}
	log := cfg.Room.Log.With("hearing", cfg.ID, "stt", cfg.STT.Name())
	m := cfg.Room.Metrics
	return &Ear{cfg: cfg, log: log, m: m, slots: make(chan struct{}, cfg.InFlight), pause: cfg.Segmenter.Hangover,
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
	defer e.closeWake()
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
		e.now = f.At
		if e.cfg.Wake != nil && !e.muted() {
			e.listenWake(ctx, f)
		}
		if f.Dropped > 0 {
			// The loop fell behind: what it missed breaks an utterance.
			// A microphone that delivers much faster than real time (a
			// program writing a file, not a live device) does this all
			// the time: said once a minute.
			if f.At.Sub(e.droppedLog) > time.Minute {
				e.droppedLog = f.At
				e.log.Warn("the ear falls behind its microphone: frames dropped (a microphone faster than real time is not a live one)",
					"dropped", f.Dropped)
			}
			e.abort("frames dropped")
			e.cfg.Segmenter.Reset()
		}
		var since time.Time // a person's utterance being transcribed is heard through a robot that starts over it
		if e.sess != nil {
			since = e.uttFrom
		}
		if closed, why := e.cfg.Gate.Closed(f.At, since); closed {
			if e.abort(why) {
				e.m.Hearing.WithLabelValues(gatedLabel(why)).Inc()
				e.tell(protocol.Heard{}, gatedLabel(why))
				e.log.Info("utterance dropped: the room is not listening", "why", why)
			}
			e.cfg.Segmenter.Reset()
			continue
		}
		e.hypothesis()
		for _, ev := range e.cfg.Segmenter.Push(f) {
			e.handle(ctx, ev)
		}
		e.onset()
		e.caption()
		e.eager()
	}
}

func gatedLabel(why string) string {
	if why == "muted" {
		return "muted"
	}
	return "gated"
}

func (e *Ear) muted() bool { return e.cfg.Gate.Muted != nil && e.cfg.Gate.Muted() }

// awake reports whether the room listens now: always without a wake
// word, else for ListenFor after one.
func (e *Ear) awake() bool { return e.cfg.Wake == nil || !e.now.After(e.listenUntil) }

func (e *Ear) handle(ctx context.Context, ev vad.Event) {
	switch ev.Kind {
	case vad.Start:
		e.m.Hearing.WithLabelValues("utterance").Inc()
		if len(ev.Frames) > 0 {
			e.rate = ev.Frames[0].Rate
		}
		e.inUtt, e.pending, e.uttFrom, e.audio = true, append(e.pending[:0], ev.Frames...), ev.Start, nil
		e.start(ctx)
	case vad.Audio:
		if e.sess != nil {
			e.write(ev.Frames)
		} else if e.inUtt {
			e.pending = append(e.pending, ev.Frames...)
			e.start(ctx)
		}
	case vad.End, vad.Cut:
		if ev.Kind == vad.Cut {
			e.m.Hearing.WithLabelValues("cut").Inc()
		}
		if e.inUtt && e.sess == nil {
			e.start(ctx) // a wake word in the last words of the utterance
		}
		sess, was, utt, pcm, rate := e.sess, e.inUtt, e.utt, e.audio, e.rate
		e.sess, e.inUtt, e.pending, e.utt, e.audio = nil, false, e.pending[:0], "", nil
		e.endOfTurn(nil)
		if sess != nil {
			e.listening(false)
		}
		if sess == nil {
			e.dropped(utt, ev.Start, ev.End)
			if was && e.cfg.Wake != nil && !e.awake() {
				e.m.Hearing.WithLabelValues("not_woken").Inc()
				e.tell(protocol.Heard{}, "not_woken")
			}
			return
		}
		select {
		case e.slots <- struct{}{}:
		default:
			sess.Abort()
			e.dropped(utt, ev.Start, ev.End)
			e.m.Hearing.WithLabelValues("busy").Inc()
			e.tell(protocol.Heard{}, "busy")
			e.log.Warn("utterance dropped: the speech-to-text engine still works on earlier ones", "in_flight", e.cfg.InFlight)
			return
		}
		e.wg.Add(1)
		go func() {
			defer e.wg.Done()
			defer func() { <-e.slots }()
			e.finish(ctx, sess, ev, utt, pcm, rate)
		}()
	case vad.Discard:
		e.m.Hearing.WithLabelValues("too_short").Inc()
		if e.sess == nil {
			e.dropped(e.utt, ev.Start, ev.End) // a cough, a door: the room was told someone began
			e.utt = ""
		}
	}
}

// start starts speech to text on the utterance under way once the room
// listens (at once without a wake word), with what was kept of it.
func (e *Ear) start(ctx context.Context) {
	if e.sess != nil || !e.inUtt || !e.awake() {
		return
	}
	sess, err := e.cfg.STT.Start(ctx, e.rate)
	if err != nil {
		e.m.Hearing.WithLabelValues("stt_error").Inc()
		e.tell(protocol.Heard{}, "stt_error")
		e.log.Warn("speech to text did not start: the utterance is not heard", "err", err)
		e.inUtt, e.pending = false, e.pending[:0]
		e.dropped(e.utt, e.uttFrom, e.now)
		e.utt = ""
		return
	}
	e.sess = sess
	if e.utt == "" { // not told at its onset (a wake word came during it)
		e.open()
	}
	if p, ok := sess.(stt.Partials); ok {
		e.endOfTurn(p.Partials())
	}
	e.listening(true)
	e.write(e.pending)
	e.pending = e.pending[:0]
}

func (e *Ear) write(frames []mic.Frame) {
	if e.sess == nil {
		return
	}
	for _, f := range frames {
		if e.cfg.Voice != nil && len(e.audio) < int(maxVoiceAudio.Seconds())*f.Rate {
			e.audio = append(e.audio, f.Samples...)
		}
		if err := e.sess.Write(f.Samples); err != nil {
			// The rest of this utterance is dropped with it: a new session
			// would hear only its tail and report that as the sentence.
			e.m.Hearing.WithLabelValues("stt_error").Inc()
			e.tell(protocol.Heard{}, "stt_error")
			e.log.Warn("speech to text failed while the person spoke; the sentence is not heard", "err", err)
			e.sess.Abort()
			e.dropped(e.utt, e.uttFrom, f.At)
			e.sess, e.inUtt, e.pending, e.utt = nil, false, e.pending[:0], ""
			e.endOfTurn(nil)
			return
		}
	}
}

// abort drops the utterance under way, if any.
func (e *Ear) abort(why string) bool {
	was := e.inUtt
	e.inUtt, e.pending, e.audio = false, e.pending[:0], nil
	if e.sess == nil {
		e.dropped(e.utt, e.uttFrom, e.now) // a burst told at its onset
		e.utt = ""
		return was && e.awake()
	}
	e.sess.Abort()
	e.dropped(e.utt, e.uttFrom, e.now)
	e.sess, e.utt = nil, ""
	e.endOfTurn(nil)
	e.listening(false)
	return true
}

// onset tells the room a person began speaking at the first frame of a
// burst, before the VAD takes it for an utterance (min_utterance later)
// and speech to text starts: a granted robot about to begin waits, one
// that has just begun yields (docs/hearing.md). A burst that comes to
// nothing (a cough) is then reported dropped.
func (e *Ear) onset() {
	if e.utt != "" || !e.awake() {
		return
	}
	if start, ok := e.cfg.Segmenter.Pending(); ok {
		e.uttFrom = start
		e.open()
	}
}

// open tells the room the utterance from e.uttFrom is under way, under a
// new id.
func (e *Ear) open() {
	e.utt = protocol.NewID()
	e.report(protocol.Heard{Start: e.uttFrom, End: e.uttFrom, Level: protocol.MinLevel, Utterance: e.utt, State: protocol.HeardOpen})
}

// report queues a report of this robot's on the utterance (its open or
// dropped state; a transcript goes out in finish).
func (e *Ear) report(h protocol.Heard) {
	h.From, h.ID, h.Device, h.Confidence = e.cfg.ID, protocol.NewID(), e.cfg.Device, protocol.NoConfidence
	if err := e.cfg.Room.QueueHeard(e.out, h); err != nil {
		e.log.Warn("heard report not queued", "state", h.State, "err", err)
	}
}

// dropped says the room that utterance utt, whose open report went out,
// ended without a transcript: nobody waits for it any longer.
func (e *Ear) dropped(utt string, start, end time.Time) {
	if utt == "" {
		return
	}
	if end.Before(start) {
		end = start
	}
	e.report(protocol.Heard{Start: start, End: end, Level: protocol.MinLevel, Utterance: utt, State: protocol.HeardDropped})
}

// endOfTurn follows the hypotheses of a new utterance's session (nil: no
// more), with the segmenter's own hangover until the first.
func (e *Ear) endOfTurn(hyps <-chan stt.Partial) {
	e.hyps, e.said, e.told, e.shown = hyps, "", "", ""
	e.cfg.Segmenter.Hangover = e.pause
}

// hypothesis takes the newest hypothesis of the utterance under way, if a
// newer one came, and holds the silence that ends the utterance to what
// its words say: longer after "and" or "um", sooner after a question
// asked in full.
func (e *Ear) hypothesis() {
	if e.hyps == nil {
		return
	}
	select {
	case h, ok := <-e.hyps:
		if !ok {
			e.hyps = nil
			return
		}
		e.said, e.saidAt = h.Text, e.now
		if e.cfg.EndOfTurn == nil {
			return
		}
		pause := e.cfg.EndOfTurn.Pause(h.Text)
		if pause != e.cfg.Segmenter.Hangover {
			e.log.Debug("end of turn: the words so far change the pause that ends the utterance", "so_far", h.Text, "pause", pause)
		}
		e.cfg.Segmenter.Hangover = pause
	default:
	}
}

func (e *Ear) listening(on bool) {
	if e.cfg.OnListening != nil {
		e.cfg.OnListening(on)
	}
}

// listenWake keeps a wake-word listener open (again after a failure, with
// backoff), hands it the frame and takes what it heard: a wake word opens
// the room's ears for ListenFor and is reported to the room, where it
// barges in on a robot that speaks.
func (e *Ear) listenWake(ctx context.Context, f mic.Frame) {
	if e.wl == nil {
		if f.At.Before(e.wakeRetry) {
			return
		}
		l, err := e.cfg.Wake.Listen(ctx, f.Rate)
		if err != nil {
			e.wakeFailed(f.At, err)
			return
		}
		e.wl, e.wakeBackoff = l, 0
		e.log.Info("listening for the wake word", "detector", e.cfg.Wake.Name())
	}
	if err := e.wl.Write(f.Samples); err != nil {
		e.wakeFailed(f.At, err)
		return
	}
	for {
		select {
		case d, ok := <-e.wl.Detections():
			if !ok {
				e.wakeFailed(f.At, e.wl.Err())
				return
			}
			e.woke(d, f)
		default:
			return
		}
	}
}

func (e *Ear) wakeFailed(at time.Time, err error) {
	e.closeWake()
	e.wakeBackoff = min(max(2*e.wakeBackoff, time.Second), 30*time.Second)
	e.wakeRetry = at.Add(e.wakeBackoff)
	e.m.Hearing.WithLabelValues("wake_error").Inc()
	e.log.Warn("wake-word detector failed; the room is not woken until it is back", "err", err, "retry_in", e.wakeBackoff)
}

func (e *Ear) closeWake() {
	if e.wl != nil {
		e.wl.Close()
		e.wl = nil
	}
}

// woke opens the room's ears and reports the wake word.
func (e *Ear) woke(d wake.Detection, f mic.Frame) {
	e.listenUntil = f.End().Add(e.cfg.ListenFor)
	e.m.Hearing.WithLabelValues("wake").Inc()
	h := protocol.Heard{From: e.cfg.ID, ID: protocol.NewID(), Device: e.cfg.Device, Start: f.At.Add(-time.Second), End: f.End(),
		Text: clip(d.Name, protocol.MaxHeardText), Confidence: protocol.NoConfidence, Level: level(f.Samples), Wake: true}
	if err := e.cfg.Room.QueueHeard(e.out, h); err != nil {
		e.log.Warn("wake word not reported", "err", err)
	}
	e.log.Info("wake word", "name", d.Name, "listening_until", e.listenUntil.Format(time.TimeOnly))
	e.tell(h, "wake")
}

// level is the RMS of pcm in dBFS, within protocol's bounds.
func level(pcm []int16) float64 {
	var sum float64
	for _, s := range pcm {
		sum += float64(s) * float64(s)
	}
	if len(pcm) == 0 || sum == 0 {
		return protocol.MinLevel
	}
	return max(protocol.MinLevel, min(0, 20*math.Log10(math.Sqrt(sum/float64(len(pcm)))/32768)))
}

// finish waits for the transcript of utterance utt and reports it, or
// that it was dropped; with a Voice, the embedding of its audio pcm is
// asked for beside it, and the report says whose voice it is.
func (e *Ear) finish(ctx context.Context, sess stt.Session, ev vad.Event, utt string, pcm []int16, rate int) {
	ctx, cancel := context.WithTimeout(ctx, e.cfg.Timeout)
	defer cancel()
	var voice <-chan embedding
	if e.cfg.Voice != nil && len(pcm) > 0 {
		voice = e.embed(ctx, pcm, rate)
	}
	h := protocol.Heard{From: e.cfg.ID, ID: protocol.NewID(), Device: e.cfg.Device, Start: ev.Start, End: ev.End,
		Level: max(protocol.MinLevel, min(0, ev.RMSDBFS)), Utterance: utt}
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
	case errors.Is(err, stt.ErrRateLimited):
		outcome = "stt_rate_limited"
		e.log.Warn("speech to text is rate limited", "err", err)
	case err != nil:
		outcome = "stt_error"
		e.log.Warn("speech to text failed", "err", err)
	default:
		h.Text = clip(strings.TrimSpace(strings.ToValidUTF8(tr.Text, "")), protocol.MaxHeardText)
		h.Confidence = tr.Confidence
		if h.Confidence != protocol.NoConfidence && (h.Confidence < 0 || h.Confidence > 1 || math.IsNaN(h.Confidence)) {
			h.Confidence = protocol.NoConfidence
		}
		if e.cfg.Voice != nil {
			h.Voice = e.whose(voice, h.Text, ev.End)
		}
		if err := e.cfg.Room.QueueHeard(e.out, h); err != nil {
			outcome = "publish_failed"
			e.log.Warn("heard report not queued", "err", err)
		} else {
			e.m.HearingDelay.Observe(time.Since(ev.End).Seconds())
			e.log.Info("heard", "text", h.Text, "confidence", h.Confidence, "level", fmt.Sprintf("%.1f", h.Level),
				"voice", voiceOf(h.Voice), "took", time.Since(ev.End).Round(time.Millisecond))
		}
	}
	e.m.Hearing.WithLabelValues(outcome).Inc()
	if outcome != "reported" {
		e.dropped(utt, ev.Start, ev.End)
		h.Text = ""
		e.log.Info("utterance not reported", "why", outcome, "start", h.Start.Format("15:04:05.000"),
			"length", h.Duration().Round(time.Millisecond), "level", fmt.Sprintf("%.1f", h.Level))
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

// Counted wraps a microphone so that each failure to open or read it is
// counted (chorus_hearing_total{event="mic_error"}): a program that exits
// or a device that goes away is logged by the capture loop, which opens
// it again with backoff, and seen on /metrics.
func Counted(src mic.Source, m *metrics.Metrics) mic.Source { return countedSource{src, m} }

type countedSource struct {
	mic.Source
	m *metrics.Metrics
}

func (c countedSource) Open(ctx context.Context) error {
	err := c.Source.Open(ctx)
	if err != nil && ctx.Err() == nil {
		c.m.Hearing.WithLabelValues("mic_error").Inc()
	}
	return err
}

func (c countedSource) Read(ctx context.Context, buf []int16) (int, error) {
	n, err := c.Source.Read(ctx, buf)
	if err != nil && ctx.Err() == nil {
		c.m.Hearing.WithLabelValues("mic_error").Inc()
	}
	return n, err
}
