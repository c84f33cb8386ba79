package bench

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/chorus-robotics/chorus/device/speak"
	"github.com/chorus-robotics/chorus/device/vision"
	"github.com/chorus-robotics/chorus/drivers/audio"
	"github.com/chorus-robotics/chorus/drivers/audio/null"
	"github.com/chorus-robotics/chorus/drivers/camera"
	"github.com/chorus-robotics/chorus/drivers/camera/testpattern"
	"github.com/chorus-robotics/chorus/drivers/tts"
	"github.com/chorus-robotics/chorus/runtime/bus"
	"github.com/chorus-robotics/chorus/runtime/protocol"
	"github.com/chorus-robotics/chorus/runtime/query"
	"github.com/chorus-robotics/chorus/runtime/topic"
)

// VisionRoundTrip runs a device with a w×h test-pattern camera and a
// companion that asks it for vision n times; each sample is from the
// query's publish to the result in the companion's hands.
func VisionRoundTrip(ctx context.Context, url string, w, h, n int) ([]time.Duration, error) {
	return VisionRoundTripOf(ctx, url, &testpattern.Source{Width: w, Height: h}, n)
}

// VisionRoundTripOf is VisionRoundTrip with the camera source src (a
// command camera, to compare with the test pattern).
func VisionRoundTripOf(ctx context.Context, url string, src camera.Source, n int) ([]time.Duration, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	id := strconv.FormatInt(time.Now().UnixNano(), 36)
	s := topic.New("")
	dev, err := bus.Dial(ctx, bus.Options{Broker: url, ClientID: "eye" + id, Username: "eye" + id})
	if err != nil {
		return nil, err
	}
	defer dev.Close()
	comp, err := bus.Dial(ctx, bus.Options{Broker: url, ClientID: "asker" + id, Username: "asker" + id})
	if err != nil {
		return nil, err
	}
	defer comp.Close()
	capture := &camera.Capture{Source: src, Interval: 100 * time.Millisecond}
	srv := &query.Server{Bus: dev, Scheme: s, Device: "eye" + id}
	srv.Handle(protocol.TypeVision, (&vision.Eye{Camera: capture}).Handle)
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel()
	wg.Add(2)
	go func() { defer wg.Done(); capture.Run(ctx) }()
	go func() { defer wg.Done(); srv.Serve(ctx) }()
	c := query.NewClient(comp, s, "asker"+id, query.ClientOptions{Timeout: 5 * time.Second})
	// Warm up: the first frame and the subscriptions.
	deadline := time.Now().Add(10 * time.Second)
	for {
		if _, err := c.Ask(ctx, "eye"+id, protocol.TypeVision, nil, 500*time.Millisecond); err == nil {
			break
		} else if time.Now().After(deadline) {
			return nil, fmt.Errorf("vision never answered: %w", err)
		}
	}
	out := make([]time.Duration, 0, n)
	for range n {
		start := time.Now()
		if _, err := c.Ask(ctx, "eye"+id, protocol.TypeVision, nil, 0); err != nil {
			return out, err
		}
		out = append(out, time.Since(start))
	}
	return out, nil
}

// FirstAudio speaks text n times with engine and returns, for each, the
// time from the call to the first PCM at the audio driver.
func FirstAudio(ctx context.Context, engine tts.Engine, text string, wholeText bool, n int) ([]time.Duration, error) {
	out := make([]time.Duration, 0, n)
	var first time.Duration
	s := &speak.Speaker{TTS: engine, Out: &null.Output{}, WholeText: wholeText, OnFirstAudio: func(d time.Duration) { first = d }}
	for range n {
		if _, err := s.Say(ctx, text, ""); err != nil {
			return out, err
		}
		out = append(out, first)
	}
	return out, nil
}

// FirstAudioOn speaks text n times with engine into out and returns, for
// each, the time from the call to the first PCM taken by out. Each
// utterance is stopped at its first audio: an output that plays in real
// time (a command) would otherwise take the whole text's duration per
// sample, and the figure is the start, not the end.
func FirstAudioOn(ctx context.Context, out audio.Output, engine tts.Engine, text string, n int) ([]time.Duration, error) {
	ds := make([]time.Duration, 0, n)
	var first time.Duration
	var s *speak.Speaker
	s = &speak.Speaker{TTS: engine, Out: out, OnFirstAudio: func(d time.Duration) {
		first = d
		s.Stop(true)
	}}
	for range n {
		first = 0
		_, err := s.Say(ctx, text, "")
		if first == 0 {
			if err == nil {
				err = errors.New("no audio")
			}
			return ds, fmt.Errorf("first audio on %T: %w", out, err)
		}
		ds = append(ds, first)
	}
	return ds, nil
}

// ThreeSentences is the benchmark text for FirstAudio.
const ThreeSentences = "Good morning, everyone. I looked out of the window and the sky is clear today. Shall we go for a walk in the park after breakfast?"
