// Command chorusd is the device daemon that systemd runs on each robot:
// config in, everything wired, signals and the watchdog handled.
//
//	chorusd --config /etc/chorus/robot.yaml
//	chorusd --check-config robot.yaml   # every problem a start would hit, and the body parts missing here
//	chorusd --list                      # what this build contains
//	chorusd --doctor [--config FILE]    # check the machine against the config
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/chorus-robotics/chorus/device/daemon"
	"github.com/chorus-robotics/chorus/device/doctor"
	"github.com/chorus-robotics/chorus/device/parts"
	"github.com/chorus-robotics/chorus/runtime/config"
)

var version = "dev"

func main() {
	path := flag.String("config", "/etc/chorus/chorus.yaml", "device config file")
	check := flag.String("check-config", "", "check this config file as a start would, and exit")
	doc := flag.Bool("doctor", false, "check what the config needs against this machine (camera, audio, TTS, GPIO, broker, model server, secrets; microphone, speech to text, wake word), and exit")
	envFile := flag.String("env-file", doctor.DefaultEnvFile, "with --doctor: the environment file chorusd.service reads (its variables fill those not already set)")
	haRemove := flag.Bool("ha-remove", false, "take this robot out of Home Assistant (the empty retained discovery; before uninstalling it), and exit")
	list := flag.Bool("list", false, "print the camera sources, audio outputs, TTS engines, brains, microphones, speech-to-text engines and wake-word detectors this build contains, and exit")
	flag.Parse()
	switch {
	case *list:
		fmt.Printf("chorusd %s\n%s", version, parts.List())
		return
	case *doc:
		os.Exit(doctorMain(*path, *envFile, os.Stdout))
	case *check != "":
		cfg, err := daemon.CheckFile(*check)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		// The body's parts that are not here: a start would go on without
		// them (their actions fail), the check says so.
		if missing := parts.CheckBody(cfg, parts.Here); len(missing) > 0 {
			fmt.Fprintf(os.Stderr, "config %s: %s\n(chorusd starts without these parts: their actions answer with what is missing)\n", *check, strings.Join(missing, "\n"))
			os.Exit(1)
		}
		fmt.Printf("%s: ok\n", *check)
		return
	}
	cfg, err := daemon.CheckFile(*path)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	daemon.Version = version
	if *haRemove {
		ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
		defer cancel()
		if err := daemon.RemoveFromHomeAssistant(ctx, cfg); err != nil {
			fmt.Fprintln(os.Stderr, "chorusd --ha-remove:", err)
			os.Exit(1)
		}
		fmt.Printf("%s is out of Home Assistant (node %s)\n", cfg.Identity(), cfg.HomeAssistant.NodeID)
		return
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := daemon.Main(ctx, cfg, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "chorusd:", err)
		os.Exit(1)
	}
}

// doctorMain runs chorusd --doctor on the config at path: 0 when all is
// well, 1 when a check failed, 2 when the config cannot be read.
func doctorMain(path, envFile string, w io.Writer) int {
	fmt.Fprintf(w, "chorusd %s --doctor, config %s\n", version, path)
	cfg, typed, err := config.ParseFile(path)
	if err == nil {
		if all := config.Merge(typed, cfg.Validate()); len(all) > 0 {
			err = all
		}
	}
	switch {
	case errors.Is(err, fs.ErrNotExist):
		fmt.Fprintf(w, "✗ config: %v\n    fix: the config file %s is missing: put the device config there (chorus install does), or name it with --config\n", err, path)
		return 2
	case err != nil:
		fmt.Fprintf(w, "✗ config: %v\n    fix: correct the fields named (chorusd --check-config %s)\n", err, path)
		return 2
	}
	fmt.Fprintln(w, "✓ config: valid")
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	if doctor.Write(w, doctor.Run(ctx, cfg, doctor.Options{EnvFile: envFile})) > 0 {
		return 1
	}
	return 0
}
