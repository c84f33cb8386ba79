package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/chorus-robotics/chorus/device/robot"
	"github.com/chorus-robotics/chorus/drivers/audio"
	"github.com/chorus-robotics/chorus/drivers/voiceid"
	"github.com/chorus-robotics/chorus/runtime/protocol"
)

func init() {
	commands["voice"] = command{"see, enrol or erase the voices robots know people by: " + voiceUsage, runVoice}
}

const voiceUsage = "voice list|forget|enroll [-device D] [-person P] [-config ROBOT.yaml FILE.wav…]"

// runVoice asks devices about their voiceprints (docs/hearing.md, "Who is
// speaking"), as the identity -as: list, forget a person's, or enrol a
// person from recordings of their voice, whose embeddings this command
// computes with the speaker-embedding service of -config's
// hearing.voice (the robots' own model: embeddings of another are not
// compared).
func runVoice(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if askedForHelp(args, stdout, voiceUsage) {
		return flag.ErrHelp
	}
	if len(args) == 0 {
		return errors.New("want an operation: chorus " + voiceUsage)
	}
	ops := map[string]string{"list": protocol.MemoryVoices, "forget": protocol.MemoryForgetVoice, "enroll": protocol.MemoryEnrolVoice}
	op, ok := ops[args[0]]
	if !ok {
		return fmt.Errorf("unknown operation %q: want list, forget or enroll", args[0])
	}
	fs, rf := newRoomFlags("voice "+args[0], stderr)
	devices := fs.String("device", "", "the device(s) to ask, comma-separated (default: every robot online on the broker, or in -room)")
	person := fs.String("person", "", "whose voice (list: default everyone's as an operator, else your own)")
	cfgPath := fs.String("config", "", "enroll: a robot's config, whose hearing.voice service computes the embeddings")
	timeout := fs.Duration("timeout", 10*time.Second, "give up on a device after this long")
	if err := fs.Parse(args[1:]); err != nil {
		return err
	}
	req := protocol.MemoryRequest{Op: op, Person: *person}
	if op != protocol.MemoryVoices && *person == "" {
		return fmt.Errorf("%s needs -person", args[0])
	}
	if op == protocol.MemoryEnrolVoice {
		var err error
		if req.Model, req.Embeddings, err = embedFiles(ctx, *cfgPath, fs.Args()); err != nil {
			return err
		}
	} else if fs.NArg() > 0 {
		return fmt.Errorf("%s takes no files (got %q)", args[0], fs.Args())
	}
	return askDevices(ctx, rf, *devices, *timeout, stderr, req, func(dev string, a protocol.MemoryAnswer) error {
		switch op {
		case protocol.MemoryForgetVoice:
			fmt.Fprintf(stdout, "%s: erased %d embeddings\n", dev, a.Forgotten)
			return nil
		case protocol.MemoryVoices:
			if len(a.Voices) == 0 {
				fmt.Fprintf(stdout, "%s: no voices known\n", dev)
			}
		}
		for _, v := range a.Voices {
			fmt.Fprintf(stdout, "%s\t%s\t%d samples\t%d dims\t%s\t%s\n", dev, v.Person, v.Samples, v.Dims, v.Model, v.Updated.Format(time.DateTime))
		}
		return nil
	})
}

// embedFiles computes the embedding of each WAV file with the service of
// the config at path.
func embedFiles(ctx context.Context, path string, files []string) (string, [][]float32, error) {
	if path == "" {
		return "", nil, errors.New("enroll needs -config: a robot's config, whose hearing.voice computes the embeddings")
	}
	if len(files) == 0 || len(files) > protocol.MaxEnrolEmbeddings {
		return "", nil, fmt.Errorf("enroll takes 1 to %d WAV files of the person's voice (a few seconds each), got %d", protocol.MaxEnrolEmbeddings, len(files))
	}
	c, err := robot.Load(path)
	if err != nil {
		return "", nil, err
	}
	v := c.Hearing.Ear.Voice
	if !v.On() {
		return "", nil, fmt.Errorf("%s: hearing.voice is off: no service computes embeddings", path)
	}
	key, err := v.APIKey()
	if err != nil {
		return "", nil, err
	}
	e := &voiceid.LocalAI{URL: v.URL, Name: v.Model, APIKey: key}
	var out [][]float32
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return "", nil, err
		}
		pcm, err := audio.DecodeWAV(b)
		if err != nil {
			return "", nil, fmt.Errorf("%s: %w", f, err)
		}
		ectx, cancel := context.WithTimeout(ctx, 30*time.Second)
		vec, err := e.Embed(ectx, pcm.Samples, pcm.Rate)
		cancel()
		if err != nil {
			return "", nil, fmt.Errorf("%s: %w", f, err)
		}
		out = append(out, vec)
	}
	return v.Model, out, nil
}
