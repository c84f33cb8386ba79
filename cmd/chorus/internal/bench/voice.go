package bench

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"
	"unicode"

	"github.com/chorus-robotics/chorus/cmd/chorus/internal/localroom"
	"github.com/chorus-robotics/chorus/drivers/air"
	"github.com/chorus-robotics/chorus/drivers/audio"
	"github.com/chorus-robotics/chorus/drivers/stt"
	"github.com/chorus-robotics/chorus/drivers/stt/pocketsphinx"
	"github.com/chorus-robotics/chorus/drivers/stt/wyoming/wyomingtest"
	"github.com/chorus-robotics/chorus/drivers/tts/espeak"
	"github.com/chorus-robotics/chorus/drivers/vad"
	"github.com/chorus-robotics/chorus/runtime/protocol"
	"github.com/chorus-robotics/chorus/runtime/room"
)

// VoiceCase is one room of the voice-to-voice benchmark.
type VoiceCase struct {
	STT    string        // "fixed" (a Wyoming server answering after STTDelay) or "pocketsphinx" (with a grammar)
	Mics   int           // how many of the three robots hear (1 or 3)
	Model  time.Duration // the model server's time per call (with Paced: to the first token)
	Rounds int
	Paced
	// Hypotheses: the fixed server streams its hypotheses as the audio
	// comes (a Wyoming 1.7 server), each word HypothesisLag after it was
	// said; Eager: the robots think on the words so far at a pause
	// (hearing.vad.eager, its default; else off).
	Hypotheses, Eager bool
	// Say is what the person says (default VoiceQuestion); with the
	// fixed recogniser only (pocketsphinx's grammar is the question's).
	Say string
	// HangoverPlain, when set, is hearing.vad.hangover_plain.
	HangoverPlain time.Duration
}

// said is what the person says in c.
func (c VoiceCase) said() string {
	if c.Say == "" {
		return VoiceQuestion
	}
	return c.Say
}

// heardAs is what a recogniser makes of what a person says: lower case
// words without punctuation.
func heardAs(say string) string {
	return strings.Join(strings.FieldsFunc(strings.ToLower(say), func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsNumber(r) && r != '\''
	}), " ")
}

// HypothesisLag is how long after a word is said the streaming fixed
// server's hypothesis has it.
const HypothesisLag = 100 * time.Millisecond

// VoiceResult is what one room measured, per round.
type VoiceResult struct {
	Total []time.Duration // the person's end of speech → the first robot audio
	Heard []time.Duration // the person's end of speech → the room's Message
	// STT is the engine's time from the end of the audio to the text:
	// the fixed server's own, or pocketsphinx's measured on the same
	// sentence streamed in real time.
	STT      []time.Duration
	Hangover time.Duration // the VAD's end-of-speech hangover (config)
	TTS      []time.Duration
	// From the person's end of speech, per round: the first tentative
	// report (0: none), the last State on the person's Message, its grant.
	Tentative, Voted, Granted []time.Duration
	Calls                     []int64 // model calls per round, to the room's rest
}

// STTDelay is the fixed speech-to-text server's time per sentence.
const STTDelay = 200 * time.Millisecond

// VoiceQuestion is what the person asks in the voice benchmark.
const VoiceQuestion = "Hello robots, what is the weather like today?"

const voiceGrammar = `#JSGF V1.0;
grammar bench;
public <utterance> = hello robots what is the weather like today | goodbye robots;
`

const voiceCompanion = `version: 1
device: {id: %[1]s}
room: {name: voice, members: [ann, ben, cat], pause: 200ms}
mqtt: {broker: "tcp://127.0.0.1:1"}
companion: {id: %[1]s, name: %[1]s, language: en}
brain: {provider: openai, base_url: "%[2]s", model: bench, timeout: 10s, stream: %[6]t}
drivers:
  audio: {kind: air, air: "%[3]s"}
  tts: {kind: espeak-ng}
  mic: {kind: air, air: "%[3]s"}
hearing: {enabled: %[4]t, stt: %[5]s, vad: {eager: %[7]s%[8]s}}
http: {listen: "off"}
`

// Voice runs three companions on the OpenAI-compatible brain (the fake
// model server, c.Model per call), speaking espeak-ng into a shared air
// and hearing it; c.Mics of them hear. A person asks VoiceQuestion aloud
// c.Rounds times; each time the room is quiet again, it measures from the
// end of the person's speech to the first robot audio (its speaking
// status) and to the room's Message.
func Voice(ctx context.Context, c VoiceCase) (VoiceResult, error) {
	res := VoiceResult{Hangover: vad.DefaultHangover}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	srv := &air.Server{Listen: "127.0.0.1:0", ValidID: protocol.ValidIdentity}
	airDone := make(chan error, 1)
	go func() { airDone <- srv.Run(ctx) }()
	defer func() { cancel(); <-airDone }()
	select {
	case <-srv.Ready():
	case err := <-airDone:
		return res, fmt.Errorf("air: %w", err)
	}
	fake := c.fake(c.Model, func(me string, turn int) string { return "It is sunny and warm today." })
	defer fake.Close()
	fake.OnlyUsers = true
	dir, err := os.MkdirTemp("", "chorus-voice-")
	if err != nil {
		return res, err
	}
	defer os.RemoveAll(dir)
	gram := filepath.Join(dir, "bench.gram")
	if err := os.WriteFile(gram, []byte(voiceGrammar), 0o644); err != nil {
		return res, err
	}
	if c.Say != "" && c.STT != "fixed" {
		return res, errors.New("voice: what the person says is the question with pocketsphinx (its grammar)")
	}
	pcm, err := question(ctx, c.said())
	if err != nil {
		return res, err
	}
	sttConf := "{kind: pocketsphinx, grammar: " + gram + "}"
	var fixed *wyomingtest.Server
	if c.STT == "fixed" {
		text := heardAs(c.said())
		fixed = &wyomingtest.Server{Delay: STTDelay, Text: func(int, int) string { return text }}
		if c.Hypotheses {
			fixed.Partial = hypotheses(pcm, text)
		}
		addr, err := fixed.Start()
		if err != nil {
			return res, err
		}
		defer fixed.Close()
		sttConf = `{kind: wyoming, url: "tcp://` + addr + `"}`
	} else if res.STT, err = pocketsphinxTimes(ctx, gram, pcm, 3); err != nil {
		return res, err
	}
	hears := map[string]bool{"ann": c.Mics >= 1, "ben": c.Mics >= 2, "cat": c.Mics >= 3}
	r, err := startRoom(ctx, "voice", func(id string) string {
		plain := ""
		if c.HangoverPlain > 0 {
			plain = fmt.Sprintf(", hangover_plain: %v", c.HangoverPlain)
		}
		return fmt.Sprintf(voiceCompanion, id, fake.BaseURL(), srv.Addr(), hears[id], sttConf, !c.Whole, map[bool]string{true: "200ms", false: "off"}[c.Eager], plain)
	})
	if err != nil {
		return res, err
	}
	defer r.Close()
	obs, ob, err := r.Dial(ctx, "voice-watch")
	if err != nil {
		return res, err
	}
	defer ob.Close()
	w := newVoiceWatch()
	if err := obs.OnMessage(ctx, w.message); err != nil {
		return res, err
	}
	if err := obs.OnSpeaking(ctx, w.speak); err != nil {
		return res, err
	}
	if err := obs.OnState(ctx, w.state); err != nil {
		return res, err
	}
	if err := obs.OnGrant(ctx, w.grant); err != nil {
		return res, err
	}
	if err := obs.OnHeard(ctx, w.tentative); err != nil {
		return res, err
	}
	if err := waitAll(ctx, time.Second, r); err != nil {
		return res, err
	}
	tts := &espeak.Engine{}
	for range c.Rounds {
		if err := w.quiet(ctx, 30*time.Second); err != nil {
			return res, err
		}
		time.Sleep(800 * time.Millisecond) // the room's tail, and a pause as a person takes
		w.drain()
		calls := fake.Calls()
		if err := air.Say(ctx, srv.Addr(), pcm.Samples, pcm.Rate); err != nil {
			return res, fmt.Errorf("the person: %w", err)
		}
		end := time.Now().Add(-trailingSilence(pcm))
		var heardAt, startedAt time.Time
		select {
		case heardAt = <-w.heard:
		case <-time.After(15 * time.Second):
			return res, errors.New("voice: the room did not hear the person within 15 s")
		case err := <-r.Err():
			return res, err
		}
		select {
		case startedAt = <-w.started:
		case <-time.After(15 * time.Second):
			return res, errors.New("voice: no robot answered within 15 s")
		case err := <-r.Err():
			return res, err
		}
		res.Heard = append(res.Heard, heardAt.Sub(end))
		res.Total = append(res.Total, startedAt.Sub(end))
		if err := w.quiet(ctx, 30*time.Second); err != nil {
			return res, err
		}
		tent, voted, granted := w.round()
		since := func(t time.Time) time.Duration {
			if t.IsZero() {
				return 0
			}
			return t.Sub(end)
		}
		res.Tentative, res.Voted, res.Granted = append(res.Tentative, since(tent)), append(res.Voted, since(voted)), append(res.Granted, since(granted))
		res.Calls = append(res.Calls, fake.Calls()-calls)
	}
	if fixed != nil {
		for _, u := range fixed.Utterances() {
			res.STT = append(res.STT, u.Took)
		}
	}
	ds, err := FirstAudio(ctx, tts, "It is sunny and warm today.", false, 20)
	if err != nil {
		return res, err
	}
	res.TTS = ds
	if p := fake.Problems(); len(p) > 0 {
		return res, fmt.Errorf("model server saw bad requests: %v", p)
	}
	return res, nil
}

// waitAll gives the room's subscriptions time to settle.
func waitAll(ctx context.Context, d time.Duration, r *localroom.Room) error {
	select {
	case <-time.After(d):
		return nil
	case err := <-r.Err():
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// voiceWatch follows the room: the person's heard Messages and the robots'
// voices; and for the round under way the newest tentative report before
// the Message, the
// last State on the person's Message and its grant.
type voiceWatch struct {
	heard, started chan time.Time
	mu             sync.Mutex
	speaking       map[string]bool
	changed        chan struct{}
	msg            string // the person's Message of the round
	tent           time.Time
	votes, grants  map[string]time.Time // by message id
}

func (w *voiceWatch) tentative(h protocol.Heard) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if h.State == protocol.HeardTentative && w.msg == "" { // the newest before the Message
		w.tent = time.Now()
	}
}

func (w *voiceWatch) state(s protocol.State) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.votes[s.Params.MessageID] = time.Now()
}

func (w *voiceWatch) grant(g protocol.TurnGrant) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if _, ok := w.grants[g.MessageID]; !ok {
		w.grants[g.MessageID] = time.Now()
	}
}

// round is the round's times, and starts the next.
func (w *voiceWatch) round() (tentative, voted, granted time.Time) {
	w.mu.Lock()
	defer w.mu.Unlock()
	tentative, voted, granted = w.tent, w.votes[w.msg], w.grants[w.msg]
	w.tent, w.msg, w.votes, w.grants = time.Time{}, "", map[string]time.Time{}, map[string]time.Time{}
	return tentative, voted, granted
}

func newVoiceWatch() *voiceWatch {
	return &voiceWatch{heard: make(chan time.Time, 16), started: make(chan time.Time, 16), speaking: map[string]bool{},
		votes: map[string]time.Time{}, grants: map[string]time.Time{}}
}

func (w *voiceWatch) message(m protocol.Message) {
	if m.Params.Heard() {
		w.mu.Lock()
		if w.msg == "" {
			w.msg = m.Params.ID
		}
		w.mu.Unlock()
		select {
		case w.heard <- time.Now():
		default:
		}
	}
}

func (w *voiceWatch) speak(e room.SpeakingEvent) {
	w.mu.Lock()
	on := e.Speaking.Speaking && !e.Cleared
	if on && !w.speaking[e.ID] {
		select {
		case w.started <- e.Speaking.StartedAt:
		default:
		}
	}
	w.speaking[e.ID] = on
	w.mu.Unlock()
}

func (w *voiceWatch) drain() {
	for {
		select {
		case <-w.heard:
		case <-w.started:
		default:
			return
		}
	}
}

func (w *voiceWatch) quiet(ctx context.Context, within time.Duration) error {
	deadline := time.Now().Add(within)
	for time.Now().Before(deadline) {
		w.mu.Lock()
		n := 0
		for _, on := range w.speaking {
			if on {
				n++
			}
		}
		w.mu.Unlock()
		if n == 0 {
			return nil
		}
		select {
		case <-time.After(50 * time.Millisecond):
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return fmt.Errorf("voice: a robot still speaks after %v", within)
}

// hypotheses is a streaming recogniser's hypothesis of pcm (text spoken)
// by the samples it has heard: the ear's session begins with its pre-roll
// (the VAD's default), and each word is heard HypothesisLag after it was
// said, the words evenly spread over the speech.
func hypotheses(pcm audio.PCM, text string) func(samples, rate int) string {
	speech := time.Duration(len(pcm.Samples))*time.Second/time.Duration(pcm.Rate) - trailingSilence(pcm) - leadingSilence(pcm)
	words := strings.Fields(text)
	return func(samples, rate int) string {
		heard := time.Duration(samples)*time.Second/time.Duration(rate) - vad.DefaultPreRoll - HypothesisLag
		n := min(len(words), int(float64(len(words))*float64(heard)/float64(speech)))
		if n <= 0 {
			return ""
		}
		return strings.Join(words[:n], " ")
	}
}

// leadingSilence is how long p begins quietly.
func leadingSilence(p audio.PCM) time.Duration {
	i := 0
	for i < len(p.Samples)-1 && p.Samples[i] < 300 && p.Samples[i] > -300 {
		i++
	}
	return time.Duration(i) * time.Second / time.Duration(p.Rate)
}

// question is say spoken by espeak-ng at 16 kHz.
func question(ctx context.Context, say string) (audio.PCM, error) {
	p, err := (&espeak.Engine{}).Synthesize(ctx, say, "")
	if err != nil {
		return audio.PCM{}, fmt.Errorf("voice: espeak-ng: %w", err)
	}
	return audio.Resample(p, 16000), nil
}

// trailingSilence is how long p ends quietly: the person's speech ended
// that long before the audio did.
func trailingSilence(p audio.PCM) time.Duration {
	i := len(p.Samples) - 1
	for i > 0 && p.Samples[i] < 300 && p.Samples[i] > -300 {
		i--
	}
	return time.Duration(len(p.Samples)-1-i) * time.Second / time.Duration(p.Rate)
}

// pocketsphinxTimes streams pcm to pocketsphinx in real time n times and
// returns the time from its last audio to the transcript.
func pocketsphinxTimes(ctx context.Context, grammar string, pcm audio.PCM, n int) ([]time.Duration, error) {
	e := &pocketsphinx.Engine{Grammar: grammar}
	var out []time.Duration
	for range n {
		s, err := e.Start(ctx, pcm.Rate)
		if err != nil {
			return nil, err
		}
		frame := pcm.Rate / 50
		for i := 0; i < len(pcm.Samples); i += frame {
			s.Write(pcm.Samples[i:min(i+frame, len(pcm.Samples))])
			time.Sleep(20 * time.Millisecond)
		}
		start := time.Now()
		tr, err := s.Finish(ctx)
		if err != nil && !errors.Is(err, stt.ErrEmpty) {
			return nil, err
		}
		if tr.Text == "" {
			return nil, errors.New("voice: pocketsphinx did not recognise the question")
		}
		out = append(out, time.Since(start))
	}
	return out, nil
}
