package ear

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chorus-robotics/chorus/drivers/mic/mictest"
	"github.com/chorus-robotics/chorus/drivers/stt/pocketsphinx"
	"github.com/chorus-robotics/chorus/drivers/vad"
	"github.com/chorus-robotics/chorus/runtime/endofturn"
)

// pauseSentence is one spoken sentence with a pause inside it.
type pauseSentence struct {
	first, second string
}

// pauseSet is what people say with a pause inside: half pause after a
// conjunction or a filler, half at a place nothing in the words marks
// ("my favourite fruit is … mango"). The pause cycles through 300, 450,
// 600, 750 and 900 ms, the voice through four of espeak-ng's.
var pauseSet = []pauseSentence{
	// After a conjunction or a filler.
	{"my sister is coming to visit and", "we will bake bread"},
	{"i was thinking um", "maybe we could sing"},
	{"we went to the park and", "the dog ran after a ball"},
	{"it was raining so", "we stayed inside"},
	{"i like the blue one but", "the red one is cheaper"},
	{"can you help me because", "i lost my keys"},
	{"we could watch a film or", "play a game"},
	{"my daughter called and", "she is doing well"},
	{"i made some tea and um", "it is still warm"},
	{"tell me a story and", "make it a funny one"},
	{"i went to the shop and", "bought some apples"},
	{"the cat jumped on the table and", "knocked over a cup"},
	{"um", "what time is it"},
	{"i think we should go out but", "it is very cold"},
	{"my friend is a doctor and", "she works at night"},
	{"we had dinner and then", "we played cards"},
	{"the music was lovely so", "we danced all evening"},
	{"i forgot my glasses and", "i cannot read the paper"},
	{"uh", "where are my shoes"},
	{"the train was late because", "of the snow"},
	// At a place nothing in the words marks.
	{"my favourite fruit is", "mango"},
	{"the weather today is", "really lovely"},
	{"my brother lives in", "london"},
	{"we should go to the beach on", "saturday"},
	{"my name is", "sam"},
	{"the best thing about summer is", "the long evenings"},
	{"i would like", "a cup of coffee"},
	{"yesterday i saw", "an old friend"},
	{"our garden has", "three apple trees"},
	{"my grandson plays", "the piano"},
	{"the library opens at", "nine"},
	{"i need to buy", "milk and eggs"},
	{"my favourite colour is", "green"},
	{"last week we visited", "my aunt"},
	{"the doctor said i should", "walk every day"},
	{"this morning i found", "a bird in the garden"},
	{"our neighbour has", "a new puppy"},
	{"the film we saw was", "very sad"},
	{"my phone is", "on the kitchen table"},
	{"next month we are going", "to the mountains"},
}

var pauseVoices = []string{"en-us", "en-gb", "en-gb-scotland", "en-us+f3"}

// BenchmarkFalseCutOffs speaks pauseSet (espeak-ng, four voices) into an
// ear that hears with pocketsphinx, a grammar of the sentences and their
// halves, and counts the sentences cut off — heard as more than one
// utterance, so that a robot would answer the first half while the person
// was only pausing — with the words' pauses (runtime/endofturn) and with
// the hangover alone, at 0.5 s and at 0.9 s, in the same run (pocketsphinx
// says the words before a pause 0.7 s into it: after a 0.5 s hangover,
// before a 0.9 s one). It reports the share cut off and the sentences not
// heard at all. Run:
//
//	CHORUS_REQUIRE_STT=1 go test -run XXX -bench FalseCutOffs -benchtime 1x ./device/ear/
func BenchmarkFalseCutOffs(b *testing.B) {
	mictest.Need(b, "pocketsphinx_continuous", "espeak-ng", "sox")
	var alts []string
	for _, s := range pauseSet {
		alts = append(alts, s.first, s.second, s.first+" "+s.second)
	}
	grammar := filepath.Join(b.TempDir(), "pauses.gram")
	os.WriteFile(grammar, []byte("#JSGF V1.0;\ngrammar pauses;\npublic <s> = "+strings.Join(alts, " | ")+";\n"), 0o644)
	// One stream of audio: each sentence, its pause inside, and 2 s of
	// silence after it (past the longest wait for an end).
	const rate, gap = 16000, 2000 * time.Millisecond
	audio := make([]int16, rate/2)
	type span struct{ start, end time.Duration }
	spans := make([]span, len(pauseSet))
	at := func() time.Duration { return time.Duration(len(audio)) * time.Second / rate }
	for i, s := range pauseSet {
		voice := pauseVoices[i%len(pauseVoices)]
		pause := time.Duration(300+150*(i%5)) * time.Millisecond
		spans[i].start = at()
		audio = append(audio, trimmed(mictest.Speech(b, voice, s.first))...)
		audio = append(audio, make([]int16, int(pause.Seconds()*rate))...)
		audio = append(audio, trimmed(mictest.Speech(b, voice, s.second))...)
		spans[i].end = at()
		audio = append(audio, make([]int16, int(gap.Seconds()*rate))...)
	}
	words := func(hangover time.Duration) Judge {
		return endofturn.Waits{Plain: hangover, Unfinished: max(DefaultHangoverUnfinished, hangover), Complete: DefaultHangoverComplete}
	}
	for _, mode := range []struct {
		name     string
		hangover time.Duration
		judge    Judge
	}{
		{"hangover-0.5s-alone", vad.DefaultHangover, nil},
		{"hangover-0.5s+words", vad.DefaultHangover, words(vad.DefaultHangover)},
		{"hangover-0.9s-alone", 900 * time.Millisecond, nil},
		{"hangover-0.9s+words", 900 * time.Millisecond, words(900 * time.Millisecond)},
	} {
		b.Run(mode.name, func(b *testing.B) {
			for range b.N {
				r := newEarRig(b)
				r.stt, r.judge, r.pause = &pocketsphinx.Engine{Grammar: grammar}, mode.judge, mode.hangover
				r.run(audio, 3*time.Second, nil)
				reports, _ := r.got()
				perSentence := make([]int, len(pauseSet))
				for _, h := range reports {
					if h.State != "" {
						continue
					}
					from := h.Start.Sub(r.started)
					for i, s := range spans {
						if from >= s.start-500*time.Millisecond && from <= s.end+500*time.Millisecond {
							perSentence[i]++
							break
						}
					}
				}
				cut, lost := cutOffs(b, pauseSet, perSentence)
				b.ReportMetric(float64(cut)/float64(len(pauseSet))*100, "%cut-off")
				b.ReportMetric(float64(lost), "unheard")
				b.Logf("%s: %d of %d sentences cut off, %d not heard, %d transcripts", mode.name, cut, len(pauseSet), lost, len(reports))
			}
		})
	}
}

// cutOffs counts the sentences of set heard as more than one utterance
// (logging each) and those not heard at all, from the utterances heard
// of each.
func cutOffs(b *testing.B, set []pauseSentence, perSentence []int) (cut, lost int) {
	for i, n := range perSentence {
		switch {
		case n > 1:
			cut++
			b.Logf("cut off (%d utterances): %q … %q", n, set[i].first, set[i].second)
		case n == 0:
			lost++
		}
	}
	return cut, lost
}

// trimmed is pcm without the silence espeak-ng puts before and after the
// words, so that the pause inside a sentence is the one set.
func trimmed(pcm []int16) []int16 {
	loud := func(s int16) bool { return s > 300 || s < -300 }
	i, j := 0, len(pcm)
	for i < j && !loud(pcm[i]) {
		i++
	}
	for j > i && !loud(pcm[j-1]) {
		j--
	}
	return pcm[i:j]
}
