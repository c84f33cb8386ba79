package ear

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/chorus-robotics/chorus/drivers/voiceid/voiceidtest"
	"github.com/chorus-robotics/chorus/runtime/protocol"
)

// BenchmarkWhoIsSpeaking: the three test voices (sam and mia enrolled
// from three sentences each, the third never) say the six test
// sentences over room noise, twice (other noise), through the ear with
// the fake LocalAI service: how many are attributed to their speaker
// (sure), how many to a wrong person, and what the voice adds to the
// report, from the end of the speech, against the same ear without it
// (the baseline, same run). The recogniser answers 300 ms after the
// end (a fast Wyoming faster-whisper); the service takes -voice-delay.
//
//	go test -run '^$' -bench WhoIsSpeaking -benchtime 1x ./device/ear/
func BenchmarkWhoIsSpeaking(b *testing.B) {
	for _, delay := range []time.Duration{80 * time.Millisecond, 400 * time.Millisecond} {
		b.Run(fmt.Sprintf("service=%v", delay), func(b *testing.B) {
			for range b.N {
				whoIsSpeaking(b, delay)
			}
		})
	}
}

func whoIsSpeaking(b *testing.B, delay time.Duration) {
	type said struct {
		who voiceidtest.Voice
		at  int // the speech's first sample
	}
	var audio []int16
	var script []said
	for round := range 2 {
		for i, s := range voiceidtest.Sentences {
			for _, v := range []voiceidtest.Voice{voiceidtest.Sam, voiceidtest.Mia, voiceidtest.Kid} {
				audio = append(audio, make([]int16, 16000)...)
				script = append(script, said{v, len(audio)})
				audio = append(audio, voiceidtest.Say(b, v, s, uint64(1000+round*100+i))...)
			}
		}
	}
	delays := func(voice bool) ([]time.Duration, []protocol.Heard) {
		v, srv, prints := voiceRig(b)
		v.Wait = DefaultVoiceWait
		srv.Delay(delay)
		for i, s := range voiceidtest.Sentences[3:] {
			prints.Add("sam", voiceidtest.Model, time.Now(), voiceidtest.Spectral(voiceidtest.Say(b, voiceidtest.Sam, s, uint64(50+i)), 16000))
		}
		r := newEarRig(b)
		r.engine.Delay = 300 * time.Millisecond
		r.engine.Transcript.Text = "i like green tea"
		if voice {
			r.voice = v
		}
		r.run(audio, time.Second, nil)
		r.mu.Lock()
		defer r.mu.Unlock()
		var ds []time.Duration
		for i, h := range r.reports {
			ds = append(ds, r.reportsAt[i].Sub(h.End))
		}
		return ds, slices.Clone(r.reports)
	}
	base, _ := delays(false)
	with, reports := delays(true)
	if len(reports) != len(script) {
		b.Fatalf("%d reports of %d utterances", len(reports), len(script))
	}
	right, wrong, known := 0, 0, 0
	for i, h := range reports {
		who, person := script[i].who.Name, ""
		if h.Voice != nil && h.Voice.Sure {
			person = h.Voice.Person
		} else if h.Voice != nil && h.Voice.Person != "" {
			person = "unsure:" + h.Voice.Person
		}
		enrolled := who != voiceidtest.Kid.Name
		if enrolled {
			known++
		}
		switch {
		case enrolled && person == who, !enrolled && person == "":
			right++
		case person != "" && person != who && person != "unsure:"+who:
			wrong++
			b.Logf("%s's sentence %d attributed to %s (%+v)", who, i, person, h.Voice)
		}
	}
	added := median(with) - median(base)
	b.ReportMetric(100*float64(right)/float64(len(reports)), "attributed_%")
	b.ReportMetric(100*float64(wrong)/float64(len(reports)), "wrong_person_%")
	b.ReportMetric(float64(median(base).Milliseconds()), "report_ms_p50_baseline")
	b.ReportMetric(float64(median(with).Milliseconds()), "report_ms_p50_voice")
	b.ReportMetric(float64(added.Milliseconds()), "added_ms_p50")
	b.Logf("%d utterances (%d of enrolled voices): %d attributed right, %d to a wrong person; report p50 %v → %v (%+v)",
		len(reports), known, right, wrong, median(base), median(with), added)
}

func median(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	if len(s) == 0 {
		return 0
	}
	return s[len(s)/2]
}
