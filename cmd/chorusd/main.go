// Command chorusd is the device daemon that systemd runs on each robot:
// config in, everything wired, signals and the watchdog handled.
//
//	chorusd --config /etc/chorus/robot.yaml
//	chorusd --check-config robot.yaml   # every problem a start would hit, here
//	chorusd --list                      # what this build contains
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/chorus-robotics/chorus/device/daemon"
	"github.com/chorus-robotics/chorus/device/parts"
)

var version = "dev"

func main() {
	path := flag.String("config", "/etc/chorus/chorus.yaml", "device config file")
	check := flag.String("check-config", "", "check this config file as a start would, and exit")
	list := flag.Bool("list", false, "print the camera sources, audio outputs, TTS engines and brains this build contains, and exit")
	flag.Parse()
	switch {
	case *list:
		fmt.Printf("chorusd %s\n%s", version, parts.List())
		return
	case *check != "":
		if _, err := daemon.CheckFile(*check); err != nil {
			fmt.Fprintln(os.Stderr, err)
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
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := daemon.Main(ctx, cfg, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "chorusd:", err)
		os.Exit(1)
	}
}
