package ear

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/chorus-robotics/chorus/runtime/metrics"

	"github.com/chorus-robotics/chorus/drivers/voiceid"
	"github.com/chorus-robotics/chorus/drivers/voiceid/voiceidtest"
	"github.com/chorus-robotics/chorus/runtime/memory"
	"github.com/chorus-robotics/chorus/runtime/protocol"
)

// voiceRig is an ear rig whose robot knows mia's voice (three of her
// sentences) through the fake embedding service.
func voiceRig(t testing.TB) (*Voice, *voiceidtest.Server, *memory.Voices) {
	srv := voiceidtest.New(t)
	prints, err := memory.OpenVoices(t.TempDir(), "kyoko", memory.VoiceLimits{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { prints.Close() })
	for i, s := range voiceidtest.Sentences[3:] {
		pcm := voiceidtest.Say(t, voiceidtest.Mia, s, uint64(50+i))
		if err := prints.Add("mia", voiceidtest.Model, time.Now(), voiceidtest.Spectral(pcm, 16000)); err != nil {
			t.Fatal(err)
		}
	}
	// The fake service computes its embedding in this process, slowly
	// under -race on a loaded machine: the wait is generous but where a
	// test is about it (TestEarVoiceFaults).
	v := &Voice{Embedder: &voiceid.LocalAI{URL: srv.URL, Name: voiceidtest.Model}, Prints: prints, Wait: 3 * time.Second,
		People: map[string][]string{"mia": nil, "sam": {"Samuel"}}}
	return v, srv, prints
}

// say has v say text to an ear that identifies voices with voice, the
// STT answering text; it returns the report and the rig.
func say(t *testing.T, voice *Voice, v voiceidtest.Voice, text string, seed uint64) (protocol.Heard, *earRig) {
	t.Helper()
	r := newEarRig(t)
	r.voice = voice
	r.engine.Transcript.Text = text
	r.engine.Delay = 100 * time.Millisecond
	lead := make([]int16, 8000)
	r.run(append(lead, voiceidtest.Say(t, v, text, seed)...), time.Second, nil)
	reports, handled := r.got()
	if len(reports) != 1 {
		t.Fatalf("%s said %q: reports %+v, handled %v", v.Name, text, reports, handled)
	}
	// Every report the ear sends decodes: what it says of the voice is
	// the protocol's.
	b, _ := json.Marshal(reports[0])
	if _, err := protocol.DecodeHeard(b, 0); err != nil {
		t.Fatalf("the report does not decode: %v\n%s", err, b)
	}
	return reports[0], r
}

// A known voice is reported as its person, sure; a voice nobody enrolled
// as unknown; the request goes out beside the transcript, so the report
// is not later for it.
func TestEarSaysWhoseVoice(t *testing.T) {
	voice, srv, _ := voiceRig(t)
	h, _ := say(t, voice, voiceidtest.Mia, voiceidtest.Sentences[0], 1)
	if v := h.Voice; v == nil || v.Person != "mia" || !v.Sure || v.Distance < 0 || v.Distance > DefaultVoiceSure {
		t.Fatalf("mia's voice: %+v", v)
	}
	h, _ = say(t, voice, voiceidtest.Kid, voiceidtest.Sentences[1], 2)
	if v := h.Voice; v == nil || v.Person != "" || v.Sure || v.Distance <= DefaultVoiceThreshold {
		t.Fatalf("an unknown voice: %+v", v)
	}
	if srv.Calls() != 2 || len(srv.Refused()) != 0 {
		t.Fatalf("the service had %d calls, refused %v", srv.Calls(), srv.Refused())
	}
}

// The service down, answering garbage or slower than the wait: the
// report goes out at its time, its voice unknown, counted.
func TestEarVoiceFaults(t *testing.T) {
	for _, tc := range []struct {
		mode  string
		delay time.Duration
		event string
	}{
		{"down", 0, "voice_error"},
		{"garbage", 0, "voice_error"},
		{"", 10 * time.Second, "voice_late"},
	} {
		voice, srv, _ := voiceRig(t)
		voice.Wait = DefaultVoiceWait
		srv.Mode(tc.mode)
		srv.Delay(tc.delay)
		h, r := say(t, voice, voiceidtest.Mia, voiceidtest.Sentences[0], 1)
		r.mu.Lock()
		took := r.reportsAt[0].Sub(h.End)
		r.mu.Unlock()
		// The transcript takes 100 ms; the voice adds at most its wait
		// (150 ms), with room for a loaded machine — never the service's 10 s.
		if took > 3*time.Second {
			t.Errorf("%s: the report came %v after the speech", tc.event, took)
		}
		if v := h.Voice; v == nil || v.Person != "" || v.Distance != protocol.NoDistance {
			t.Errorf("%s: the voice %+v, want unknown with no distance", tc.event, v)
		}
		if n := metrics.Value(r.m.Hearing.WithLabelValues(tc.event)); n != 1 {
			t.Errorf("%s counted %v times", tc.event, n)
		}
	}
}

// Enrolment by voice: the request and the next utterances of the same
// voice make its voiceprint (another voice between them is not part of
// it); then the voice is known. A name not among the room's people is
// refused.
func TestEarEnrolsByVoice(t *testing.T) {
	voice, _, prints := voiceRig(t)
	voice.Enrol = 3
	steps := []struct {
		who    voiceidtest.Voice
		text   string
		enrol  string // person/got, "" none
		person string
	}{
		{voiceidtest.Sam, "Kyoko, remember my voice, I'm Samuel.", "sam/1", ""},
		{voiceidtest.Mia, "I like green tea in the morning.", "", "mia"},
		{voiceidtest.Sam, "The weather is nice today, isn't it?", "sam/2", ""},
		{voiceidtest.Sam, "I have a cat called Momo.", "sam/3", "sam"},
		{voiceidtest.Sam, "What do you remember about me?", "", "sam"},
		{voiceidtest.Kid, "Remember my voice, I'm Carol.", "/0", ""},
		// Another voice may not take sam's over by saying his name.
		{voiceidtest.Kid, "Remember my voice, I'm Sam.", "sam/0 taken", ""},
		{voiceidtest.Kid, "The weather is nice today, isn't it?", "", ""},
	}
	for i, s := range steps {
		h, _ := say(t, voice, s.who, s.text, uint64(10+i))
		v := h.Voice
		got := ""
		if v.Enrol != nil {
			got = v.Enrol.Person + "/" + string(rune('0'+v.Enrol.Got))
			if v.Enrol.Taken {
				got += " taken"
			}
			if v.Enrol.Need != 3 {
				t.Errorf("step %d: need %d", i, v.Enrol.Need)
			}
		}
		if got != s.enrol || v.Person != s.person {
			t.Fatalf("step %d (%s: %q): enrol %q, voice %q (%+v); want %q, %q", i, s.who.Name, s.text, got, v.Person, v, s.enrol, s.person)
		}
	}
	if l := prints.List(); len(l) != 2 || l[1].Person != "sam" || l[1].Samples != 3 {
		t.Fatalf("voiceprints: %+v", l)
	}
	h, _ := say(t, voice, voiceidtest.Sam, "I like green tea in the morning.", 40)
	if h.Voice.Person != "sam" || !h.Voice.Sure {
		t.Fatalf("sam's voice after another tried to take it: %+v", h.Voice)
	}
}
