// Package demo runs a whole room in one process with no hardware and no API
// key: the embedded broker, the floor and every companion of a folder of
// device configs (firmware-configs/demo), with WAV-file audio and espeak-ng
// (or the tone generator). It injects a user message, prints the live
// transcript, and stops when the room rests at terminal or after a number of
// turns.
package demo

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"time"

	"github.com/chorus-robotics/chorus/device/daemon"
	"github.com/chorus-robotics/chorus/runtime/broker"
	"github.com/chorus-robotics/chorus/runtime/bus"
	"github.com/chorus-robotics/chorus/runtime/config"
	"github.com/chorus-robotics/chorus/runtime/protocol"
	"github.com/chorus-robotics/chorus/runtime/room"
	"github.com/chorus-robotics/chorus/runtime/topic"
	"github.com/chorus-robotics/chorus/runtime/transcript"
)

// Options configure a demo run.
type Options struct {
	Dir     string        // folder of device configs
	Out     string        // where each companion's utterances are written as WAV
	Turns   int           // stop after this many companion turns; 0 = run to terminal
	Timeout time.Duration // give up after this long
	Message string        // the user's opening line
	W       io.Writer     // transcript
	Log     *slog.Logger
}

// Summary is how a demo run ended.
type Summary struct {
	Turns    int
	Terminal bool // every voter was at terminal when the room rested
	Rested   bool
	Elapsed  time.Duration
	Audio    []string // WAV files written
}

// Run runs the demo room until it rests, Turns is reached, or Timeout.
func Run(ctx context.Context, o Options) (Summary, error) {
	start := time.Now()
	if o.Timeout <= 0 {
		o.Timeout = 60 * time.Second
	}
	if o.Message == "" {
		o.Message = "Hello everyone! What did you do today?"
	}
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	cfgs, err := loadAll(o.Dir)
	if err != nil {
		return Summary{}, err
	}
	ctx, cancel := context.WithTimeout(ctx, o.Timeout)
	defer cancel()

	roomName := cfgs[0].Room.Name
	s := topic.Scheme{Prefix: cfgs[0].MQTT.Prefix, FloorIDs: cfgs[0].MQTT.FloorIDs}.WithRoster(roomName, cfgs[0].Room.Members)
	// mochi logs every client's disconnect as a warning: keep its log to errors.
	quiet := slog.New(errorsOnly{o.Log.Handler()})
	br, err := broker.Start(ctx, broker.Config{Addr: "127.0.0.1:0", AllowAnonymous: true, Scheme: s, Logger: quiet})
	if err != nil {
		return Summary{}, err
	}
	defer br.Close()
	fmt.Fprintf(o.W, "chorus demo: room %q, %d devices, embedded broker on %s\n", roomName, len(cfgs), br.Addr())

	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel()
	var companions []string
	errc := make(chan error, len(cfgs))
	readyc := make(chan struct{}, len(cfgs))
	for _, c := range cfgs {
		c.MQTT.Embedded.Enabled = false
		c.MQTT.Broker = br.URL()
		c.HTTP.Listen = "off"
		if c.Companion != nil {
			companions = append(companions, c.Companion.ID)
			if o.Out != "" {
				c.Drivers.Audio.Kind = "wav"
				c.Drivers.Audio.Dir, _ = filepath.Abs(filepath.Join(o.Out, c.Companion.ID))
				// Only this run's utterances stay in the folder.
				old, _ := filepath.Glob(filepath.Join(c.Drivers.Audio.Dir, "*.wav"))
				for _, f := range old {
					os.Remove(f)
				}
			}
		}
		d, err := daemon.New(c, daemon.Options{Log: o.Log.With("device", c.Device.ID)})
		if err != nil {
			return Summary{}, fmt.Errorf("%s: %w", c.Path(), err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := d.Run(ctx, func() { readyc <- struct{}{} }); err != nil {
				errc <- fmt.Errorf("%s: %w", c.Device.ID, err)
			}
		}()
	}
	for range cfgs {
		select {
		case <-readyc:
		case err := <-errc:
			return Summary{}, err
		case <-ctx.Done():
			return Summary{}, fmt.Errorf("devices not ready: %w", ctx.Err())
		}
	}

	// The observer is also the user who opens the conversation.
	ub, err := bus.Dial(ctx, bus.Options{Broker: br.URL(), ClientID: "demo-user", Username: "user"})
	if err != nil {
		return Summary{}, err
	}
	defer ub.Close()
	r := room.New(ub, s, roomName, o.Log, nil)
	present := make(chan string, 64)
	if err := r.OnPresence(ctx, func(p room.PresenceEvent) {
		if p.Presence.Online {
			select { // a bus handler never blocks
			case present <- p.ID:
			default:
			}
		}
	}); err != nil {
		return Summary{}, err
	}
	seen := map[string]bool{}
	for len(seen) < len(companions) {
		select {
		case id := <-present:
			seen[id] = true
		case <-ctx.Done():
			return Summary{}, fmt.Errorf("companions not present (%v of %v): %w", seen, companions, ctx.Err())
		}
	}
	events := make(chan transcript.Event, 256)
	p := &transcript.Printer{W: o.W}
	if err := p.Follow(ctx, r, func(e transcript.Event) {
		select { // a bus handler never blocks
		case events <- e:
		default:
		}
	}); err != nil {
		return Summary{}, err
	}
	time.Sleep(100 * time.Millisecond) // let every companion's subscriptions settle
	if err := r.SendMessage(ctx, protocol.NewMessage(protocol.NewID(), "user", nil, o.Message, "")); err != nil {
		return Summary{}, err
	}

	var sum Summary
	heard := map[string]bool{}
	restOn := "" // the message a rest grant answered; it may arrive after the grant
	for done := false; !done; {
		select {
		case e := <-events:
			switch {
			case e.Message != nil:
				heard[e.Message.Params.ID] = true
				if e.Message.Params.From != "user" {
					sum.Turns++
					if o.Turns > 0 && sum.Turns >= o.Turns {
						done = true
					}
				}
			case e.Grant != nil && e.Grant.Speaker == nil:
				sum.Rested, sum.Terminal = true, len(e.Grant.Votes) > 0
				for _, v := range e.Grant.Votes {
					if v.Closing != protocol.ClosingTerminal {
						sum.Terminal = false
					}
				}
				restOn = e.Grant.MessageID
			}
			if restOn != "" && heard[restOn] {
				done = true
			}
		case err := <-errc:
			return sum, err
		case <-ctx.Done():
			return sum, fmt.Errorf("demo did not finish within %v: %w", o.Timeout, ctx.Err())
		}
	}
	cancel()
	wg.Wait()
	sum.Elapsed = time.Since(start)
	if o.Out != "" {
		sum.Audio, _ = filepath.Glob(filepath.Join(o.Out, "*", "*.wav"))
	}
	return sum, nil
}

func loadAll(dir string) ([]*config.Config, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil {
		return nil, err
	}
	sort.Strings(files)
	if len(files) == 0 {
		return nil, fmt.Errorf("demo: no *.yaml device configs in %s", dir)
	}
	var out []*config.Config
	var errs []error
	for _, f := range files {
		c, err := config.Load(f)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		out = append(out, c)
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	for _, c := range out[1:] {
		if c.Room.Name != out[0].Room.Name {
			return nil, fmt.Errorf("demo: %s is in room %q, %s in %q", c.Path(), c.Room.Name, out[0].Path(), out[0].Room.Name)
		}
	}
	return out, nil
}

// FindDir returns the demo config folder: the given one, or
// firmware-configs/demo found from the working directory up.
func FindDir(dir string) string {
	if dir != "" {
		return dir
	}
	wd, _ := os.Getwd()
	for d := wd; ; d = filepath.Dir(d) {
		p := filepath.Join(d, "firmware-configs", "demo")
		if st, err := os.Stat(p); err == nil && st.IsDir() {
			return p
		}
		if filepath.Dir(d) == d {
			return filepath.Join("firmware-configs", "demo")
		}
	}
}

// errorsOnly passes on records at error level and above.
type errorsOnly struct{ slog.Handler }

func (h errorsOnly) Enabled(ctx context.Context, l slog.Level) bool {
	return l >= slog.LevelError && h.Handler.Enabled(ctx, l)
}

func (h errorsOnly) WithAttrs(a []slog.Attr) slog.Handler { return errorsOnly{h.Handler.WithAttrs(a)} }
func (h errorsOnly) WithGroup(n string) slog.Handler      { return errorsOnly{h.Handler.WithGroup(n)} }
