package ear

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/chorus-robotics/chorus/drivers/mic"
	mcommand "github.com/chorus-robotics/chorus/drivers/mic/command"
	"github.com/chorus-robotics/chorus/drivers/mic/file"
	"github.com/chorus-robotics/chorus/drivers/mic/mictest"
	"github.com/chorus-robotics/chorus/drivers/stt"
	"github.com/chorus-robotics/chorus/drivers/stt/pocketsphinx"
	"github.com/chorus-robotics/chorus/drivers/stt/stttest"
	"github.com/chorus-robotics/chorus/drivers/vad"
	"github.com/chorus-robotics/chorus/drivers/wake"
	"github.com/chorus-robotics/chorus/drivers/wake/waketest"
	"github.com/chorus-robotics/chorus/runtime/bus/bustest"
	"github.com/chorus-robotics/chorus/runtime/endofturn"
	"github.com/chorus-robotics/chorus/runtime/metrics"
	"github.com/chorus-robotics/chorus/runtime/protocol"
	"github.com/chorus-robotics/chorus/runtime/room"
	"github.com/chorus-robotics/chorus/runtime/topic"
)

const sentence = "hello robots, what is the weather like today?"

type earRig struct {
	t       testing.TB
	mem     *bustest.Memory
	s       topic.Scheme
	m       *metrics.Metrics
	engine  *stttest.Engine
	stt     stt.Engine      // instead of engine
	judge   Judge           // EndOfTurn
	pause   time.Duration   // the segmenter's hangover; 0 for its default
	eager   time.Duration   // Config.Eager
	onStart func(time.Time) // told when the audio starts playing
	wake    wake.Detector
	voice   *Voice
	started time.Time

	mu        sync.Mutex
	reports   []protocol.Heard // transcripts and wake words
	reportsAt []time.Time      // when each came
	states    []protocol.Heard // open and dropped reports
	statesAt  []time.Time      // when each came
	handled   []string
	listening []bool
}

// hear runs an ear on samples (played in real time from the microphone,
// then silence) until it has handled want utterances or the audio is
// over, and returns what the room received.
func newEarRig(t testing.TB) *earRig {
	return &earRig{t: t, mem: bustest.NewMemory(t), s: topic.New(""), m: metrics.New(),
		engine: &stttest.Engine{Transcript: stt.Transcript{Text: sentence, Confidence: 0.9}}}
}

func (r *earRig) run(samples []int16, silence time.Duration, during func(ctx context.Context, rm *room.Room)) {
	t := r.t
	obs := room.New(r.mem.NamedConn("observer", nil, nil), r.s, "lr", nil, nil)
	obs.SetMembers([]string{"kyoko", "hana"})
	if err := obs.OnHeard(context.Background(), func(h protocol.Heard) {
		r.mu.Lock()
		if h.State != "" {
			r.states = append(r.states, h)
			r.statesAt = append(r.statesAt, time.Now())
		} else {
			r.reports = append(r.reports, h)
			r.reportsAt = append(r.reportsAt, time.Now())
		}
		r.mu.Unlock()
	}); err != nil {
		t.Fatal(err)
	}
	rm := room.New(r.mem.NamedConn("kyoko", nil, nil), r.s, "lr", nil, r.m)
	rm.SetMembers([]string{"kyoko", "hana"})
	capture := &mic.Capture{Source: &file.Source{Samples: samples, SamplesRate: 16000, Silence: file.Forever}}
	seg := &vad.Segmenter{Detector: vad.NewEnergy(16000, vad.Aggressive), Hangover: r.pause}
	var engine stt.Engine = r.engine
	if r.stt != nil {
		engine = r.stt
	}
	ear, err := New(Config{Room: rm, ID: "kyoko", Device: "kyoko-body", Frames: capture, Segmenter: seg, STT: engine, EndOfTurn: r.judge, Eager: r.eager,
		Gate: &Gate{Self: "kyoko", Tail: 300 * time.Millisecond}, Wake: r.wake, Voice: r.voice,
		OnHeard: func(h protocol.Heard, outcome string) {
			r.mu.Lock()
			r.handled = append(r.handled, outcome)
			r.mu.Unlock()
		},
		OnListening: func(on bool) {
			r.mu.Lock()
			r.listening = append(r.listening, on)
			r.mu.Unlock()
		}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var wg sync.WaitGroup
	wg.Add(2)
	r.started = time.Now()
	if r.onStart != nil {
		r.onStart(r.started)
	}
	go func() { defer wg.Done(); capture.Run(ctx) }()
	go func() {
		defer wg.Done()
		if err := ear.Run(ctx); err != nil {
			t.Error(err)
		}
	}()
	if during != nil {
		during(ctx, obs)
	}
	// The audio plays, then silence; then the ear has its time to finish.
	time.Sleep(time.Until(r.started.Add(time.Duration(len(samples))*time.Second/16000 + silence)))
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) && metrics.Value(r.m.Hearing.WithLabelValues("utterance")) > float64(r.outcomes()) {
		time.Sleep(10 * time.Millisecond)
	}
	cancel()
	wg.Wait()
	r.mem.Settle()
}

// outcomes counts the utterances whose end the ear has handled.
func (r *earRig) outcomes() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.handled)
}

func (r *earRig) got() ([]protocol.Heard, []string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]protocol.Heard(nil), r.reports...), append([]string(nil), r.handled...)
}

// A spoken sentence in a quiet room: one report under the robot's name,
// with the speech's times and level, its audio streamed to the engine.
func TestEarReportsASpokenSentence(t *testing.T) {
	speech := mictest.Speech(t, "", sentence)
	lead := make([]int16, 16000) // a second of silence first
	r := newEarRig(t)
	r.run(append(lead, speech...), 1500*time.Millisecond, nil)
	reports, handled := r.got()
	if len(reports) != 1 || len(handled) != 1 || handled[0] != "reported" {
		t.Fatalf("reports %+v, handled %v; want one report", reports, handled)
	}
	r.mu.Lock()
	if fmt.Sprint(r.listening) != "[true false]" { // Home Assistant's "listening", while the person spoke
		t.Errorf("listening went %v", r.listening)
	}
	r.mu.Unlock()
	h := reports[0]
	if h.From != "kyoko" || h.Device != "kyoko-body" || h.Text != sentence || h.Confidence != 0.9 {
		t.Errorf("report = %+v", h)
	}
	// The room knew a person was speaking from the start of the
	// transcription: an open report of the same utterance came first.
	r.mu.Lock()
	states := r.states
	r.mu.Unlock()
	if len(states) != 1 || states[0].State != protocol.HeardOpen || states[0].Utterance == "" || states[0].Utterance != h.Utterance ||
		!states[0].Start.Equal(h.Start) {
		t.Errorf("open reports %+v, want one of utterance %q starting %v", states, h.Utterance, h.Start)
	}
	spoken := time.Duration(len(speech)) * time.Second / 16000
	if d := h.Duration(); d < spoken-300*time.Millisecond || d > spoken+700*time.Millisecond {
		t.Errorf("utterance lasted %v, the speech %v", d, spoken)
	}
	if off := h.Start.Sub(r.started.Add(time.Second)); off < -400*time.Millisecond || off > 400*time.Millisecond {
		t.Errorf("utterance starts %v from where the speech does", off)
	}
	if h.Level > -3 || h.Level < -60 {
		t.Errorf("level %.1f dBFS is not a spoken sentence's", h.Level)
	}
	s := r.engine.Sessions()
	if len(s) != 1 || s[0].Rate() != 16000 || len(s[0].Samples()) < len(speech)*8/10 {
		t.Fatalf("the engine got %d sessions; want one with the sentence's audio", len(s))
	}
}

// A robot's voice gates the microphone — but not a person's sentence
// that was under way when the robot began: that robot started over the
// person and yields, and the sentence is heard to its end. A person who
// begins while a robot speaks is not transcribed (robots never
// transcribe robots).
func TestEarIsGatedWhileARobotSpeaks(t *testing.T) {
	speech := mictest.Speech(t, "", sentence)
	lead := make([]int16, 16000)
	for _, tc := range []struct {
		name    string
		hanaAt  time.Duration // hana starts to speak, from the start of the audio
		reports int
		gated   float64
		session stttest.State
	}{
		{"hana starts halfway through the person's sentence", 1500 * time.Millisecond, 1, 0, stttest.Finished},
		{"hana speaks before the person begins", 500 * time.Millisecond, 0, 0, "none"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newEarRig(t)
			r.run(append(lead, speech...), 1500*time.Millisecond, func(ctx context.Context, obs *room.Room) {
				select {
				case <-time.After(tc.hanaAt):
				case <-ctx.Done():
					return
				}
				c := r.mem.NamedConn("hana", nil, nil)
				hr := room.New(c, r.s, "lr", nil, nil)
				start := time.Now().UTC().Format(time.RFC3339Nano)
				b := []byte(`{"messageId":"m1","speaking":true,"startedAt":"` + start + `","durationMs":5000}`)
				if err := c.Publish(ctx, hr.Scheme.Speaking("lr", "hana"), b, true); err != nil {
					t.Error(err)
				}
			})
			reports, _ := r.got()
			if len(reports) != tc.reports {
				t.Fatalf("reports %+v, want %d", reports, tc.reports)
			}
			if got := metrics.Value(r.m.Hearing.WithLabelValues("gated")); got != tc.gated {
				t.Errorf("gated utterances = %v, want %v", got, tc.gated)
			}
			s := r.engine.Sessions()
			if tc.session == "none" && len(s) != 0 || tc.session != "none" && (len(s) != 1 || s[0].State() != tc.session) {
				t.Errorf("the engine's sessions: %+v, want %s", s, tc.session)
			}
		})
	}
}

// An engine that fails or hears nothing: counted, nothing reported, the
// ear goes on.
func TestEarEngineFailures(t *testing.T) {
	speech := mictest.Speech(t, "", "one two three four")
	for _, tt := range []struct {
		name    string
		set     func(e *stttest.Engine)
		outcome string
	}{
		{"nothing recognised", func(e *stttest.Engine) { e.Transcript = stt.Transcript{} }, "empty"},
		{"finish fails", func(e *stttest.Engine) { e.FinishErr = errors.New("server went away") }, "stt_error"},
		{"rate limited", func(e *stttest.Engine) { e.FinishErr = fmt.Errorf("HTTP 429: %w", stt.ErrRateLimited) }, "stt_rate_limited"},
		{"start fails", func(e *stttest.Engine) { e.StartErr = errors.New("connection refused") }, "stt_error"},
		// The server goes away while the person speaks: the sentence is
		// lost, once; the rest of it is not sent to a new session (that
		// would report its tail as the sentence).
		{"write fails mid-sentence", func(e *stttest.Engine) { e.WriteErrAfter, e.WriteErr = 5, errors.New("connection reset") }, "stt_error"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := newEarRig(t)
			r.engine.Set(tt.set)
			r.run(append(make([]int16, 8000), speech...), time.Second, nil)
			reports, _ := r.got()
			if len(reports) != 0 {
				t.Fatalf("reported %+v", reports)
			}
			if got := metrics.Value(r.m.Hearing.WithLabelValues(tt.outcome)); got != 1 {
				t.Errorf("%s = %v, want 1", tt.outcome, got)
			}
			// An utterance the room was told of is ended for it: nobody
			// waits on a person who is no longer speaking.
			r.mu.Lock()
			states := r.states
			r.mu.Unlock()
			opened := map[string]bool{}
			for _, h := range states {
				switch h.State {
				case protocol.HeardOpen:
					opened[h.Utterance] = true
				case protocol.HeardDropped:
					delete(opened, h.Utterance)
				}
			}
			if len(opened) != 0 {
				t.Errorf("utterances left open: %+v", states)
			}
			if n := len(r.engine.Sessions()); n > 1 {
				t.Errorf("%d speech-to-text sessions for one sentence", n)
			}
		})
	}
}

// With a wake word, the room listens only after it: a sentence without
// one is not sent to speech to text at all; a wake word heard while the
// person speaks opens the ears for that sentence, and is reported itself
// (the room barges in on a robot that speaks).
func TestEarWakeWord(t *testing.T) {
	speech := mictest.Speech(t, "", sentence)
	lead := make([]int16, 16000)
	t.Run("no wake word: nothing heard", func(t *testing.T) {
		det := &waketest.Detector{}
		r := newEarRig(t)
		r.wake = det
		r.run(append(lead, speech...), 1500*time.Millisecond, nil)
		reports, handled := r.got()
		if len(reports) != 0 || len(handled) != 1 || handled[0] != "not_woken" {
			t.Fatalf("reports %+v, handled %v; want the sentence not heard", reports, handled)
		}
		if n := len(r.engine.Sessions()); n != 0 {
			t.Fatalf("%d speech-to-text sessions without a wake word", n)
		}
		if det.Samples() < 16000*2 {
			t.Fatalf("the wake-word detector got %d samples, want the whole room", det.Samples())
		}
	})
	t.Run("a wake word during the sentence", func(t *testing.T) {
		det := &waketest.Detector{}
		r := newEarRig(t)
		r.wake = det
		r.run(append(lead, speech...), 1500*time.Millisecond, func(ctx context.Context, _ *room.Room) {
			select {
			case <-time.After(1500 * time.Millisecond):
				det.Hear("hey_jarvis")
			case <-ctx.Done():
			}
		})
		reports, handled := r.got()
		if len(reports) != 2 || !reports[0].Wake || reports[0].Text != "hey_jarvis" || reports[1].Wake || reports[1].Text != sentence {
			t.Fatalf("reports %+v (handled %v); want the wake word, then the sentence", reports, handled)
		}
	})
	t.Run("a detector that fails is listened to again", func(t *testing.T) {
		det := &waketest.Detector{}
		r := newEarRig(t)
		r.wake = det
		r.run(append(lead, speech...), 2500*time.Millisecond, func(ctx context.Context, _ *room.Room) {
			time.Sleep(300 * time.Millisecond)
			det.Fail(errors.New("server went away"))
			time.Sleep(2 * time.Second) // the ear listens again after its backoff
			det.Hear("hey_jarvis")
		})
		if got := metrics.Value(r.m.Hearing.WithLabelValues("wake_error")); got < 1 {
			t.Errorf("wake errors = %v, want the failure counted", got)
		}
		reports, _ := r.got()
		if len(reports) == 0 || !reports[0].Wake {
			t.Fatalf("reports %+v; want the wake word heard after the detector came back", reports)
		}
	})
}

// A microphone that fails is counted each time, and the capture loop
// opens it again.
func TestCountedMicrophone(t *testing.T) {
	m := metrics.New()
	src := Counted(&mcommand.Source{Command: []string{"sh", "-c", "head -c 3200 /dev/zero; exit 3"}}, m)
	c := &mic.Capture{Source: src, MaxBackoff: 100 * time.Millisecond}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	done := make(chan struct{})
	go func() { defer close(done); c.Run(ctx) }()
	for metrics.Value(m.Hearing.WithLabelValues("mic_error")) < 2 && ctx.Err() == nil {
		time.Sleep(20 * time.Millisecond)
	}
	cancel()
	<-done
	if got := metrics.Value(m.Hearing.WithLabelValues("mic_error")); got < 2 {
		t.Fatalf("mic errors = %v, want the program's exits counted", got)
	}
}

// A person who pauses after "and" is not cut off: the offline recogniser
// gives what was said before the pause while the person is still silent,
// its last word promises more, and the ear holds the utterance open past
// its usual hangover — one report of the whole sentence. Without the
// words (no EndOfTurn), the same audio is two reports, the first cut off
// after "and". Real speech (espeak-ng), real recognition (pocketsphinx,
// whose line comes 0.7 s into a pause: a hangover of 0.9 s, as
// docs/hearing.md says for it).
func TestEarWaitsForAPersonWhoPausesAfterAnd(t *testing.T) {
	mictest.Need(t, "pocketsphinx_continuous")
	grammar := filepath.Join(t.TempDir(), "visit.gram")
	os.WriteFile(grammar, []byte("#JSGF V1.0;\ngrammar visit;\npublic <s> = my sister is coming to visit and | my sister is coming to visit | we will bake bread;\n"), 0o644)
	audio := make([]int16, 8000) // half a second of silence first
	audio = append(audio, mictest.Speech(t, "", "my sister is coming to visit and")...)
	audio = append(audio, make([]int16, 16000*13/10)...) // a 1.3 s pause: past the 0.9 s hangover
	audio = append(audio, mictest.Speech(t, "", "we will bake bread")...)
	const hangover = 900 * time.Millisecond
	waits := endofturn.Waits{Plain: hangover, Unfinished: 1800 * time.Millisecond, Complete: 300 * time.Millisecond}
	for _, tc := range []struct {
		name  string
		judge Judge
		want  []string
	}{
		{"the words hold it open", waits, []string{"my sister is coming to visit and we will bake bread"}},
		{"silence alone cuts it", nil, []string{"my sister is coming to visit and", "we will bake bread"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newEarRig(t)
			r.stt, r.judge, r.pause = &pocketsphinx.Engine{Grammar: grammar}, tc.judge, hangover
			r.run(audio, 2500*time.Millisecond, nil)
			reports, handled := r.got()
			var texts []string
			for _, h := range reports {
				texts = append(texts, h.Text)
			}
			if !slices.Equal(texts, tc.want) {
				t.Errorf("reports %q (handled %v), want %q", texts, handled, tc.want)
			}
		})
	}
}
