// Command chorusd is the device daemon that systemd runs on each robot:
// config in, everything wired, signals and the watchdog handled. Its
// modes (--config, --check-config, --list, --doctor, --ha-remove) are
// device/daemon.Command's.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/chorus-robotics/chorus/device/daemon"
)

var version = "dev"

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := daemon.Command(ctx, os.Args[1:], version, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
