// Command driverguard renders, previews, checks and admits RBLN NPU driver configurations.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/driverguard/driverguard/cmd/driverguard/app"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := app.Run(ctx, app.Streams{In: os.Stdin, Out: os.Stdout, Err: os.Stderr}, os.Args[1:])
	stop()
	os.Exit(code)
}
