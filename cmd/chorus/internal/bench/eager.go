package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/chorus-robotics/chorus/drivers/tts"
	"github.com/chorus-robotics/chorus/drivers/vad"
)

// EagerOptions are a run of `chorus bench eager` (issue 40, item 6).
type EagerOptions struct {
	TTFT time.Duration // the model's time to the first token
	TPS  float64       // and its tokens per second after it
	N    int           // person turns per mode
	// Speak, when set, are the model's words (a test's short ones).
	Speak func(me, lang string, turn int) (float64, string)
	// Say is what the person says (default VoiceQuestion).
	Say string
}

// eagerModes are the paths measured side by side: before issue 40 (the
// recogniser's final only, the hangover), with its hypotheses (the pause
// the words call for), and eager end of turn on them.
var eagerModes = []struct {
	name              string
	hypotheses, eager bool
	plain             time.Duration // hearing.vad.hangover_plain; 0: the default
}{
	{"final only", false, false, 0},
	{"hypotheses", true, false, 0},
	{"eager", true, true, 0},
	{"eager 0.5s", true, true, vad.DefaultHangover}, // the plain pause before it was longer with eager on
}

// Eager measures voice to voice — the person's end of speech to the first
// robot audio — side by side in one run, on three paths (eagerModes):
// three robots with the OpenAI-compatible brain against a Talker at o's
// pace, one microphone, the person's question spoken by espeak-ng into the
// shared air, the fixed Wyoming recogniser (STTDelay after the audio;
// streaming, each word HypothesisLag after it was said). It prints where
// the time goes (p50 from the end of speech of the newest tentative report before the Message,
// the room's Message, the last vote on it, its grant, the first audio) and
// the model calls per person turn (to the room's rest).
func Eager(ctx context.Context, w io.Writer, o EagerOptions) error {
	if !tts.Available("espeak-ng") {
		return errors.New("eager: espeak-ng is not installed (it speaks the person's question)")
	}
	fmt.Fprintf(w, "eager end of turn: 3 robots with the OpenAI-compatible brain, a fake model at %v to the first token and %g tokens/s; "+
		"1 microphone, espeak-ng's %q into the shared air, the fixed Wyoming recogniser (%v after the audio; hypotheses %v after each word), "+
		"hangover %v; %d person turns per path, alternating in rooms of up to %d; embedded broker\n",
		o.TTFT, o.TPS, VoiceCase{Say: o.Say}.said(), STTDelay, HypothesisLag, vad.DefaultHangover, o.N, streamChunk)
	res := make([]VoiceResult, len(eagerModes))
	for done := 0; done < o.N; done += streamChunk {
		k := min(streamChunk, o.N-done)
		for i, m := range eagerModes {
			r, err := Voice(ctx, VoiceCase{STT: "fixed", Mics: 1, Model: o.TTFT, Rounds: k, Hypotheses: m.hypotheses, Eager: m.eager, Say: o.Say, HangoverPlain: m.plain,
				Paced: Paced{TPS: o.TPS, Speak: o.Speak}})
			if err != nil {
				return fmt.Errorf("%s: %w", m.name, err)
			}
			a := &res[i]
			a.Total, a.Heard = append(a.Total, r.Total...), append(a.Heard, r.Heard...)
			a.Tentative, a.Voted, a.Granted = append(a.Tentative, r.Tentative...), append(a.Voted, r.Voted...), append(a.Granted, r.Granted...)
			a.Calls = append(a.Calls, r.Calls...)
		}
	}
	ms := func(d time.Duration) string {
		if d == 0 {
			return "—"
		}
		return fmt.Sprintf("%dms", d.Round(time.Millisecond).Milliseconds())
	}
	fmt.Fprintf(w, "  %-11s %-22s %-10s %-8s %-9s %-8s %-12s %s\n", "path", "voice to voice p50/p90", "tentative", "Message", "votes in", "grant", "first audio", "model calls per turn")
	var p50 []time.Duration
	for i, m := range eagerModes {
		r := res[i]
		tot := Summarize(r.Total)
		p50 = append(p50, tot.P50)
		var tents []time.Duration
		for _, t := range r.Tentative {
			if t > 0 {
				tents = append(tents, t)
			}
		}
		var calls int64
		for _, c := range r.Calls {
			calls += c
		}
		fmt.Fprintf(w, "  %-11s %-22s %-10s %-8s %-9s %-8s %-12s %.2f (n=%d)\n", m.name, ms(tot.P50)+" / "+ms(tot.P90),
			ms(Summarize(tents).P50), ms(Summarize(r.Heard).P50), ms(Summarize(r.Voted).P50), ms(Summarize(r.Granted).P50), ms(tot.P50),
			float64(calls)/float64(max(1, len(r.Calls))), tot.N)
	}
	fmt.Fprintf(w, "  eager / final only: p50 %.2f×; eager / hypotheses: p50 %.2f×\n",
		float64(p50[2])/float64(p50[0]), float64(p50[2])/float64(p50[1]))
	fmt.Fprintf(w, "  goal p50 ≤ 1000ms eager, at 400ms to the first token and 60 tokens/s; model calls per turn ≤ 1.5× final only's (issue 40)\n")
	return nil
}
