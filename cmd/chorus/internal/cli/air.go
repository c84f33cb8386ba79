package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	"github.com/chorus-robotics/chorus/drivers/air"
	"github.com/chorus-robotics/chorus/drivers/audio"
	"github.com/chorus-robotics/chorus/runtime/protocol"
)

func init() {
	commands["air"] = command{"a shared acoustic space for tests and demos: air serve | air say (drivers/air)", runAir}
}

func runAir(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 || (args[0] != "serve" && args[0] != "say") {
		return errors.New("usage: chorus air serve -listen HOST:PORT [-attenuation 0.5] [-delay 10ms] | chorus air say -air HOST:PORT (-text TEXT [-voice en] | -wav FILE)")
	}
	if args[0] == "serve" {
		return airServe(ctx, args[1:], stdout, stderr)
	}
	return airSay(ctx, args[1:], stderr)
}

// airServe serves until ctx ends (SIGINT, SIGTERM), after printing the
// address it listens on as one line.
func airServe(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("air serve", stderr)
	listen := fs.String("listen", "127.0.0.1:0", "TCP address to listen on (port 0: a free one)")
	att := fs.Float64("attenuation", air.DefaultAttenuation, "gain of another robot's speaker at a mic (0 < a ≤ 1)")
	delay := fs.Duration("delay", air.DefaultDelay, "how late another robot's speaker is heard")
	level := fs.String("log", "info", "log level: debug, info, warn, error")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *att <= 0 || *att > 1 {
		return fmt.Errorf("-attenuation: must be above 0 and at most 1, got %v", *att)
	}
	if *delay < 0 || *delay > time.Second {
		return fmt.Errorf("-delay: must be from 0 to 1s, got %v", *delay)
	}
	if *delay == 0 {
		*delay = -1 // the server's "none"
	}
	s := &air.Server{ValidID: protocol.ValidIdentity, Listen: *listen, Attenuation: *att, Delay: *delay, Log: logger(stderr, *level)}
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	select {
	case <-s.Ready():
	case err := <-done:
		return err
	}
	if s.Addr() == "" {
		return <-done
	}
	fmt.Fprintln(stdout, s.Addr())
	return <-done
}

// airSay plays a sentence (espeak-ng) or a WAV file into the air as a
// person, and returns when it has played.
func airSay(ctx context.Context, args []string, stderr io.Writer) error {
	fs := newFlags("air say", stderr)
	addr := fs.String("air", "", "the air server's HOST:PORT (required)")
	text := fs.String("text", "", "what to say (espeak-ng speaks it)")
	voice := fs.String("voice", "en", "-text: the espeak-ng voice")
	wav := fs.String("wav", "", "a WAV file to play instead of -text")
	timeout := fs.Duration("timeout", 2*time.Minute, "give up after this long")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *addr == "" {
		return errors.New("-air: required: the air server's HOST:PORT")
	}
	if (*text == "") == (*wav == "") {
		return errors.New("give one of -text or -wav")
	}
	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()
	path := *wav
	if *text != "" {
		dir, err := os.MkdirTemp("", "chorus-air-say-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(dir)
		path = filepath.Join(dir, "say.wav")
		if out, err := exec.CommandContext(ctx, "espeak-ng", "-v", *voice, "-w", path, *text).CombinedOutput(); err != nil {
			return fmt.Errorf("espeak-ng: %w: %s", err, out)
		}
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	pcm, err := audio.DecodeWAV(b)
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	// Say resamples to the air's rate.
	return air.Say(ctx, *addr, pcm.Samples, pcm.Rate)
}
