// Command chorus is the operator's tool: run the demo room, say something
// into a room, watch a room, and measure (see `chorus help`).
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/chorus-robotics/chorus/cmd/chorus/internal/cli"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := cli.Main(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
