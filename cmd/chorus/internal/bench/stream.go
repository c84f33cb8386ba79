package bench

import (
	"context"
	"fmt"
	"io"
	"sort"
	"sync"
	"time"

	"github.com/chorus-robotics/chorus/drivers/tts"
	"github.com/chorus-robotics/chorus/drivers/vad"
)

// StreamOptions are a run of `chorus bench stream` (issue 28, item 7).
type StreamOptions struct {
	TTFT time.Duration // the model's time to the first token
	TPS  float64       // and its tokens per second after it
	N    int           // messages per measurement and mode
	// Modes are brain.stream's values to measure, alternating (true:
	// streamed answers; false: whole ones).
	Modes []bool
	// Speak, when set, are the model's words (a test's short ones; default
	// Talk, two sentences of about 200 characters).
	Speak func(me, lang string, turn int) (float64, string)
}

// streamChunk is how many messages one room measures before the other
// mode has its turn, so that both share the machine's weather.
const streamChunk = 5

// Stream measures, side by side in one run, three robots with the
// OpenAI-compatible brain against a Talker at o's pace, streaming against
// not: (a) a typed message → the first robot audio; (b) voice to voice,
// the person's end of speech → the first robot audio, with the fixed
// Wyoming recogniser (STTDelay) and the VAD's hangover (needs espeak-ng,
// else skipped); (c) the silence between robots (tone voices, paced).
// It prints p50/p90/p99 of each per mode, the ratio streaming / whole, and
// (a)'s goal, from what the model wrote: the time to the first token, the
// tokens of the vote and of the draft's first sentence at o.TPS, and
// 100 ms.
func Stream(ctx context.Context, w io.Writer, o StreamOptions) error {
	voice := tts.Available("espeak-ng")
	fmt.Fprintf(w, "streaming: 3 robots with the OpenAI-compatible brain, a fake model at %v to the first token and %g tokens/s writing two-sentence drafts; %d messages per mode, alternating in rooms of up to %d; embedded broker\n",
		o.TTFT, o.TPS, o.N, streamChunk)
	type row struct {
		label string
		ds    map[bool][]time.Duration
	}
	rows := []*row{{label: "(a) typed message → first robot audio"},
		{label: fmt.Sprintf("(b) voice to voice: end of speech → first robot audio (fixed %v STT, %v hangover, 1 mic, espeak-ng)", STTDelay, vad.DefaultHangover)},
		{label: "(c) silence between robots (tone voices, paced audio)"}}
	for _, r := range rows {
		r.ds = map[bool][]time.Duration{}
	}
	var mu sync.Mutex
	var tokens []int // of the vote and the first sentence, per speaking state written
	wrote := func(answer string) {
		if n, ok := FirstWordsTokens(answer); ok {
			mu.Lock()
			tokens = append(tokens, n)
			mu.Unlock()
		}
	}
	for done := 0; done < o.N; done += streamChunk {
		k := min(streamChunk, o.N-done)
		for _, stream := range o.Modes {
			p := Paced{TPS: o.TPS, Whole: !stream, Speak: o.Speak, Wrote: wrote}
			res, err := Typed(ctx, TypedCase{Latency: o.TTFT, Rounds: k, Paced: p})
			if err != nil {
				return fmt.Errorf("(a), stream %t: %w", stream, err)
			}
			rows[0].ds[stream] = append(rows[0].ds[stream], res.FirstAudio...)
		}
		for _, stream := range o.Modes {
			if !voice {
				break
			}
			p := Paced{TPS: o.TPS, Whole: !stream, Speak: o.Speak}
			res, err := Voice(ctx, VoiceCase{STT: "fixed", Mics: 1, Model: o.TTFT, Rounds: k, Paced: p})
			if err != nil {
				return fmt.Errorf("(b), stream %t: %w", stream, err)
			}
			rows[1].ds[stream] = append(rows[1].ds[stream], res.Total...)
		}
		for _, stream := range o.Modes {
			p := Paced{TPS: o.TPS, Whole: !stream, Speak: o.Speak}
			res, err := Gap(ctx, GapCase{Latency: o.TTFT, TTS: "tone", Turns: "overlapped", Rounds: k, Paced: p})
			if err != nil {
				return fmt.Errorf("(c), stream %t: %w", stream, err)
			}
			rows[2].ds[stream] = append(rows[2].ds[stream], res.Gaps...)
		}
	}
	ms := func(d time.Duration) string { return fmt.Sprintf("%dms", d.Round(time.Millisecond).Milliseconds()) }
	for i, r := range rows {
		fmt.Fprintf(w, "  %s\n", r.label)
		if i == 1 && !voice {
			fmt.Fprintf(w, "    skipped: espeak-ng is not installed (it speaks the person's question)\n")
			continue
		}
		st := map[bool]Stats{}
		for _, stream := range o.Modes {
			st[stream] = Summarize(r.ds[stream])
			s := st[stream]
			fmt.Fprintf(w, "    %-9s p50 %-7s p90 %-7s p99 %-7s (n=%d)\n", map[bool]string{true: "streaming", false: "whole"}[stream],
				ms(s.P50), ms(s.P90), ms(s.P99), s.N)
		}
		if len(o.Modes) == 2 {
			on, off := st[true], st[false]
			ratio := func(a, b time.Duration) float64 { return float64(a) / float64(b) }
			fmt.Fprintf(w, "    streaming / whole: p50 %.2f×, p90 %.2f×, p99 %.2f×\n", ratio(on.P50, off.P50), ratio(on.P90, off.P90), ratio(on.P99, off.P99))
		}
		switch i {
		case 0:
			mu.Lock()
			sort.Ints(tokens)
			n := 0
			if len(tokens) > 0 {
				n = tokens[len(tokens)/2]
			}
			mu.Unlock()
			goal := o.TTFT + time.Duration(float64(n)/o.TPS*float64(time.Second)) + 100*time.Millisecond
			fmt.Fprintf(w, "    goal p50 ≤ %s streaming: %v to the first token + %d tokens of the vote and the first sentence (median of what the model wrote) at %g/s + 100ms\n",
				ms(goal), o.TTFT, n, o.TPS)
		case 1:
			fmt.Fprintf(w, "    goal p50 ≤ 1700ms streaming, at 400ms to the first token and 60 tokens/s (issue 28)\n")
		case 2:
			fmt.Fprintf(w, "    goal: unchanged, the pause %v + ≤ 50ms\n", Pause)
		}
	}
	return nil
}
