// Command chorus is the operator's tool: run the demo room, say something
// into a room, watch a room, and measure (see `chorus help`).
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/chorus-robotics/chorus/cmd/chorus/internal/cli"
	chorusversion "github.com/chorus-robotics/chorus/runtime/version"
)

// version is stamped by `make dist` (-ldflags -X main.version=…).
var version = "dev"

func main() {
	cli.Version = chorusversion.Of(version)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := cli.Main(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
