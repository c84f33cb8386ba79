// Package cli implements the chorus subcommands.
package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/chorus-robotics/chorus/cmd/chorus/internal/demo"
	"github.com/chorus-robotics/chorus/device/robot"
	"github.com/chorus-robotics/chorus/runtime/bus"
	"github.com/chorus-robotics/chorus/runtime/config"
	"github.com/chorus-robotics/chorus/runtime/protocol"
	"github.com/chorus-robotics/chorus/runtime/room"
	"github.com/chorus-robotics/chorus/runtime/topic"
	"github.com/chorus-robotics/chorus/runtime/transcript"
	"github.com/chorus-robotics/chorus/runtime/version"
)

type command struct {
	summary string
	run     func(ctx context.Context, args []string, stdout, stderr io.Writer) error
}

var commands = map[string]command{
	"demo":  {"run a whole room in this process: broker, floor, three companions (no hardware, no API key)", runDemo},
	"say":   {"say something into a room as a user", runSay},
	"watch": {"print a room's live transcript", runWatch},
}

// Version is the build's version: the stamped one (main.version) or
// what the Go toolchain recorded (runtime/version); cmd/chorus sets it.
var Version = "dev"

// Main runs the subcommand in args and returns the exit code.
func Main(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) > 0 && (args[0] == "version" || args[0] == "--version" || args[0] == "-version") {
		fmt.Fprintf(stdout, "chorus %s (%s)\n", Version, version.Go())
		return 0
	}
	if len(args) == 0 || args[0] == "help" || args[0] == "-h" || args[0] == "--help" {
		usage(stdout)
		return 0
	}
	c, ok := commands[args[0]]
	if !ok {
		fmt.Fprintf(stderr, "chorus: unknown command %q\n", args[0])
		usage(stderr)
		return 2
	}
	if err := c.run(ctx, args[1:], stdout, stderr); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		fmt.Fprintf(stderr, "chorus %s: %v\n", args[0], err)
		return 1
	}
	return 0
}

// askedForHelp reports whether a command that takes an operation first
// was asked for its help instead (-h, --help, help), and then prints its
// usage ("memory list|export|…") to w: the command returns flag.ErrHelp,
// exit 0.
func askedForHelp(args []string, w io.Writer, usage string) bool {
	if len(args) == 0 || (args[0] != "-h" && args[0] != "-help" && args[0] != "--help" && args[0] != "help") {
		return false
	}
	name, _, _ := strings.Cut(usage, " ")
	fmt.Fprintf(w, "usage: chorus %s [flags]\n\nchorus %s <operation> -h shows its flags.\n", usage, name)
	return true
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "usage: chorus <command> [flags]\n\ncommands:")
	var names []string
	for n := range commands {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(w, "  %-8s %s\n", n, commands[n].summary)
	}
	fmt.Fprintf(w, "  %-8s %s\n", "version", "print this build's version")
	fmt.Fprintln(w, "\nchorus <command> -h shows its flags.")
}

// newFlags is a command's flag set: a bad flag or -h returns an error
// (Main says it, or exits 0 on -h) and the flags' usage goes to stderr.
func newFlags(name string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	return fs
}

// newRoomFlags is the flag set of a command that connects to a room, with
// the room's flags registered.
func newRoomFlags(name string, stderr io.Writer) (*flag.FlagSet, *roomFlags) {
	fs := newFlags(name, stderr)
	rf := &roomFlags{}
	rf.register(fs)
	return fs, rf
}

func logger(w io.Writer, level string) *slog.Logger {
	return robot.Log{Level: level, Format: "text"}.Logger(w)
}

func runDemo(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("demo", stderr)
	dir := fs.String("configs", "", "folder of device configs (default: the demo room built into chorus)")
	out := fs.String("out", "", "folder for each utterance's WAV audio and room.wav (default: where -configs' robots write theirs; the demo built in: out/demo, out/demo-realtime, out/demo-voice or out/demo-console under the current folder)")
	mode := fs.String("mode", "turn", "turn (companions vote on who speaks next) or realtime (a free floor with hard limits)")
	turns := fs.Int("turns", 0, "stop after this many companion turns (0: run until the room reaches terminal)")
	timeout := fs.Duration("timeout", 0, "give up after this long (default: a minute, or a realtime phase's phase_timeout + 30 s)")
	msg := fs.String("message", "", "the user's opening line")
	level := fs.String("log", "warn", "log level: debug, info, warn, error")
	fast := fs.Bool("fast", false, "do not play the audio in real time (the room runs as fast as it can; no room.wav)")
	voiceOn := fs.Bool("voice", false, "a person asks aloud (espeak-ng) and the robots hear it through a shared air and pocketsphinx")
	haOn := fs.Bool("homeassistant", false, "make every robot a Home Assistant device on the demo's broker (with -console it stays up)")
	consoleOn := fs.Bool("console", false, "serve the room console in a browser and keep the room up until interrupted")
	consoleAddr := fs.String("console-addr", "127.0.0.1:8080", "-console: where to serve it (loopback only)")
	modelURL := fs.String("model-url", "", "the base_url of every robot with an OpenAI-compatible brain, e.g. what chorus fakemodel -listen serves (default: as the configs say)")
	memDir := fs.String("memory", "", "keep what the robots remember in this folder (default: out/memory beside the audio); with -console, the console's robot remembers in any room")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *mode != config.ModeTurn && *mode != config.ModeRealtime {
		return fmt.Errorf("-mode: want turn or realtime, got %q", *mode)
	}
	if *out == "" {
		var err error
		if *out, err = demo.DefaultOut(*dir, *mode, *voiceOn, *consoleOn); err != nil {
			return err
		}
	}
	addr := ""
	if *consoleOn {
		addr = *consoleAddr
	}
	sum, err := demo.Run(ctx, demo.Options{Dir: *dir, Out: *out, Turns: *turns, Timeout: *timeout, Console: addr, Memory: *memDir, ModelURL: *modelURL,
		Message: *msg, Paced: !*fast, Mode: *mode, Voice: *voiceOn, HomeAssistant: *haOn, W: stdout, Log: logger(stderr, *level)})
	if err != nil {
		return err
	}
	how := fmt.Sprintf("stopped after %d turns", sum.Turns)
	switch {
	case sum.Interrupted && *mode == config.ModeRealtime:
		how = fmt.Sprintf("was interrupted after %d utterances; %s", sum.Turns, refusals(sum.Refused))
	case sum.Interrupted:
		how = fmt.Sprintf("was interrupted after %d turns", sum.Turns)
	case sum.EndReason != "":
		how = fmt.Sprintf("phase ended (%s) after %d utterances; %s", sum.EndReason, sum.Turns, refusals(sum.Refused))
	case sum.Terminal:
		how = fmt.Sprintf("reached terminal after %d turns", sum.Turns)
	case sum.Rested:
		how = fmt.Sprintf("rested after %d turns", sum.Turns)
	}
	fmt.Fprintf(stdout, "\nThe conversation %s in %.1fs; %d utterances written to %s/\n", how, sum.Elapsed.Seconds(), len(sum.Audio), *out)
	return nil
}

type roomFlags struct {
	broker, prefix, room, user, passwordEnv string
}

func (r *roomFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&r.broker, "broker", "tcp://127.0.0.1:1883", "MQTT broker URL; a comma-separated list is a clustered broker's nodes, tried in order")
	fs.StringVar(&r.prefix, "prefix", topic.DefaultPrefix, "topic prefix")
	fs.StringVar(&r.room, "room", "", "room name (required)")
	fs.StringVar(&r.user, "as", "user", "identity to connect and speak as")
	fs.StringVar(&r.passwordEnv, "password-env", "CHORUS_MQTT_PASSWORD", "environment variable holding the MQTT password, if any")
}

func (r *roomFlags) connect(ctx context.Context, suffix string) (*room.Room, bus.Bus, error) {
	if why := protocol.ValidIdentity(r.room); why != "" {
		return nil, nil, fmt.Errorf("-room: %s", why)
	}
	if why := protocol.ValidIdentity(r.user); why != "" {
		return nil, nil, fmt.Errorf("-as: %s", why)
	}
	dctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	urls := strings.Split(r.broker, ",")
	b, err := bus.Dial(dctx, bus.Options{Broker: urls[0], Brokers: urls[1:], ClientID: r.user + "-" + suffix + "-" + protocol.NewID()[:8],
		Username: r.user, Password: os.Getenv(r.passwordEnv)})
	if err != nil {
		return nil, nil, err
	}
	return room.New(b, topic.New(r.prefix), r.room, nil, nil), b, nil
}

func runSay(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs, rf := newRoomFlags("say", stderr)
	to := fs.String("to", "", "comma-separated companion ids to address")
	if err := fs.Parse(args); err != nil {
		return err
	}
	text := strings.Join(fs.Args(), " ")
	if strings.TrimSpace(text) == "" {
		return errors.New("nothing to say: chorus say -room NAME [flags] TEXT")
	}
	r, b, err := rf.connect(ctx, "say")
	if err != nil {
		return err
	}
	defer b.Close()
	var toList []string
	if *to != "" {
		toList = strings.Split(*to, ",")
	}
	m := protocol.NewMessage(protocol.NewID(), rf.user, toList, text, "")
	if err := r.SendMessage(ctx, m); err != nil {
		return err
	}
	// Labelled, the id last: a script takes the last word.
	fmt.Fprintf(stdout, "sent to room %s as %s, message id %s\n", rf.room, rf.user, m.Params.ID)
	return nil
}

func runWatch(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs, rf := newRoomFlags("watch", stderr)
	until := fs.String("until", "", "exit when: rest (the room rests), terminal (it rests at terminal)")
	timeout := fs.Duration("timeout", 0, "exit with an error after this long (0: never)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *until != "" && *until != "rest" && *until != "terminal" {
		return fmt.Errorf("-until: must be rest or terminal, got %q", *until)
	}
	if *timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, *timeout)
		defer cancel()
	}
	r, b, err := rf.connect(ctx, "watch")
	if err != nil {
		return err
	}
	defer b.Close()
	done := make(chan struct{}, 1)
	p := &transcript.Printer{W: stdout}
	err = p.Follow(ctx, r, func(e transcript.Event) {
		if e.Grant == nil || e.Grant.Speaker != nil || *until == "" {
			return
		}
		if *until == "rest" || e.Grant.RestsAtTerminal() {
			select {
			case done <- struct{}{}:
			default:
			}
		}
	})
	if err != nil {
		return err
	}
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		if *timeout > 0 && errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return fmt.Errorf("the room did not reach %q within %v", *until, *timeout)
		}
		return nil
	}
}

// refusals says how many realtime posts the floor refused, and why
// ("posts refused: 3 (floor_busy 2, rate_limited 1)"); at -log debug the
// transcript shows each.
func refusals(by map[string]int) string {
	if len(by) == 0 {
		return "no post refused"
	}
	reasons := make([]string, 0, len(by))
	n := 0
	for r, c := range by {
		reasons = append(reasons, fmt.Sprintf("%s %d", r, c))
		n += c
	}
	sort.Strings(reasons)
	return fmt.Sprintf("posts refused: %d (%s; -log debug shows each)", n, strings.Join(reasons, ", "))
}
