package demo

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"unicode"

	"github.com/chorus-robotics/chorus/device/robot"
	"github.com/chorus-robotics/chorus/drivers/air"
	"github.com/chorus-robotics/chorus/drivers/audio"
	"github.com/chorus-robotics/chorus/drivers/tts/espeak"
	"github.com/chorus-robotics/chorus/runtime/protocol"
)

// voice is the demo's shared air: the robots speak and hear through it,
// and a person asks the opening line aloud.
type voice struct {
	srv     *air.Server
	grammar string
	line    string
	dir     string
	record  string
	cancel  context.CancelFunc
	done    chan error
	once    sync.Once
}

// startVoice starts the air (recording the room under out, when given)
// and writes the grammar of the phrases the robots expect to hear.
func startVoice(ctx context.Context, out, line string, log *slog.Logger) (*voice, error) {
	for _, bin := range []string{"espeak-ng", "pocketsphinx_continuous"} {
		if _, err := exec.LookPath(bin); err != nil {
			return nil, fmt.Errorf("chorus demo -voice needs %s: apt-get install espeak-ng pocketsphinx pocketsphinx-en-us", bin)
		}
	}
	dir, err := os.MkdirTemp("", "chorus-demo-voice-")
	if err != nil {
		return nil, err
	}
	v := &voice{line: line, dir: dir, grammar: filepath.Join(dir, "demo.gram"), done: make(chan error, 1)}
	// Pocketsphinx with a grammar of what the person may say is exact on
	// espeak-ng's voice; without one it is poor (README, "Hearing").
	gram := "#JSGF V1.0;\ngrammar demo;\npublic <utterance> = " + words(line) + " | hello robots what is the weather like today | goodbye robots;\n"
	if err := os.WriteFile(v.grammar, []byte(gram), 0o644); err != nil {
		return nil, err
	}
	if out != "" {
		abs, err := filepath.Abs(out)
		if err != nil {
			return nil, err
		}
		if err := os.MkdirAll(abs, 0o755); err != nil {
			return nil, err
		}
		v.record = filepath.Join(abs, "room.wav")
	}
	v.srv = &air.Server{ValidID: protocol.ValidIdentity, Listen: "127.0.0.1:0", Record: v.record, Log: log}
	actx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	v.cancel = cancel
	go func() { v.done <- v.srv.Run(actx) }()
	select {
	case <-v.srv.Ready():
	case err := <-v.done:
		cancel()
		return nil, fmt.Errorf("demo: the air: %w", err)
	}
	if v.srv.Addr() == "" {
		cancel()
		return nil, errors.New("demo: the air did not start")
	}
	return v, nil
}

// words is line as a grammar's phrase: lower case, no punctuation.
func words(line string) string {
	f := strings.FieldsFunc(strings.ToLower(line), func(r rune) bool { return !unicode.IsLetter(r) && r != '\'' })
	return strings.Join(f, " ")
}

// prepare makes a companion speak and hear through the air.
func (v *voice) prepare(c *robot.Config) {
	addr := v.srv.Addr()
	c.Drivers.Audio = robot.Audio{Kind: "air", Air: addr, SampleRate: c.Drivers.Audio.SampleRate}
	c.Drivers.Mic.Kind, c.Drivers.Mic.Air = "air", addr
	c.Hearing.Enabled = true
	c.Hearing.Ear.STT.Kind, c.Hearing.Ear.STT.Grammar = "pocketsphinx", v.grammar
}

// say has the person say the line into the air.
func (v *voice) say(ctx context.Context) error {
	p, err := (&espeak.Engine{}).Synthesize(ctx, v.line, "")
	if err != nil {
		return fmt.Errorf("demo: the person's voice (espeak-ng): %w", err)
	}
	p = audio.Resample(p, 16000)
	return air.Say(ctx, v.srv.Addr(), p.Samples, p.Rate)
}

// stop stops the air, which writes its recording, and returns the
// recording's path ("" without one).
func (v *voice) stop() string {
	v.once.Do(func() {
		v.cancel()
		<-v.done
		os.RemoveAll(v.dir)
	})
	return v.record
}
