package system

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chorus-robotics/chorus/drivers/voiceid/voiceidtest"
	"github.com/chorus-robotics/chorus/runtime/bus/bustest"
	"github.com/chorus-robotics/chorus/runtime/protocol"
	"github.com/chorus-robotics/chorus/runtime/topic"
)

// Who is speaking, from the outside (issue 41): a robot (chorusd) hears a
// shared air through its microphone and the real pocketsphinx; a fake
// LocalAI embedding service computes each utterance's embedding from
// the audio it receives (voiceidtest.Spectral). Two people with
// different voices (espeak-ng, over room noise) are enrolled — sam by
// command (`chorus voice enroll` with WAVs), mia by voice ("remember my
// voice, I am mia" and two more sentences) — and tell the robot facts;
// each is recalled to their own voice only, a third voice gets nobody's,
// and sam's "forget me" leaves mia's facts and voiceprint.

const voiceGrammar = `#JSGF V1.0;
grammar voices;
public <utterance> = my name is sam | my name is mia
                   | i like green tea | i like black coffee | i like red wine
                   | what do you remember about me
                   | please forget me
                   | remember my voice i am mia
                   | the weather is nice today
                   | good morning robots;
`

func TestHearingWhoIsSpeaking(t *testing.T) {
	needHearing(t)
	mictestNeedSox(t)
	srv := voiceidtest.New(t)
	o := newOutside(t, bustest.Options{Scheme: topic.New("").WithVoice("lab", "user").WithPeople("lab", []string{"mia", "sam"}),
		Rosters: map[string][]string{"lab": {"ann"}}})
	o.members = []string{"ann"}
	w := o.watch("chorus/rooms/lab/messages/+", "chorus/rooms/lab/turns", "chorus/rooms/lab/presence/+",
		"chorus/rooms/lab/floor/leader", "chorus/rooms/lab/heard/+", "chorus/rooms/lab/speaking/+")
	defer w.dumpOnFailure(t)
	airAddr := o.air()
	gram := filepath.Join(o.dir, "voices.gram")
	os.WriteFile(gram, []byte(voiceGrammar), 0o644)
	people := "people: {sam: [Samuel], mia: []}"
	o.floorMore = "hearing: {" + people + "}\n"
	o.floor("floor-box")
	memDir := filepath.Join(o.dir, "memory")
	o.companionWith("ann", false, part{
		brain:   "{provider: rule, closing_after: 2}",
		drivers: `{audio: {kind: air, air: "` + airAddr + `"}, tts: {kind: espeak-ng}, mic: {kind: air, air: "` + airAddr + `"}}`,
		// wait: 2s — the fake service computes its embeddings in the test
		// process, slowly under -race on a loaded machine.
		more: fmt.Sprintf("hearing: {enabled: true, stt: {kind: pocketsphinx, grammar: %s}, %s, voice: {kind: localai, url: %q, model: %s, wait: 2s}}\n", gram, people, srv.URL, voiceidtest.Model) +
			fmt.Sprintf("memory: {dir: %q, rest_after: 1s, operators: [root]}\n", memDir),
	})
	w.waitOnline(t, "ann")
	w.waitFor(t, 5*time.Second, "the floor's claim", func(l line) bool {
		return l.topic == "chorus/rooms/lab/floor/leader" && strings.Contains(l.payload, `"online":true`)
	})

	// sam, by command: three recordings of his voice.
	var wavs []string
	for i, s := range voiceidtest.Sentences[3:] {
		wavs = append(wavs, voiceidtest.SayWAV(t, voiceidtest.Sam, s, uint64(100+i)))
	}
	if out, err := o.voice("root", append([]string{"enroll", "-device", "dev-ann", "-person", "sam", "-config", filepath.Join(o.dir, "ann.yaml")}, wavs...)...); err != nil ||
		!strings.Contains(out, "sam\t3 samples") {
		t.Fatalf("chorus voice enroll: %v\n%s", err, out)
	}

	seed := uint64(1)
	type heardAs struct{ who, from string }
	var attributions []heardAs // every sentence after the enrolments
	say := func(v voiceidtest.Voice, text string) protocol.Message {
		t.Helper()
		seed++
		wav := voiceidtest.SayWAV(t, v, text, seed)
		t0 := time.Now()
		if out, err := exec.Command(o.chorus, "air", "say", "-air", airAddr, "-wav", wav).CombinedOutput(); err != nil {
			t.Fatalf("chorus air say: %v\n%s", err, out)
		}
		want := strings.ToLower(strings.NewReplacer(",", "", ".", "", "?", "", "!", "").Replace(text))
		heard := w.waitFor(t, 15*time.Second, fmt.Sprintf("%s's %q as a Message", v.Name, text), func(l line) bool {
			return strings.HasPrefix(l.topic, "chorus/rooms/lab/messages/") && strings.Contains(l.payload, `"message":"`+want+`"`) && l.at.After(t0)
		})
		// The robot answers aloud; the next sentence comes after it.
		w.waitFor(t, 30*time.Second, "the robot's answer, said", func(l line) bool {
			return l.topic == "chorus/rooms/lab/speaking/ann" && strings.Contains(l.payload, `"speaking":false`) && l.at.After(heard.at)
		})
		var m protocol.Message
		for _, x := range w.messages() {
			if x.Params.Message == want && x.Params.Metadata[protocol.MetaSource] == protocol.SourceVoice {
				m = x
			}
		}
		w.quiet(t, 20*time.Second)
		time.Sleep(600 * time.Millisecond) // the room's tail
		if m.Params.Metadata[protocol.MetaVoiceEnrol] == nil {
			attributions = append(attributions, heardAs{v.Name, m.Params.From})
		}
		return m
	}
	answer := func(after protocol.Message) string {
		msgs := w.messages()
		for i, m := range msgs {
			if m.Params.ID == after.Params.ID {
				for _, r := range msgs[i+1:] {
					if r.Params.From == "ann" {
						return r.Params.Message
					}
				}
			}
		}
		return ""
	}

	// mia, by voice.
	for i, s := range []string{"Remember my voice, I am Mia.", "Good morning robots.", "The weather is nice today."} {
		m := say(voiceidtest.Mia, s)
		e, _ := m.Params.Metadata[protocol.MetaVoiceEnrol].(map[string]any)
		if e == nil || e["person"] != "mia" || e["got"] != float64(i+1) {
			t.Fatalf("mia's enrolment, sentence %d: %+v", i+1, m.Params)
		}
		if i == 2 && !strings.Contains(answer(m), "I know your voice now") {
			t.Fatalf("the end of mia's enrolment was answered %q", answer(m))
		}
	}

	// Facts by voice; a voice nobody enrolled.
	attributed, wrong, told := 0, 0, 0
	for _, s := range []struct {
		v    voiceidtest.Voice
		text string
		from string
	}{
		{voiceidtest.Sam, "My name is Sam.", "sam"},
		{voiceidtest.Mia, "My name is Mia.", "mia"},
		{voiceidtest.Sam, "I like green tea.", "sam"},
		{voiceidtest.Mia, "I like black coffee.", "mia"},
		{voiceidtest.Kid, "I like red wine.", "user"},
	} {
		m := say(s.v, s.text)
		told++
		switch {
		case m.Params.From == s.from:
			attributed++
		case m.Params.From != "user":
			wrong++
		}
		want := protocol.VoiceSure
		if s.from == "user" {
			want = protocol.VoiceUnknown
		}
		if m.Params.From != s.from || m.Params.Metadata[protocol.MetaVoice] != want {
			t.Errorf("%s said %q: a Message from %s (%v), want %s", s.v.Name, s.text, m.Params.From, m.Params.Metadata[protocol.MetaVoice], s.from)
		}
	}
	t.Logf("attribution: %d of %d sentences to their speaker, %d to a wrong person", attributed, told, wrong)
	if wrong > 0 {
		t.Fatalf("%d sentences attributed to the wrong person", wrong)
	}

	// Each is recalled to their own voice only; the third voice to none.
	for _, c := range []struct {
		v          voiceidtest.Voice
		want, not_ []string
	}{
		{voiceidtest.Sam, []string{"name is sam", "green tea"}, []string{"mia", "coffee", "wine"}},
		{voiceidtest.Mia, []string{"name is mia", "black coffee"}, []string{"sam", "tea", "wine"}},
		{voiceidtest.Kid, []string{"not sure who you are"}, []string{"sam", "mia", "tea", "coffee", "wine"}},
	} {
		said := strings.ToLower(answer(say(c.v, "What do you remember about me?")))
		for _, x := range c.want {
			if !strings.Contains(said, x) {
				t.Errorf("%s's recall %q lacks %q", c.v.Name, said, x)
			}
		}
		for _, x := range c.not_ {
			if strings.Contains(said, x) {
				t.Errorf("%s's recall %q tells %q", c.v.Name, said, x)
			}
		}
	}

	// sam's "forget me": his facts and voiceprint go; mia's stay.
	say(voiceidtest.Sam, "Please forget me.")
	deadline := time.Now().Add(10 * time.Second)
	var voices, facts string
	for time.Now().Before(deadline) {
		voices, _ = o.voice("root", "list", "-device", "dev-ann")
		facts, _ = o.memory("root", "list", "-device", "dev-ann")
		if !strings.Contains(voices, "\tsam\t") && !strings.Contains(facts, "\tsam\t") {
			break
		}
		time.Sleep(300 * time.Millisecond)
	}
	if strings.Contains(voices, "\tsam\t") || !strings.Contains(voices, "\tmia\t3 samples") {
		t.Fatalf("after sam's forget me, the voices:\n%s", voices)
	}
	if strings.Contains(facts, "\tsam\t") || !strings.Contains(facts, "black coffee") || strings.Contains(facts, "wine") {
		t.Fatalf("after sam's forget me, the facts:\n%s", facts)
	}
	data, _ := os.ReadFile(filepath.Join(memDir, "ann.voices"))
	if strings.Contains(string(data), `"sam"`) {
		t.Fatal("sam's voiceprint is still in the file")
	}
	if r := srv.Refused(); len(r) > 0 {
		t.Fatalf("the embedding service refused: %v", r)
	}
	right, wrongs := 0, 0
	for _, a := range attributions {
		want := a.who
		if a.who == voiceidtest.Kid.Name {
			want = "user"
		}
		switch {
		case a.from == want:
			right++
		case a.from != "user":
			wrongs++
		}
	}
	t.Logf("every sentence after the enrolments: %d of %d attributed right (the unknown voice as the hearing user), %d to a wrong person",
		right, len(attributions), wrongs)
	if wrongs > 0 || right < len(attributions)*95/100 {
		t.Fatalf("attribution: %d right, %d wrong of %d", right, wrongs, len(attributions))
	}
}

// voice runs chorus voice as user.
func (o *outside) voice(user string, args ...string) (string, error) {
	all := append([]string{args[0], "-broker", o.url, "-as", user, "-password-env", "PW", "-timeout", "10s"}, args[1:]...)
	cmd := exec.Command(o.chorus, append([]string{"voice"}, all...)...)
	cmd.Env = append(os.Environ(), "PW="+password(user), "CHORUS_MQTT_PASSWORD="+password("dev-ann"))
	out, err := cmd.CombinedOutput()
	return string(out), err
}

func mictestNeedSox(t *testing.T) {
	if _, err := exec.LookPath("sox"); err != nil {
		t.Skip("sox not installed")
	}
}
