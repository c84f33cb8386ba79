package ear

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chorus-robotics/chorus/drivers/mic/mictest"
	"github.com/chorus-robotics/chorus/drivers/stt/wyoming"
	"github.com/chorus-robotics/chorus/drivers/stt/wyoming/wyomingtest"
	"github.com/chorus-robotics/chorus/runtime/endofturn"
	"github.com/chorus-robotics/chorus/runtime/protocol"
)

// Eager end of turn, through a Wyoming 1.7 server that streams its
// hypotheses (wyomingtest, as wyoming-faster-whisper's streaming does):
// real speech (espeak-ng), a hypothesis that grows with the audio heard.
func TestEagerEndOfTurn(t *testing.T) {
	first, second := mictest.Speech(t, "", "how are you"), mictest.Speech(t, "", "today")
	lead := make([]int16, 8000)
	pause := func(ms int) []int16 { return make([]int16, 16*ms) }
	cat := func(parts ...[]int16) []int16 {
		var out []int16
		for _, p := range parts {
			out = append(out, p...)
		}
		return out
	}
	// The recogniser hears the words said by the audio it has.
	saidBy := func(parts ...struct {
		upTo int
		text string
	}) func(int, int) string {
		return func(samples, _ int) string {
			said := ""
			for _, p := range parts {
				if samples >= p.upTo {
					said = p.text
				}
			}
			return said
		}
	}
	type part = struct {
		upTo int
		text string
	}
	waits := endofturn.Waits{Plain: 900 * time.Millisecond, Unfinished: 1800 * time.Millisecond, Complete: 900 * time.Millisecond}
	for _, tc := range []struct {
		name   string
		audio  []int16
		said   func(int, int) string
		final  string
		judge  Judge
		eager  time.Duration
		states string // the reports after open, before the transcript
	}{
		{"a pause told, then the sentence", cat(lead, first), saidBy(part{len(lead) + len(first)*2/3, "how are you"}), "how are you", nil, 200 * time.Millisecond,
			"tentative:how are you"},
		{"the person goes on: taken back, told again", cat(lead, first, pause(500), second), saidBy(part{len(lead) + len(first)*2/3, "how are you"},
			part{len(lead) + len(first) + 8000 + len(second)/2, "how are you today"}), "how are you today", nil, 200 * time.Millisecond,
			"tentative:how are you resumed tentative:how are you today"},
		{"words that promise more are not told", cat(lead, first), saidBy(part{len(lead) + len(first)*2/3, "my sister is coming and"}), "my sister is coming and", waits, 200 * time.Millisecond,
			""},
		{"a greeting alone is not told", cat(lead, first), saidBy(part{len(lead) + len(first)*2/3, "hello robots"}), "hello robots", nil, 200 * time.Millisecond,
			""},
		{"off", cat(lead, first), saidBy(part{len(lead) + len(first)*2/3, "how are you"}), "how are you", nil, 0, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := &wyomingtest.Server{Delay: 50 * time.Millisecond, Partial: tc.said, Text: func(int, int) string { return tc.final }}
			addr, err := srv.Start()
			if err != nil {
				t.Fatal(err)
			}
			defer srv.Close()
			r := newEarRig(t)
			r.stt, r.judge, r.pause, r.eager = &wyoming.Engine{Addr: addr, Language: "en"}, tc.judge, 900*time.Millisecond, tc.eager
			r.run(tc.audio, 1500*time.Millisecond, nil)
			reports, handled := r.got()
			if len(reports) != 1 || reports[0].Text != tc.final {
				t.Fatalf("reports %+v (handled %v), want one: %q", reports, handled, tc.final)
			}
			r.mu.Lock()
			states := r.states
			r.mu.Unlock()
			var got []string
			var captions []protocol.Heard
			for i, h := range states {
				if h.Utterance != reports[0].Utterance {
					t.Errorf("report %d (%s) is of utterance %q, the transcript of %q", i, h.State, h.Utterance, reports[0].Utterance)
				}
				switch h.State {
				case protocol.HeardOpen:
					if i != 0 {
						t.Errorf("open report %d, want first", i)
					}
				case protocol.HeardTentative:
					got = append(got, h.State+":"+h.Text)
					// Told at the pause, long before the transcript: the
					// speech stopped where the tentative report says.
					if lead := reports[0].End.Sub(h.End); lead < -100*time.Millisecond || lead > 100*time.Millisecond && i == len(states)-1 {
						t.Errorf("the tentative report says the speech stopped %v before the transcript's end", lead)
					}
				case protocol.HeardPartial:
					captions = append(captions, h)
				default:
					got = append(got, h.State)
				}
			}
			if s := strings.Join(got, " "); s != tc.states {
				t.Errorf("reports between open and the transcript: %q, want %q", s, tc.states)
			}
			// The words so far also go out as they grow (captions), eager or
			// not: each new, at most one every captionEvery.
			if len(captions) == 0 {
				t.Errorf("no partial report of the words so far")
			}
			for i, h := range captions {
				if i > 0 && (h.Text == captions[i-1].Text || h.End.Sub(captions[i-1].End) < captionEvery) {
					t.Errorf("partial %d %q at %v after %q at %v: repeated or sooner than %v", i, h.Text, h.End, captions[i-1].Text, captions[i-1].End, captionEvery)
				}
				if !strings.HasPrefix(tc.final, h.Text) {
					t.Errorf("partial %q is not the words so far of %q", h.Text, tc.final)
				}
			}
			if tc.states != "" && !strings.Contains(fmt.Sprint(handled), "reported") {
				t.Errorf("handled %v", handled)
			}
		})
	}
}

// The room is told a person began speaking at the first sound of their
// voice, before the VAD takes it for an utterance (min_utterance, 300 ms)
// — a robot granted just then waits, one that has just begun yields —
// and a burst that comes to nothing (a cough) is then reported dropped.
func TestEarToldAtTheFirstSound(t *testing.T) {
	speech := mictest.Speech(t, "", sentence)
	lead := make([]int16, 16000)
	first := 0
	for first < len(speech) && (speech[first] < 300 && speech[first] > -300) {
		first++
	}
	t.Run("a sentence", func(t *testing.T) {
		r := newEarRig(t)
		r.run(append(lead, speech...), 1500*time.Millisecond, nil)
		reports, _ := r.got()
		r.mu.Lock()
		defer r.mu.Unlock()
		if len(reports) != 1 || len(r.states) != 1 || r.states[0].State != protocol.HeardOpen || r.states[0].Utterance != reports[0].Utterance {
			t.Fatalf("reports %+v, states %+v: want one open, then its transcript", reports, r.states)
		}
		voice := r.started.Add(time.Second + time.Duration(first)*time.Second/16000)
		if after := r.statesAt[0].Sub(voice); after > 200*time.Millisecond {
			t.Errorf("the room was told %v after the voice began (the VAD takes an utterance 300 ms in)", after)
		}
	})
	t.Run("a cough", func(t *testing.T) {
		r := newEarRig(t)
		r.run(append(lead, speech[first:first+16*150]...), 1500*time.Millisecond, nil)
		reports, _ := r.got()
		r.mu.Lock()
		defer r.mu.Unlock()
		if len(reports) != 0 || len(r.states) != 2 || r.states[0].State != protocol.HeardOpen || r.states[1].State != protocol.HeardDropped ||
			r.states[0].Utterance != r.states[1].Utterance {
			t.Fatalf("reports %+v, states %+v: want open then dropped", reports, r.states)
		}
		if len(r.engine.Sessions()) != 0 {
			t.Errorf("a cough went to speech to text")
		}
	})
}
