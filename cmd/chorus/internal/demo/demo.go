// Package demo is `chorus demo`: a whole room in one process with no
// hardware and no API key. It runs the demo room that ships inside the
// binary (firmware-configs/demo), or a folder of device configs, on the
// embedded broker; says hello to the companions as a user; prints the live
// transcript; writes each utterance as a WAV file under ./out/demo/ of the
// current folder (espeak-ng, or the tone generator); and stops when the
// room rests at terminal, or after a number of turns.
package demo

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/chorus-robotics/chorus/cmd/chorus/internal/localroom"
	"github.com/chorus-robotics/chorus/cmd/chorus/internal/timeline"
	"github.com/chorus-robotics/chorus/device/robot"
	firmwareconfigs "github.com/chorus-robotics/chorus/firmware-configs"
	"github.com/chorus-robotics/chorus/runtime/config"
	"github.com/chorus-robotics/chorus/runtime/memory"
	"github.com/chorus-robotics/chorus/runtime/protocol"
	"github.com/chorus-robotics/chorus/runtime/settings"
	"github.com/chorus-robotics/chorus/runtime/transcript"
)

// Options configure a demo run.
type Options struct {
	Dir string // folder of device configs; "" runs the demo room in the binary
	Out string // where each companion's utterances are written as WAV; "" writes none
	// Console, when set (host:port, loopback), serves the room console and
	// the WebSocket bridge there from the first device (a visitor speaks
	// as "guest" and opens the conversation), and Run keeps the room up
	// until ctx ends; Timeout and Message do not apply.
	Console string
	// OnConsole is called with the console's URL once it serves.
	OnConsole func(url string)
	// Memory is where the robots keep what they remember (default: out's
	// parent's memory folder). With Console, the console's robot
	// remembers (by the rules) even in a room whose configs keep nothing,
	// and the console's Memory panel lists and forgets it.
	Memory string
	// ModelURL, when set, is the base_url of every robot whose brain is an
	// OpenAI-compatible model: the address `chorus fakemodel -listen`
	// serves, or a model server of the user's.
	ModelURL string
	Turns    int           // stop after this many companion turns; 0 = run to terminal
	Timeout  time.Duration // give up after this long
	Message  string        // the user's opening line
	// Paced plays every utterance in real time, as robots with speakers
	// would: the room runs at human speed, and out/room.wav is the whole
	// conversation on one timeline with the silences as they happened.
	Paced bool
	// Mode "realtime" runs the realtime demo room (five companions, the
	// free floor) until its phase ends; Paced plays it at human speed too,
	// so a room with overlap: false never has two robots talking at once.
	Mode string
	// Voice has a person ask the opening line aloud instead of typing it:
	// the robots speak and hear through a shared air (drivers/air), each
	// with the offline pocketsphinx and a grammar of the demo's phrases;
	// the room hears the person once and answers, and room.wav is the air
	// as it sounded, the person in it. Needs espeak-ng and pocketsphinx.
	Voice bool
	// HomeAssistant makes every robot of the demo a Home Assistant device
	// on the demo's broker (anonymous on loopback: a Home Assistant on this
	// machine connects as user homeassistant).
	HomeAssistant bool
	W             io.Writer // transcript
	Log           *slog.Logger
}

// Summary is how a demo run ended.
type Summary struct {
	Turns    int
	Terminal bool // every voter was at terminal when the room rested
	Rested   bool
	Elapsed  time.Duration
	Audio    []string // WAV files written
	// With Paced: the silences between one robot's end and the next one's
	// start, the times two robots talked at once, and the mix.
	Gaps     []time.Duration
	Overlaps int
	RoomWAV  string
	// Realtime: why the phase ended, and the posts the floor refused.
	EndReason string
	Refused   map[string]int
	// Interrupted: the run was stopped (Ctrl-C) before the room was done;
	// the rest says what happened until then.
	Interrupted bool
}

// Configs loads the room: from dir, or the demo room of mode in the
// binary.
func Configs(dir, mode string) ([]*robot.Config, error) {
	if dir == "" && mode == config.ModeRealtime {
		return localroom.Load(firmwareconfigs.Demo, "demo-realtime/*.yaml")
	}
	if dir == "" {
		return localroom.Load(firmwareconfigs.Demo, "demo/*.yaml")
	}
	return localroom.Load(os.DirFS(dir), "*.yaml")
}

// DefaultOut is where a demo writes its audio when -out does not say: the
// folder the configs of dir write their WAV files in (the one folder
// their companions' drivers.audio.dir share), else out/ and dir's name;
// the demo built in writes out/demo, and each variant a folder of its
// own (out/demo-realtime, out/demo-voice, out/demo-console), so no run
// overwrites another's.
func DefaultOut(dir, mode string, voice, console bool) (string, error) {
	if dir == "" {
		name := "demo"
		switch {
		case mode == config.ModeRealtime:
			name = "demo-realtime"
		case voice:
			name = "demo-voice"
		case console:
			name = "demo-console"
		}
		return filepath.Join("out", name), nil
	}
	cfgs, err := Configs(dir, mode)
	if err != nil {
		return "", err
	}
	shared := ""
	for _, c := range cfgs {
		if c.Companion == nil {
			continue
		}
		if c.Drivers.Audio.Kind != "wav" || c.Drivers.Audio.Dir == "" {
			shared = ""
			break
		}
		audio := c.Drivers.Audio.Dir
		if !filepath.IsAbs(audio) { // beside its config, in dir
			audio = filepath.Join(dir, audio)
		}
		parent := filepath.Dir(audio)
		if shared != "" && parent != shared {
			shared = ""
			break
		}
		shared = parent
	}
	if shared != "" {
		return shared, nil
	}
	return filepath.Join("out", filepath.Base(filepath.Clean(dir))), nil
}

// DefaultTimeout is how long a demo of cfgs may run: a minute, or in a
// realtime room its longest phase and half a minute more, so a phase that
// runs its whole phase_timeout ends as the room's own end (issue 27: the
// realtime demo's 60 s phase always hit the demo's 60 s timeout).
func DefaultTimeout(cfgs []*robot.Config) time.Duration {
	d := time.Minute
	for _, c := range cfgs {
		if c.Room.Mode == config.ModeRealtime {
			d = max(d, c.Room.Realtime.PhaseTimeout+30*time.Second)
		}
	}
	return d
}

// Run runs the demo room until it rests, Turns is reached, or Timeout
// (0: DefaultTimeout).
func Run(ctx context.Context, o Options) (Summary, error) {
	start := time.Now()
	if o.Message == "" {
		o.Message = "Hello everyone! What did you do today?"
	}
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	cfgs, err := Configs(o.Dir, o.Mode)
	if err != nil {
		return Summary{}, err
	}
	if o.Timeout <= 0 {
		o.Timeout = DefaultTimeout(cfgs)
	}
	for _, c := range cfgs {
		if o.HomeAssistant && c.Companion != nil {
			c.HomeAssistant.Enabled = true
		}
	}
	var v *voice
	if o.Voice {
		o.Paced = true
		if v, err = startVoice(ctx, o.Out, o.Message, o.Log); err != nil {
			return Summary{}, err
		}
		defer v.stop()
	}
	interrupted := ctx   // the caller's: Ctrl-C
	if o.Console == "" { // a console keeps the room up until interrupted
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, o.Timeout)
		defer cancel()
	} else if err := consoleOn(nil, o.Console); err != nil { // check the address first
		return Summary{}, err
	}
	out := ""
	if o.Out != "" {
		if out, err = filepath.Abs(o.Out); err != nil {
			return Summary{}, err
		}
	}
	r, err := localroom.Start(ctx, cfgs, localroom.Options{Log: o.Log, Quiet: true, Prepare: func(c *robot.Config) {
		if o.Console != "" && c == cfgs[0] {
			consoleOn(c, o.Console)
			if o.Memory != "" && c.Companion != nil && c.Memory == nil { // a room whose configs keep none
				m := &memory.Settings{Extract: memory.ExtractRules}
				m.SetDefaults()
				c.Memory = m
			}
		}
		if c.Companion == nil {
			return
		}
		if o.ModelURL != "" && c.Brain.Provider == "openai" {
			c.Brain.BaseURL = o.ModelURL
		}
		if c.Memory != nil {
			// Kept in -memory, or beside the run's audio for the next run;
			// with neither, nothing is kept.
			switch {
			case o.Memory != "":
				c.Memory.Dir = o.Memory
			case out != "":
				c.Memory.Dir = filepath.Join(filepath.Dir(out), "memory")
			default:
				c.Memory = nil
			}
		}
		if v != nil {
			v.prepare(c)
			return
		}
		if out == "" { // no WAV files: the configs' own folders are not this run's
			c.Drivers.Audio.Kind, c.Drivers.Audio.Dir = "null", ""
			c.Drivers.Audio.Paced = o.Paced
			return
		}
		c.Drivers.Audio.Kind = "wav"
		c.Drivers.Audio.Dir = filepath.Join(out, c.Companion.ID)
		c.Drivers.Audio.Paced = o.Paced
		// Only this run's utterances stay in the folder.
		old, _ := filepath.Glob(filepath.Join(c.Drivers.Audio.Dir, "*.wav"))
		for _, f := range old {
			os.Remove(f)
		}
	}})
	if err != nil {
		return Summary{}, err
	}
	defer r.Close()
	fmt.Fprintf(o.W, "chorus demo: room %q, %d devices, embedded broker on %s\n", r.Name, len(cfgs), r.URL)
	if o.Console != "" {
		url := "http://" + o.Console + "/"
		fmt.Fprintf(o.W, "room console: %s (open it in a browser; Ctrl-C stops the room)\n", url)
		if o.OnConsole != nil {
			o.OnConsole(url)
		}
	}

	// The observer is also the user who opens the conversation.
	user, ub, err := r.Dial(ctx, "user")
	if err != nil {
		return Summary{}, err
	}
	defer ub.Close()
	events := make(chan transcript.Event, 256)
	// Refused realtime posts are the floor at work, not the conversation:
	// printed at -log debug only (issue 27).
	p := &transcript.Printer{W: o.W, HideRefusals: !o.Log.Enabled(ctx, slog.LevelDebug)}
	if err := p.Follow(ctx, user, func(e transcript.Event) {
		select { // a bus handler never blocks
		case events <- e:
		default:
		}
	}); err != nil {
		return Summary{}, err
	}
	rec, err := timeline.Follow(ctx, user)
	if err != nil {
		return Summary{}, err
	}
	time.Sleep(100 * time.Millisecond) // let every companion's subscriptions settle
	switch {
	case o.Console != "": // the visitor opens the conversation, from the page
		fmt.Fprintf(o.W, "waiting for someone to speak in the console; the transcript follows here\n")
	case v != nil:
		fmt.Fprintf(o.W, "a person says aloud: %q\n", o.Message)
		if err := v.say(ctx); err != nil {
			return Summary{}, err
		}
	default:
		if err := user.SendMessage(ctx, protocol.NewMessage(protocol.NewID(), "user", nil, o.Message, "")); err != nil {
			return Summary{}, err
		}
	}

	// What happened is counted until the room is done, or until Ctrl-C
	// (then the summary says so, and counts what happened until then).
	// With a console the room is never done: each visitor's conversation
	// is counted, and it runs until interrupted.
	sum := Summary{Refused: map[string]int{}}
	heard := map[string]bool{}
	restOn := "" // the message a rest grant answered; it may arrive after the grant
	for done := false; !done && !sum.Interrupted; {
		select {
		case e := <-events:
			switch {
			case e.Message != nil:
				if heard[e.Message.Params.ID] { // delivered twice: counted once
					break
				}
				heard[e.Message.Params.ID] = true
				if e.Message.Params.From != "user" && e.Message.Params.From != guest {
					sum.Turns++
					if o.Turns > 0 && sum.Turns >= o.Turns {
						done = true
					}
				}
			case e.Grant != nil && e.Grant.Speaker == nil:
				sum.Rested, sum.Terminal = true, e.Grant.RestsAtTerminal()
				restOn = e.Grant.MessageID
			case e.Phase != nil && e.Phase.Event == protocol.PhaseEnd:
				sum.Rested, sum.EndReason = true, e.Phase.Reason
				done = true
			case e.Ack != nil && !e.Ack.Accepted:
				sum.Refused[e.Ack.Reason]++
			}
			if restOn != "" && heard[restOn] {
				done = true
			}
			done = done && o.Console == ""
		case err := <-r.Err():
			return sum, err
		case <-ctx.Done():
			if interrupted.Err() == nil {
				return sum, fmt.Errorf("demo did not finish within %v: %w", o.Timeout, ctx.Err())
			}
			sum.Interrupted = true
		}
	}
	if sum.Interrupted {
		return finish(sum, o, r, rec, out, start), nil
	}
	if err := rec.Quiet(ctx, 30*time.Second); err != nil { // the last words still play
		o.Log.Warn("demo: a robot still speaks at the end", "err", err)
	}
	sum = finish(sum, o, r, rec, out, start)
	if !o.Paced || out == "" {
		return sum, nil
	}
	if v != nil {
		sum.RoomWAV = v.stop()
		fmt.Fprintf(o.W, "the whole room, as it sounded (the person too): %s\n", sum.RoomWAV)
		return sum, nil
	}
	sum.RoomWAV = filepath.Join(out, "room.wav")
	if err := timeline.Mix(rec.Utterances(), out, sum.RoomWAV); err != nil {
		return sum, err
	}
	fmt.Fprintf(o.W, "the whole room, as it sounded: %s\n", sum.RoomWAV)
	return sum, nil
}

// finish stops the room and completes sum with what it left: the audio
// written and, paced, the silences between robots.
func finish(sum Summary, o Options, r *localroom.Room, rec *timeline.Recorder, out string, start time.Time) Summary {
	r.Close()
	sum.Elapsed = time.Since(start)
	if out != "" {
		sum.Audio, _ = filepath.Glob(filepath.Join(out, "*", "*.wav"))
	}
	if o.Paced {
		sum.Gaps = timeline.Gaps(rec.Utterances())
		sum.Overlaps = timeline.Overlaps(sum.Gaps)
		if len(sum.Gaps) > 0 {
			fmt.Fprintf(o.W, "silences between robots: %s (median %v, longest %v); robots talking at once: %d\n",
				gapList(sum.Gaps), timeline.Percentile(sum.Gaps, 50).Round(time.Millisecond),
				timeline.Percentile(sum.Gaps, 100).Round(time.Millisecond), sum.Overlaps)
		}
	}
	return sum
}

func gapList(gs []time.Duration) string {
	parts := make([]string, len(gs))
	for i, g := range gs {
		parts[i] = g.Round(time.Millisecond).String()
	}
	return strings.Join(parts, " ")
}

// guest is the name a visitor of the demo's console speaks as.
const guest = "guest"

// consoleOn makes c (if not nil) serve the console and the bridge on
// addr, which must be a loopback address: a visitor without a token speaks
// as "guest".
func consoleOn(c *robot.Config, addr string) error {
	if !settings.Loopback(addr) {
		return fmt.Errorf("console: %q is not a loopback host:port: the demo's console takes no token, so it listens on loopback only", addr)
	}
	if c != nil {
		c.HTTP.Listen = addr
		c.HTTP.WebSocket = robot.WebSocket{Enabled: true, Anonymous: "user:" + guest}
	}
	return nil
}
