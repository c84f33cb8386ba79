// Command chorusd is the device daemon that systemd runs on each robot:
// config in, everything wired, signals and the watchdog handled.
//
//	chorusd --config /etc/chorus/robot.yaml
//	chorusd --check-config robot.yaml
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/chorus-robotics/chorus/device/daemon"
	"github.com/chorus-robotics/chorus/runtime/config"
)

func main() {
	path := flag.String("config", "/etc/chorus/chorus.yaml", "device config file")
	check := flag.String("check-config", "", "validate this config file and exit")
	flag.Parse()
	if *check != "" {
		if _, err := config.Load(*check); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		fmt.Printf("%s: ok\n", *check)
		return
	}
	cfg, err := config.Load(*path)
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
