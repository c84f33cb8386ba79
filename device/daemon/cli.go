// chorusd's command line: every mode of the daemon behind one function,
// so that cmd/chorusd is signals and an exit code.

package daemon

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"strings"
	"time"

	"github.com/chorus-robotics/chorus/device/doctor"
	"github.com/chorus-robotics/chorus/device/parts"
	chorusversion "github.com/chorus-robotics/chorus/runtime/version"
)

// Command runs chorusd with args (without the program's name) and returns
// its exit code:
//
//	chorusd --config /etc/chorus/robot.yaml
//	chorusd --check-config robot.yaml   # every problem a start would hit, and the body parts missing here
//	chorusd --check-config robot.yaml --offline # its shape and values alone, on another machine
//	chorusd --list                      # what this build contains
//	chorusd --doctor [--config FILE]    # check the machine against the config
//	chorusd --ha-remove [--config FILE] # take the robot out of Home Assistant
//	chorusd --version                   # the build's version, Go toolchain and platform
//
// Every mode reads the config through the one check, CheckFile.
func Command(ctx context.Context, args []string, version string, stdout, stderr io.Writer) int {
	fl := flag.NewFlagSet("chorusd", flag.ContinueOnError)
	fl.SetOutput(stderr)
	path := fl.String("config", "/etc/chorus/chorus.yaml", "device config file")
	check := fl.String("check-config", "", "check this config file as a start would, and exit")
	doc := fl.Bool("doctor", false, "check what the config needs against this machine (camera, audio, TTS, GPIO, broker, model server, secrets; microphone, speech to text, wake word), and exit")
	envFile := fl.String("env-file", doctor.DefaultEnvFile, "with --doctor: the environment file chorusd.service reads (its variables fill those not already set)")
	haRemove := fl.Bool("ha-remove", false, "take this robot out of Home Assistant (the empty retained discovery; before uninstalling it), and exit")
	showVersion := fl.Bool("version", false, "print the build's version and exit")
	offline := fl.Bool("offline", false, "with --check-config: the config's shape and values only (no programs, devices, files or secrets looked for): check a robot's config on another machine before flashing")
	list := fl.Bool("list", false, "print the camera sources, audio outputs, TTS engines, brains, microphones, speech-to-text engines and wake-word detectors this build contains, and exit")
	if err := fl.Parse(args); err != nil {
		return 2
	}
	version = chorusversion.Of(version)
	Version = version
	switch {
	case *showVersion:
		fmt.Fprintf(stdout, "chorusd %s (%s)\n", version, chorusversion.Go())
		return 0
	case *list:
		fmt.Fprintf(stdout, "chorusd %s\n%s", version, parts.List())
		return 0
	case *doc:
		return doctorMode(ctx, *path, *envFile, version, stdout)
	case *check != "":
		checkFile, how := CheckFile, ""
		if *offline {
			checkFile, how = CheckFileOffline, " (offline: its shape and values; the robot's programs, devices, files and secrets were not looked for)"
		}
		cfg, err := checkFile(*check) // its problems, with the warnings among them
		if err != nil {
			fmt.Fprintln(stderr, err)
			return 1
		}
		// What the file says that does nothing here, and a start does not
		// refuse: said before "ok".
		for _, w := range cfg.Warnings() {
			fmt.Fprintf(stderr, "config %s: warning: %s\n", *check, w)
		}
		// The body's parts that are not here: a start would go on without
		// them (their actions fail), the check says so.
		if missing := parts.CheckBody(cfg, parts.Here); len(missing) > 0 && !*offline {
			fmt.Fprintf(stderr, "config %s: %s\n(chorusd starts without these parts: their actions answer with what is missing)\n", *check, strings.Join(missing, "\n"))
			return 1
		}
		fmt.Fprintf(stdout, "%s: ok%s\n", *check, how)
		return 0
	}
	cfg, err := CheckFile(*path)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	if *haRemove {
		ctx, cancel := context.WithTimeout(ctx, 15*time.Second)
		defer cancel()
		if err := RemoveFromHomeAssistant(ctx, cfg); err != nil {
			fmt.Fprintln(stderr, "chorusd --ha-remove:", err)
			return 1
		}
		fmt.Fprintf(stdout, "%s is out of Home Assistant (node %s)\n", cfg.Identity(), cfg.HomeAssistant.NodeID)
		return 0
	}
	if err := Main(ctx, cfg, stderr); err != nil {
		fmt.Fprintln(stderr, "chorusd:", err)
		return 1
	}
	return 0
}

// doctorMode runs chorusd --doctor on the config at path: 0 when all is
// well, 1 when a check failed, 2 when the config cannot be read or its
// fields are wrong. What only this machine lacks is a ✗ among the others.
func doctorMode(ctx context.Context, path, envFile, version string, w io.Writer) int {
	fmt.Fprintf(w, "chorusd %s --doctor, config %s\n", version, path)
	cfg, err := CheckFile(path) // the fields; what this machine lacks is checked below
	switch {
	case cfg == nil && errors.Is(err, fs.ErrNotExist):
		fmt.Fprintf(w, "✗ config: %v\n    fix: the config file %s is missing: put the device config there (chorus install does), or name it with --config\n", err, path)
		return 2
	case cfg == nil:
		fmt.Fprintf(w, "✗ config: %v\n    fix: correct the fields named (chorusd --check-config %s)\n", err, path)
		return 2
	}
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	// The doctor reads the unit's environment file first, as systemd does
	// before a start: the config is checked again after it, as a start
	// would check it.
	results := doctor.Run(ctx, cfg, doctor.Options{EnvFile: envFile})
	failed := 0
	if err := Check(cfg); err != nil {
		fmt.Fprintf(w, "✗ config: config %s: %v\n    fix: what this machine lacks is named; the checks below say more\n", path, err)
		failed++
	} else {
		fmt.Fprintln(w, "✓ config: valid")
	}
	if failed+doctor.Write(w, results) > 0 {
		return 1
	}
	return 0
}
