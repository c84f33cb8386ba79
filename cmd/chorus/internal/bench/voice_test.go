package bench

import (
	"context"
	"os/exec"
	"testing"
	"time"
)

func needVoice(tb testing.TB) {
	for _, bin := range []string{"espeak-ng", "pocketsphinx_continuous"} {
		if _, err := exec.LookPath(bin); err != nil {
			tb.Skipf("%s not installed", bin)
		}
	}
}

// BenchmarkVoice: voice to voice (issue 21), the person's end of speech
// to the first robot audio, with a fixed 200 ms speech-to-text server and
// with pocketsphinx, one microphone and three (also `chorus bench voice`).
func BenchmarkVoice(b *testing.B) {
	needVoice(b)
	for _, c := range []VoiceCase{{STT: "fixed", Mics: 1}, {STT: "fixed", Mics: 3}, {STT: "pocketsphinx", Mics: 1}, {STT: "pocketsphinx", Mics: 3}} {
		b.Run(c.STT+"-"+map[int]string{1: "1mic", 3: "3mics"}[c.Mics], func(b *testing.B) {
			c.Model, c.Rounds = 300*time.Millisecond, b.N
			res, err := Voice(context.Background(), c)
			report(b, res.Total, err)
		})
	}
}

// The voice benchmark's room works: a question asked aloud is heard once
// and answered by a robot's voice, through the fixed speech-to-text
// server, in a plausible time.
func TestVoiceSmoke(t *testing.T) {
	needVoice(t)
	res, err := Voice(context.Background(), VoiceCase{STT: "fixed", Mics: 3, Model: 300 * time.Millisecond, Rounds: 2})
	if err != nil {
		t.Fatal(err)
	}
	for i, d := range res.Total {
		if d < res.Hangover+STTDelay+300*time.Millisecond-100*time.Millisecond || d > 5*time.Second {
			t.Errorf("round %d: voice to voice %v, want hangover + STT + model and a little", i, d)
		}
		if res.Heard[i] >= d {
			t.Errorf("round %d: heard %v after the end of speech, answered %v", i, res.Heard[i], d)
		}
	}
}

// TestActionsSmoke runs the actions benchmark briefly: every turn has its
// grant, its audio and its nod, and every action query its answer.
func TestActionsSmoke(t *testing.T) {
	res, err := Actions(context.Background(), 2, 5)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.AudioToServo) != 2 || len(res.RoundTrip) != 5 || len(res.Baseline) != 5 {
		t.Fatalf("%+v", res)
	}
	for _, d := range res.GrantToServo {
		if d <= 0 {
			t.Fatalf("a nod before its grant: %v", res.GrantToServo)
		}
	}
}

// BenchmarkActionRoundTrip is an action query (the face shows an emotion)
// answered by a robot on the embedded broker.
func BenchmarkActionRoundTrip(b *testing.B) {
	res, err := Actions(context.Background(), 0, b.N)
	if err != nil {
		b.Fatal(err)
	}
	var total time.Duration
	for _, d := range res.RoundTrip {
		total += d
	}
	b.ReportMetric(float64(total.Microseconds())/float64(len(res.RoundTrip)), "µs/action")
}
