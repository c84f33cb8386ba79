//go:build unix

package daemon

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/chorus-robotics/chorus/drivers/mic/mictest"
	"github.com/chorus-robotics/chorus/drivers/stt/wyoming/wyomingtest"
	"github.com/chorus-robotics/chorus/runtime/bus/bustest"
	"github.com/chorus-robotics/chorus/runtime/protocol"
)

const robotsGrammar = `#JSGF V1.0;
grammar robots;
public <utterance> = hello robots what is the weather like today
                   | hello robots what time is it
                   | goodbye robots;
`

// A robot that hears (issue 21): a person's spoken sentence (espeak-ng)
// in its microphone becomes, through the VAD and the real pocketsphinx,
// one Message from the person in the room, which the room then answers;
// the same through a Wyoming server that checks what it receives.
func TestDeviceHearsAPerson(t *testing.T) {
	t.Run("pocketsphinx", func(t *testing.T) {
		mictest.Need(t, "pocketsphinx_continuous")
		hearsAPerson(t, func(gram string) string { return "{kind: pocketsphinx, grammar: " + gram + "}" })
	})
	t.Run("wyoming", func(t *testing.T) {
		srv := &wyomingtest.Server{Delay: 200 * time.Millisecond, Text: func(samples, rate int) string {
			if rate != 16000 || samples < 2*16000 {
				return "" // not the sentence
			}
			return "hello robots what is the weather like today"
		}}
		addr, err := srv.Start()
		if err != nil {
			t.Fatal(err)
		}
		defer srv.Close()
		hearsAPerson(t, func(string) string { return `{kind: wyoming, url: "tcp://` + addr + `"}` })
		if p := srv.Problems(); len(p) > 0 {
			t.Fatalf("the Wyoming server saw: %v", p)
		}
		if n := len(srv.Utterances()); n != 1 {
			t.Fatalf("the Wyoming server heard %d utterances, want the one sentence", n)
		}
	})
}

func hearsAPerson(t *testing.T, sttConf func(grammar string) string) {
	dir := t.TempDir()
	speech := mictest.SpeechWAV(t, "", "hello robots, what is the weather like today?")
	wav := filepath.Join(dir, "room.wav")
	if out, err := exec.Command("sox", speech, wav, "pad", "1", "3").CombinedOutput(); err != nil {
		t.Fatalf("sox pad: %v: %s", err, out)
	}
	gram := filepath.Join(dir, "robots.gram")
	if err := os.WriteFile(gram, []byte(robotsGrammar), 0o644); err != nil {
		t.Fatal(err)
	}
	br := bustest.StartEmbedded(t, bustest.Options{})
	yaml := fmt.Sprintf(botYAML+`drivers:
  audio: {kind: null}
  tts: {kind: tone}
  mic: {kind: file, path: %s}
hearing:
  enabled: true
  user: guest
  stt: %s
http: {listen: "off"}
`, br.URL(), wav, sttConf(gram))
	ctx := context.Background()
	obs, msgs, closeWatch := watchLab(t, br.URL())
	defer closeWatch()
	if err := obs.OnGrant(ctx, func(g protocol.TurnGrant) { t.Logf("grant %+v", g) }); err != nil {
		t.Fatal(err)
	}
	if err := obs.OnState(ctx, func(s protocol.State) { t.Logf("state %+v", s.Params) }); err != nil {
		t.Fatal(err)
	}
	_, stop, _ := start(t, load(t, yaml))
	defer stop()
	var heard protocol.Message
	deadline := time.After(20 * time.Second)
	for heard.Params.ID == "" {
		select {
		case m := <-msgs:
			if m.Params.From == "guest" {
				heard = m
			}
		case <-deadline:
			t.Fatal("the person's sentence never became a Message")
		}
	}
	p := heard.Params
	if p.Message != "hello robots what is the weather like today" || p.Metadata[protocol.MetaSource] != protocol.SourceVoice ||
		p.Metadata[protocol.MetaHeardBy] != "bot" {
		t.Fatalf("heard %+v", p)
	}
	for {
		select {
		case m := <-msgs:
			if m.Params.From == "bot" {
				return // the room answered the person
			}
			if m.Params.From == "guest" {
				t.Fatalf("the sentence became a second Message: %+v", m.Params)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("the robot did not answer the person")
		}
	}
}
