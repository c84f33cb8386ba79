package ear

import (
	"context"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chorus-robotics/chorus/drivers/audio"
	"github.com/chorus-robotics/chorus/drivers/mic/mictest"
	"github.com/chorus-robotics/chorus/drivers/stt/wyoming"
	"github.com/chorus-robotics/chorus/drivers/stt/wyoming/wyomingtest"
	"github.com/chorus-robotics/chorus/drivers/tts/openjtalk"
	"github.com/chorus-robotics/chorus/drivers/vad"
	"github.com/chorus-robotics/chorus/runtime/endofturn"
	"github.com/chorus-robotics/chorus/runtime/protocol"
)

// pauseSetJA is what people say in Japanese with a pause inside: after a
// filler, a conjunction, a て-form or a particle, and at a noun or an
// adverb nothing marks.
var pauseSetJA = []pauseSentence{
	{"えっと", "今何時ですか"},
	{"昨日、友達と", "公園に行きました"},
	{"京都に行って", "お寺を見ました"},
	{"雨が降っていたので", "家にいました"},
	{"行きたいけど", "時間がありません"},
	{"それで", "彼は帰りました"},
	{"あの", "お茶をください"},
	{"妹が来るから", "ケーキを焼きます"},
	{"朝ごはんを食べて", "散歩しました"},
	{"明日は", "晴れるでしょう"},
	{"私の好きな果物は", "マンゴーです"},
	{"駅まで歩いて", "電車に乗りました"},
	{"猫が", "テーブルに乗りました"},
	{"来週", "山に行きます"},
	{"私の名前は", "さくらです"},
	{"図書館は", "九時に開きます"},
	{"牛乳と卵を", "買いに行きます"},
	{"新しい", "本を買いました"},
	{"お医者さんが", "毎日歩きなさいと言いました"},
	{"隣の人が", "子犬を飼いました"},
	{"先週", "おばさんに会いました"},
	{"電話は", "台所にあります"},
	{"とても", "楽しかったです"},
	{"昨日見た映画は", "悲しかったです"},
}

// BenchmarkFalseCutOffsJapanese speaks pauseSetJA (Open JTalk, at three
// speeds and pitches) into an ear whose speech to text is an oracle
// (oracleCutOffs): no Japanese recogniser runs offline here; the VAD's
// cuts and the words' pauses are real. Run:
//
//	CHORUS_REQUIRE_STT=1 go test -run XXX -bench FalseCutOffsJapanese -benchtime 1x ./device/ear/
func BenchmarkFalseCutOffsJapanese(b *testing.B) {
	oracleCutOffs(b, pauseSetJA, "ja", "", sayJA(b))
}

// sayJA says the i-th sentence with Open JTalk at one of three speeds and
// pitches, trimmed, at 16 kHz.
func sayJA(b *testing.B) func(i int, text string) []int16 {
	mictest.Need(b, "open_jtalk")
	voices := []openjtalk.Engine{{}, {Speed: 1.15, Pitch: 3}, {Speed: 0.9, Pitch: -3}}
	return func(i int, text string) []int16 {
		p, err := voices[i%len(voices)].Synthesize(context.Background(), text, "")
		if err != nil {
			b.Fatal(err)
		}
		return trimmed(audio.Resample(p, 16000).Samples)
	}
}

// BenchmarkFalseCutOffsStreaming is BenchmarkFalseCutOffs's English
// sentences (espeak-ng, four voices) through an oracle recogniser that
// streams its hypotheses as a Wyoming 1.7 server does (oracleCutOffs), at
// the default 0.5 s hangover: where the words are meant to pay off, which
// pocketsphinx's late hypotheses cannot show. Run:
//
//	CHORUS_REQUIRE_STT=1 go test -run XXX -bench FalseCutOffsStreaming -benchtime 1x ./device/ear/
func BenchmarkFalseCutOffsStreaming(b *testing.B) {
	mictest.Need(b, "espeak-ng")
	oracleCutOffs(b, pauseSet, "en", " ", func(i int, text string) []int16 {
		return trimmed(mictest.Speech(b, pauseVoices[i%len(pauseVoices)], text))
	})
}

// oracleCutOffs speaks set (say: sentence i's half, at 16 kHz) into an ear
// whose speech to text is an oracle: a Wyoming 1.7 server that streams
// what was said up to each moment, each word 100 ms after it was said
// (the halves joined by join). It counts the sentences cut off with the
// hangover alone and with the words' pauses (runtime/endofturn), and with
// eager end of turn the tentative reports per sentence and those taken
// back (each a model call that was thrown away).
func oracleCutOffs(b *testing.B, set []pauseSentence, lang, join string, say func(i int, text string) []int16, only ...string) {
	const rate, gap, lag = 16000, 2000 * time.Millisecond, 100 * time.Millisecond
	type span struct{ start, firstEnd, end time.Duration }
	audioIn := make([]int16, rate/2)
	spans := make([]span, len(set))
	at := func() time.Duration { return time.Duration(len(audioIn)) * time.Second / rate }
	for i, s := range set {
		pause := time.Duration(300+150*(i%5)) * time.Millisecond
		spans[i].start = at()
		audioIn = append(audioIn, say(i, s.first)...)
		spans[i].firstEnd = at()
		audioIn = append(audioIn, make([]int16, int(pause.Seconds()*rate))...)
		audioIn = append(audioIn, say(i, s.second)...)
		spans[i].end = at()
		audioIn = append(audioIn, make([]int16, int(gap.Seconds()*rate))...)
	}
	// The oracle: what was said by now, of the sentence the session began in.
	var started atomic.Int64 // the rig's start, UnixNano
	said := func(samples, rate int, final bool) string {
		now := time.Duration(time.Now().UnixNano() - started.Load())
		from := now - time.Duration(samples)*time.Second/time.Duration(rate)
		for i, s := range spans {
			if from < s.start-700*time.Millisecond || from > s.end {
				continue
			}
			inFirst := from < s.firstEnd
			switch {
			case !inFirst && (final || now >= s.end+lag):
				return set[i].second
			case !inFirst:
				return ""
			case now >= s.end+lag || final && now >= s.end:
				return set[i].first + join + set[i].second
			case now >= s.firstEnd+lag || final:
				return set[i].first
			}
			return ""
		}
		return ""
	}
	srv := &wyomingtest.Server{Delay: 200 * time.Millisecond,
		Partial: func(samples, rate int) string { return said(samples, rate, false) },
		Text:    func(samples, rate int) string { return said(samples, rate, true) }}
	addr, err := srv.Start()
	if err != nil {
		b.Fatal(err)
	}
	defer srv.Close()
	words := func(plain time.Duration) Judge {
		return endofturn.Waits{Plain: plain, Unfinished: DefaultHangoverUnfinished, Complete: DefaultHangoverComplete}
	}
	for _, mode := range []struct {
		name     string
		hangover time.Duration
		judge    Judge
		eager    time.Duration
	}{
		{"hangover-0.5s-alone", vad.DefaultHangover, nil, 0},
		{"hangover-0.5s+words", vad.DefaultHangover, words(vad.DefaultHangover), 0},
		{"hangover-0.5s+words+eager", vad.DefaultHangover, words(vad.DefaultHangover), DefaultEager},
		// The defaults with eager on: plain words end on hangover_plain.
		{"hangover-0.5s+words+eager+plain-0.9s", vad.DefaultHangover, words(DefaultHangoverPlainEager), DefaultEager},
	} {
		if len(only) > 0 && !slices.Contains(only, mode.name) {
			continue
		}
		b.Run(mode.name, func(b *testing.B) {
			for range b.N {
				r := newEarRig(b)
				r.stt, r.judge, r.eager, r.pause = &wyoming.Engine{Addr: addr, Language: lang}, mode.judge, mode.eager, mode.hangover
				r.onStart = func(t time.Time) { started.Store(t.UnixNano()) }
				r.run(audioIn, 3*time.Second, nil)
				reports, _ := r.got()
				r.mu.Lock()
				states := r.states
				r.mu.Unlock()
				of := func(t time.Time) int {
					from := t.Sub(r.started)
					for i, s := range spans {
						if from >= s.start-500*time.Millisecond && from <= s.end+500*time.Millisecond {
							return i
						}
					}
					return -1
				}
				perSentence := make([]int, len(set))
				for _, h := range reports {
					if i := of(h.Start); i >= 0 {
						perSentence[i]++
					}
				}
				tentative, resumed := 0, 0
				for _, h := range states {
					switch h.State {
					case protocol.HeardTentative:
						tentative++
					case protocol.HeardResumed:
						resumed++
					}
				}
				cut, lost := cutOffs(b, set, perSentence)
				n := float64(len(set))
				b.ReportMetric(float64(cut)/n*100, "%cut-off")
				b.ReportMetric(float64(lost), "unheard")
				b.ReportMetric(float64(tentative)/n, "tentative/sentence")
				b.ReportMetric(float64(resumed)/n, "withdrawn/sentence")
				b.Logf("%s: %d of %d sentences cut off, %d not heard; %d tentative reports, %d taken back; transcripts %s",
					mode.name, cut, len(set), lost, tentative, resumed, strings.Join(texts(reports), " | "))
			}
		})
	}
}

func texts(hs []protocol.Heard) []string {
	out := make([]string, len(hs))
	for i, h := range hs {
		out[i] = h.Text
	}
	return out
}
