package pocketsphinx

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chorus-robotics/chorus/drivers/audio"
	"github.com/chorus-robotics/chorus/drivers/stt"
	"github.com/chorus-robotics/chorus/drivers/stt/stttest"
)

// need skips when bin is missing, unless the variable env is 1 (CI):
// CHORUS_REQUIRE_STT for pocketsphinx, CHORUS_REQUIRE_TTS for espeak-ng
// and sox.
func need(t *testing.T, env, bin, pkg string) {
	t.Helper()
	if _, err := exec.LookPath(bin); err != nil {
		if os.Getenv(env) == "1" {
			t.Fatalf("%s not installed and %s=1 (apt-get install -y %s)", bin, env, pkg)
		}
		t.Skipf("%s not installed; set %s=1 to make this a failure", bin, env)
	}
}

const sentence = "hello robots what is the weather like today"

const grammar = `#JSGF V1.0;
grammar robots;
public <utterance> = hello robots what is the weather like today
                   | hello robots what time is it
                   | goodbye robots
                   | turn on the lights;
`

// speak says text with espeak-ng and returns the WAV's PCM (22050 Hz),
// and, with sox, the same converted to 16 kHz mono s16.
func speak(t *testing.T, text string) (native, at16k audio.PCM) {
	t.Helper()
	need(t, "CHORUS_REQUIRE_TTS", "espeak-ng", "espeak-ng")
	need(t, "CHORUS_REQUIRE_TTS", "sox", "sox")
	dir := t.TempDir()
	in, out := filepath.Join(dir, "in.wav"), filepath.Join(dir, "out.wav")
	if b, err := exec.Command("espeak-ng", "-w", in, text).CombinedOutput(); err != nil {
		t.Fatalf("espeak-ng: %v %s", err, b)
	}
	if b, err := exec.Command("sox", in, "-r", "16000", "-c", "1", "-b", "16", out).CombinedOutput(); err != nil {
		t.Fatalf("sox: %v %s", err, b)
	}
	for i, p := range []string{in, out} {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		pcm, err := audio.DecodeWAV(b)
		if err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			native = pcm
		} else {
			at16k = pcm
		}
	}
	if at16k.Rate != 16000 {
		t.Fatalf("sox wrote %d Hz", at16k.Rate)
	}
	return native, at16k
}

// recognise feeds pcm in 20 ms frames at real-time pace (as a microphone
// does) and returns the transcript and how long Finish took.
func recognise(t *testing.T, e *Engine, pcm audio.PCM, pace bool) (stt.Transcript, time.Duration, error) {
	t.Helper()
	s, err := e.Start(context.Background(), pcm.Rate)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Abort()
	frame := pcm.Rate / 50
	for i := 0; i < len(pcm.Samples); i += frame {
		if err := s.Write(pcm.Samples[i:min(i+frame, len(pcm.Samples))]); err != nil {
			t.Fatal(err)
		}
		if pace {
			time.Sleep(20 * time.Millisecond)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	start := time.Now()
	tr, err := s.Finish(ctx)
	return tr, time.Since(start), err
}

func grammarFile(t *testing.T) string {
	p := filepath.Join(t.TempDir(), "robots.gram")
	if err := os.WriteFile(p, []byte(grammar), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestSpeechWithGrammar: real speech, streamed at a microphone's pace,
// comes back word for word with a grammar, at 16 kHz (sox) and at
// espeak-ng's own 22050 Hz (resampled by the session).
func TestSpeechWithGrammar(t *testing.T) {
	need(t, "CHORUS_REQUIRE_STT", DefaultBinary, "pocketsphinx pocketsphinx-en-us")
	native, at16k := speak(t, sentence)
	e := &Engine{Grammar: grammarFile(t)}
	for _, pcm := range []audio.PCM{at16k, native} {
		tr, took, err := recognise(t, e, pcm, true)
		if err != nil {
			t.Fatalf("%d Hz: %v", pcm.Rate, err)
		}
		if tr.Text != sentence || tr.Confidence != -1 || tr.Language != "en" {
			t.Fatalf("%d Hz: transcript %+v, want %q", pcm.Rate, tr, sentence)
		}
		t.Logf("%d Hz, %v of speech streamed at real time: %q, Finish took %v", pcm.Rate, pcm.Duration().Round(time.Millisecond), tr.Text, took.Round(time.Millisecond))
	}
}

// TestSpeechWithoutGrammar measures the word error rate of the default
// language model on the same speech; it only logs it (it is poor).
func TestSpeechWithoutGrammar(t *testing.T) {
	need(t, "CHORUS_REQUIRE_STT", DefaultBinary, "pocketsphinx pocketsphinx-en-us")
	sentences := []string{sentence, "turn on the lights in the kitchen", "please tell me a story about a dragon"}
	var errs, words int
	for _, s := range sentences {
		_, at16k := speak(t, s)
		tr, took, err := recognise(t, &Engine{}, at16k, false)
		if err != nil && !errors.Is(err, stt.ErrEmpty) {
			t.Fatal(err)
		}
		e := wordErrors(strings.Fields(s), strings.Fields(tr.Text))
		errs += e
		words += len(strings.Fields(s))
		t.Logf("%q → %q: %d word errors, Finish took %v", s, tr.Text, e, took.Round(time.Millisecond))
	}
	t.Logf("word error rate without a grammar: %d/%d = %.0f%%", errs, words, 100*float64(errs)/float64(words))
}

// wordErrors is the edit distance between two word lists.
func wordErrors(ref, hyp []string) int {
	d := make([]int, len(hyp)+1)
	for j := range d {
		d[j] = j
	}
	for i := 1; i <= len(ref); i++ {
		prev := d[0]
		d[0] = i
		for j := 1; j <= len(hyp); j++ {
			cur := d[j]
			sub := prev
			if ref[i-1] != hyp[j-1] {
				sub++
			}
			d[j] = min(d[j]+1, d[j-1]+1, sub)
			prev = cur
		}
	}
	return d[len(hyp)]
}

func TestWordErrors(t *testing.T) {
	for _, tc := range []struct {
		ref, hyp string
		want     int
	}{{"a b c", "a b c", 0}, {"a b c", "a c", 1}, {"a b c", "", 3}, {"", "x y", 2}, {"a b c", "a x c d", 2}} {
		if got := wordErrors(strings.Fields(tc.ref), strings.Fields(tc.hyp)); got != tc.want {
			t.Errorf("wordErrors(%q, %q) = %d, want %d", tc.ref, tc.hyp, got, tc.want)
		}
	}
}

func TestSilenceIsEmpty(t *testing.T) {
	need(t, "CHORUS_REQUIRE_STT", DefaultBinary, "pocketsphinx pocketsphinx-en-us")
	_, _, err := recognise(t, &Engine{Grammar: grammarFile(t)}, audio.PCM{Rate: 16000, Samples: make([]int16, 16000)}, false)
	if !errors.Is(err, stt.ErrEmpty) {
		t.Fatalf("silence: %v, want ErrEmpty", err)
	}
}

func TestBadGrammarNamesTheError(t *testing.T) {
	need(t, "CHORUS_REQUIRE_STT", DefaultBinary, "pocketsphinx pocketsphinx-en-us")
	bad := filepath.Join(t.TempDir(), "bad.gram")
	os.WriteFile(bad, []byte("#JSGF V1.0;\ngrammar x;\npublic <a> = zzqxv;\n"), 0o644)
	s, err := (&Engine{Grammar: bad}).Start(context.Background(), 16000)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Abort()
	s.Write(make([]int16, 1600))
	_, err = s.Finish(context.Background())
	if err == nil || errors.Is(err, stt.ErrEmpty) || !strings.Contains(err.Error(), "stderr") {
		t.Fatalf("Finish = %v, want a failure quoting stderr", err)
	}
	t.Log(err)
}

func TestMissingBinary(t *testing.T) {
	_, err := (&Engine{Binary: "no-such-pocketsphinx"}).Start(context.Background(), 16000)
	if err == nil || !strings.Contains(err.Error(), `"no-such-pocketsphinx" not found`) {
		t.Fatalf("Start = %v", err)
	}
	if _, err := (&Engine{Grammar: "a", Keywords: "b"}).Start(context.Background(), 16000); err == nil {
		t.Fatal("grammar and keywords accepted")
	}
}

// script writes a shell script that stands in for the program.
func script(t *testing.T, body string) string {
	p := filepath.Join(t.TempDir(), "fake-pocketsphinx")
	if err := os.WriteFile(p, []byte("#!/bin/sh\n"+body), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestDiesMidStream(t *testing.T) {
	bin := script(t, "head -c 3200 >/dev/null\necho 'ERROR: \"acmod.c\", line 83: Folder does not contain acoustic model' >&2\nexit 3\n")
	s, err := (&Engine{Binary: bin}).Start(context.Background(), 16000)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Abort()
	var werr error
	for range 100 {
		if werr = s.Write(make([]int16, 320)); werr != nil {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	if werr == nil || !strings.Contains(werr.Error(), "died mid-stream") || !strings.Contains(werr.Error(), "acoustic model") {
		t.Fatalf("Write after the program died = %v", werr)
	}
	_, err = s.Finish(context.Background())
	if err == nil || errors.Is(err, stt.ErrEmpty) || !strings.Contains(err.Error(), "exit status 3") {
		t.Fatalf("Finish = %v", err)
	}
}

func TestOutputParsedStrictly(t *testing.T) {
	for _, tc := range []struct {
		out, want string
		ok        bool
	}{
		{"hello robots\n", "hello robots", true},
		{"hello robots\nwhat time is it\n", "hello robots what time is it", true},
		{"\n\n", "", true},
		{"", "", true},
		{"don't stop\r\n", "don't stop", true},
		{"INFO: cmn.c(133): CMN: 40.00\n", "", false},
		{"hello\x00robots\n", "", false},
		{"hello <sil>\n", "", false},
		{"\xff\xfe\n", "", false},
	} {
		got, err := ParseOutput([]byte(tc.out))
		if (err == nil) != tc.ok || got != tc.want {
			t.Errorf("ParseOutput(%q) = %q, %v", tc.out, got, err)
		}
	}
}

func TestOutputFromFakeProgram(t *testing.T) {
	for _, tc := range []struct {
		name, body string
		want       string
		is         error
	}{
		{"answers", "cat >/dev/null\necho 'INFO: loading' >&2\necho 'turn on the lights'\n", "turn on the lights", nil},
		{"nothing", "cat >/dev/null\n", "", stt.ErrEmpty},
		{"log on stdout", "cat >/dev/null\necho 'INFO: oops'\n", "", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := (&Engine{Binary: script(t, tc.body)}).Start(context.Background(), 48000)
			if err != nil {
				t.Fatal(err)
			}
			s.Write(make([]int16, 4800))
			tr, err := s.Finish(context.Background())
			switch {
			case tc.want != "":
				if err != nil || tr.Text != tc.want {
					t.Fatalf("Finish = %+v, %v", tr, err)
				}
			case tc.is != nil:
				if !errors.Is(err, tc.is) {
					t.Fatalf("Finish = %v, want %v", err, tc.is)
				}
			default:
				if err == nil || errors.Is(err, stt.ErrEmpty) {
					t.Fatalf("Finish = %v, want a failure", err)
				}
			}
		})
	}
}

func TestHangsTimesOut(t *testing.T) {
	s, err := (&Engine{Binary: script(t, "cat >/dev/null\nexec sleep 60\n"), Timeout: 200 * time.Millisecond}).Start(context.Background(), 16000)
	if err != nil {
		t.Fatal(err)
	}
	s.Write(make([]int16, 320))
	start := time.Now()
	_, err = s.Finish(context.Background())
	if err == nil || !strings.Contains(err.Error(), "timed out") || time.Since(start) > 5*time.Second {
		t.Fatalf("Finish = %v after %v", err, time.Since(start))
	}
}

func TestAbortKills(t *testing.T) {
	s, err := (&Engine{Binary: script(t, "exec sleep 60\n")}).Start(context.Background(), 16000)
	if err != nil {
		t.Fatal(err)
	}
	s.Write(make([]int16, 320))
	stttest.AbortDuringFinish(t, s, 50*time.Millisecond, 5*time.Second)
}

func TestOverflow(t *testing.T) {
	s, err := (&Engine{Binary: script(t, "cat >/dev/null\n"), MaxSeconds: 1}).Start(context.Background(), 16000)
	if err != nil {
		t.Fatal(err)
	}
	for range 60 {
		s.Write(make([]int16, 320))
	}
	if _, err := s.Finish(context.Background()); !errors.Is(err, stt.ErrOverflow) {
		t.Fatalf("Finish = %v, want ErrOverflow", err)
	}
}

// What the person said before a pause comes back while they go on: the
// program prints a segment when its VAD ends it, and the line grows the
// session's hypothesis before Finish. Real speech (espeak-ng), paced as
// a microphone gives it, with a second's pause inside.
func TestPartialBeforeAPause(t *testing.T) {
	need(t, "CHORUS_REQUIRE_STT", "pocketsphinx_continuous", "pocketsphinx pocketsphinx-en-us")
	_, first := speak(t, "hello robots")
	_, second := speak(t, "what time is it")
	g := filepath.Join(t.TempDir(), "pause.gram")
	os.WriteFile(g, []byte("#JSGF V1.0;\ngrammar pause;\npublic <utterance> = hello robots | what time is it | turn on the lights;\n"), 0o644)
	s, err := (&Engine{Grammar: g}).Start(context.Background(), 16000)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Abort()
	hypotheses := s.(stt.Partials).Partials()
	feed := func(pcm []int16) {
		for i := 0; i < len(pcm); i += 320 {
			if err := s.Write(pcm[i:min(i+320, len(pcm))]); err != nil {
				t.Fatal(err)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	feed(first.Samples)
	feed(make([]int16, 16000)) // a second's pause
	feed(second.Samples)
	var before string
	select {
	case h := <-hypotheses:
		before = h.Text
	default: // nothing yet
	}
	if before != "hello robots" {
		t.Errorf("before Finish, the hypothesis was %q, want what was said before the pause", before)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	tr, err := s.Finish(ctx)
	if err != nil || tr.Text != "hello robots what time is it" {
		t.Fatalf("Finish = %+v, %v", tr, err)
	}
	for h := range hypotheses { // the last segment's line, then the end
		if !strings.HasPrefix(h.Text, "hello robots") {
			t.Errorf("a hypothesis %q after Finish", h.Text)
		}
	}
}
