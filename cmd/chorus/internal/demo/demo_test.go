package demo

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/chorus-robotics/chorus/drivers/mic/mictest"
)

// TestDemoRunsToTerminal runs the shipped demo room end to end.
func TestDemoRunsToTerminal(t *testing.T) {
	out := t.TempDir()
	var buf bytes.Buffer
	sum, err := Run(context.Background(), Options{Out: out, Timeout: 30 * time.Second, W: &buf})
	t.Log("\n" + buf.String())
	if err != nil {
		t.Fatal(err)
	}
	if !sum.Terminal || sum.Turns < 5 {
		t.Fatalf("summary %+v: want terminal after at least 5 turns", sum)
	}
	if sum.Elapsed > 30*time.Second {
		t.Fatalf("took %v", sum.Elapsed)
	}
	for _, want := range []string{"user → all: Hello everyone!", "grant: nobody — the room rests (rest, all-voted)", "votes: "} {
		if !strings.Contains(buf.String(), want) {
			t.Errorf("transcript lacks %q", want)
		}
	}
	if len(sum.Audio) != sum.Turns {
		t.Fatalf("%d audio files for %d turns", len(sum.Audio), sum.Turns)
	}
	for _, f := range sum.Audio {
		if d := mictest.ReadWAV(t, f).Duration(); d < 200*time.Millisecond {
			t.Fatalf("%s: %v of audio", f, d)
		}
	}
}

func TestDemoStopsAfterTurns(t *testing.T) {
	var buf bytes.Buffer
	sum, err := Run(context.Background(), Options{Dir: filepath.Join("..", "..", "..", "..", "firmware-configs", "demo"), Turns: 2, Timeout: 30 * time.Second, W: &buf})
	if err != nil {
		t.Fatal(err)
	}
	if sum.Turns != 2 || sum.Rested {
		t.Fatalf("summary %+v", sum)
	}
}

// Paced, the demo plays at human speed: the robots never talk at once,
// each starts the pause after the one before ends (overlapped turns: the
// next one thought while the last one talked), and room.wav holds the
// whole conversation on one timeline (issue 13).
func TestPacedDemoMixesTheRoom(t *testing.T) {
	out := t.TempDir()
	var buf bytes.Buffer
	sum, err := Run(context.Background(), Options{Out: out, Turns: 4, Paced: true, Timeout: 60 * time.Second, W: &buf})
	t.Log("\n" + buf.String())
	if err != nil {
		t.Fatal(err)
	}
	if len(sum.Gaps) < 3 || sum.Overlaps != 0 {
		t.Fatalf("gaps %v, %d overlaps", sum.Gaps, sum.Overlaps)
	}
	for _, g := range sum.Gaps {
		// The demo room's pause is 150 ms. A silence is measured from the
		// robots' own speaking statuses, whose times carry their devices'
		// scheduling: 139.85 ms was seen in CI with a test running beside
		// it. Shorter than 100 ms would be the pause not kept.
		if g < 100*time.Millisecond {
			t.Errorf("a silence of %v between robots is shorter than the pause", g)
		}
	}
	p := mictest.ReadWAV(t, sum.RoomWAV)
	var said time.Duration
	for _, f := range sum.Audio {
		said += mictest.ReadWAV(t, f).Duration()
	}
	if p.Duration() < said { // every utterance, one after another, with the silences
		t.Fatalf("room.wav is %v, the utterances alone %v", p.Duration(), said)
	}
	if !strings.Contains(buf.String(), "silences between robots:") {
		t.Error("the gaps were not printed")
	}
}

// The realtime demo (issue 12): five offline companions on the free floor;
// the transcript numbers every utterance with the speaker's remaining
// count and the end reason, all within 30 s. Refused posts are counted in
// the summary and printed at -log debug only (issue 27).
func TestRealtimeDemo(t *testing.T) {
	var buf bytes.Buffer
	sum, err := Run(context.Background(), Options{Mode: "realtime", Timeout: 30 * time.Second, W: &buf})
	t.Log("\n" + buf.String())
	if err != nil {
		t.Fatal(err)
	}
	if sum.EndReason != "all_over" || sum.Turns < 5 || sum.Elapsed > 30*time.Second {
		t.Fatalf("summary %+v", sum)
	}
	for _, want := range []string{"phase talk-", "opened (talk): kyoko, hana, aya, ren, mio", "#1 ", " left): ", "ended: all_over"} {
		if !strings.Contains(buf.String(), want) {
			t.Errorf("transcript lacks %q", want)
		}
	}
	if strings.Contains(buf.String(), "post refused") {
		t.Error("the transcript prints refused posts without -log debug")
	}
}

// Issue 27: the README's `chorus demo -mode realtime` plays a 60 s phase;
// the demo's own timeout is longer than its longest phase, so the phase
// ends the demo, not the timeout.
func TestRealtimeDemoOutlastsItsPhase(t *testing.T) {
	cfgs, err := Configs("", "realtime")
	if err != nil {
		t.Fatal(err)
	}
	phase := cfgs[0].Room.Realtime.PhaseTimeout
	if d := DefaultTimeout(cfgs); d < phase+10*time.Second {
		t.Fatalf("the demo gives up after %v; its phase lasts up to %v", d, phase)
	}
	turn, err := Configs("", "turn")
	if err != nil {
		t.Fatal(err)
	}
	if d := DefaultTimeout(turn); d != time.Minute {
		t.Fatalf("the turn demo's timeout %v, want a minute", d)
	}
}

// A demo run without an output folder writes no WAV file anywhere: the
// embedded configs' own folders (../../out/...) are not the run's, and
// once wrote into whatever folder lay above the current one.
func TestNoOutWritesNothing(t *testing.T) {
	root := t.TempDir()
	cwd := filepath.Join(root, "a", "b")
	if err := os.MkdirAll(cwd, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Chdir(cwd)
	var buf bytes.Buffer
	if _, err := Run(context.Background(), Options{Turns: 1, Timeout: 30 * time.Second, W: &buf}); err != nil {
		t.Fatal(err)
	}
	filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			t.Errorf("the demo wrote %s", p)
		}
		return nil
	})
}

// The realtime demo plays at human speed too (issue 18, item 9): in its
// room of voices (overlap: false) no two robots talk at once, each starts
// after the one before has ended, and the talk goes on past the first
// long utterance. Before, its audio was never paced (WAV output ended at
// once, so the timeline showed robots talking over each other), and paced
// it ended after one utterance: silence_timeout and the brains' quiet were
// counted from an utterance's broadcast, not from the end of its voice.
func TestPacedRealtimeDemoNeverOverlaps(t *testing.T) {
	var buf bytes.Buffer
	sum, err := Run(context.Background(), Options{Mode: "realtime", Turns: 5, Paced: true, Timeout: 60 * time.Second, W: &buf})
	t.Log("\n" + buf.String())
	if err != nil {
		t.Fatal(err)
	}
	if sum.Turns < 5 || sum.EndReason != "" {
		t.Fatalf("summary %+v: want 5 utterances before the phase ends", sum)
	}
	if len(sum.Gaps) < 3 || sum.Overlaps != 0 {
		t.Fatalf("gaps %v, %d overlaps: want the robots one after another", sum.Gaps, sum.Overlaps)
	}
	for _, g := range sum.Gaps {
		if g < 0 {
			t.Fatalf("a robot started %v before the one before it ended", -g)
		}
	}
}

// At human speed the realtime demo's robots have their say and end the
// phase all_over before its timeout, and the talk is question and answer:
// whoever is asked a question by name (a riddle too) says the next line,
// and it answers the asker. Before, the paced demo always ran into its
// 60 s phase timeout, a robot that had not spoken yet talked over the
// question put to another, and riddles went unanswered.
func TestPacedRealtimeDemoEndsAllOverAndAnswers(t *testing.T) {
	cfgs, err := Configs("", "realtime")
	if err != nil {
		t.Fatal(err)
	}
	members := cfgs[0].Room.Members
	phase := cfgs[0].Room.Realtime.PhaseTimeout
	var buf bytes.Buffer
	sum, err := Run(context.Background(), Options{Mode: "realtime", Paced: true, W: &buf})
	t.Log("\n" + buf.String())
	if err != nil {
		t.Fatal(err)
	}
	if sum.EndReason != "all_over" || sum.Elapsed >= phase {
		t.Fatalf("the phase ended by %q after %v, want all_over before its %v timeout", sum.EndReason, sum.Elapsed, phase)
	}
	line := regexp.MustCompile(`\] #\d+ (\w+) \(\d+ left\): (.*)$`)
	type said struct{ who, text string }
	var talk []said
	for _, l := range strings.Split(buf.String(), "\n") {
		if m := line.FindStringSubmatch(l); m != nil {
			talk = append(talk, said{m[1], m[2]})
		}
	}
	asked := 0
	for i, s := range talk {
		if !strings.Contains(s.text, "?") {
			continue
		}
		for _, m := range members {
			if m == s.who || !strings.Contains(s.text, m) {
				continue
			}
			asked++
			if i+1 >= len(talk) || talk[i+1].who != m || !strings.HasPrefix(talk[i+1].text, s.who+", ") {
				t.Errorf("%s asked %s %q; the next line is %+v, want %s answering %s", s.who, m, s.text, talk[min(i+1, len(talk)-1)], m, s.who)
			}
		}
	}
	if asked < 3 {
		t.Fatalf("only %d questions asked by name in %d lines", asked, len(talk))
	}
}

// chorus demo -voice (issue 21): a person asks the opening line aloud in
// the robots' shared air; the room hears it once (pocketsphinx) and
// answers, and room.wav, the air as it sounded, starts with the person.
func TestVoiceDemo(t *testing.T) {
	for _, bin := range []string{"espeak-ng", "pocketsphinx_continuous"} {
		if _, err := exec.LookPath(bin); err != nil {
			if os.Getenv("CHORUS_REQUIRE_STT") == "1" {
				t.Fatalf("%s not installed and CHORUS_REQUIRE_STT=1", bin)
			}
			t.Skipf("%s not installed", bin)
		}
	}
	out := t.TempDir()
	var buf bytes.Buffer
	sum, err := Run(context.Background(), Options{Out: out, Turns: 2, Voice: true, Timeout: 60 * time.Second, W: &buf})
	t.Log("\n" + buf.String())
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(buf.String(), "user → all: hello everyone what did you do today") || sum.Turns != 2 {
		t.Fatalf("the room did not hear the person and answer: %d turns", sum.Turns)
	}
	if strings.Count(buf.String(), "user → all") != 1 {
		t.Fatal("the person's sentence became more than one Message")
	}
	p := mictest.ReadWAV(t, sum.RoomWAV)
	loud := 0
	for _, v := range p.Samples[:min(len(p.Samples), 3*p.Rate)] {
		if v > 2000 || v < -2000 {
			loud++
		}
	}
	if p.Duration() < 5*time.Second || loud < p.Rate/10 {
		t.Fatalf("room.wav: %v long, %d loud samples in its first 3 s (the person)", p.Duration(), loud)
	}
}
