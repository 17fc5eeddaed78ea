// Command driverguard renders, previews, checks and admits RBLN NPU driver configurations.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/driverguard/driverguard/cmd/driverguard/app"
	"github.com/driverguard/driverguard/output"
)

func main() {
	ctx, cancel := context.WithCancelCause(context.Background())
	signals := make(chan os.Signal, 2)
	signal.Notify(signals, os.Interrupt, syscall.SIGTERM)
	go func() {
		sig, _ := (<-signals).(syscall.Signal)
		intr := app.Interrupted{Signal: sig}
		// Reading and judging watch ctx: the command returns and Run exits with the signal's
		// code. What cannot be stopped (a goroutine blocked in open(2) on a FIFO, a long
		// computation) ends with the process after the grace period, or at a second signal.
		cancel(intr)
		select {
		case <-signals:
		case <-time.After(app.StopGrace()):
		}
		output.RemoveTemporaries() // a -o FILE still being written leaves no temporary file
		fmt.Fprintln(os.Stderr, "Error:", intr)
		os.Exit(intr.ExitCode())
	}()
	code := app.Run(ctx, app.Streams{In: os.Stdin, Out: os.Stdout, Err: os.Stderr, ParentStderr: app.WriteParentStderr}, os.Args[1:])
	cancel(nil)
	os.Exit(code)
}
