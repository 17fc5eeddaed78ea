// Package app implements the driverguard command line: one file per command, each binding
// flags to an options struct and calling a library package. Run returns the process exit
// code; only main calls os.Exit.
package app

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// Exit codes.
const (
	ExitOK      = 0 // success (review: allowed)
	ExitInvalid = 1 // invalid input, a denial or a failed check
	ExitUsage   = 2 // wrong flags or arguments, unusable input files
)

// Streams are the standard streams a command uses.
type Streams struct {
	In  io.Reader
	Out io.Writer
	Err io.Writer
}

// exitError carries an exit code through cobra.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }

// usageError marks wrong flags, arguments or unreadable input (exit 2).
func usageError(err error) error { return &exitError{code: ExitUsage, err: err} }

// invalidError marks invalid input or a failed check (exit 1).
func invalidError(err error) error { return &exitError{code: ExitInvalid, err: err} }

// Run executes the driverguard command line with args and returns the exit code.
func Run(ctx context.Context, s Streams, args []string) int {
	setLogDestination(newWarningHandler(s.Err))
	root := newRootCommand(s)
	root.SetArgs(args)
	err := root.ExecuteContext(ctx)
	if err == nil {
		return ExitOK
	}
	var ee *exitError
	code := ExitUsage // cobra's own errors are about flags and arguments
	if errors.As(err, &ee) {
		code = ee.code
	}
	if !errors.Is(err, errSilent) {
		fmt.Fprintln(s.Err, "Error:", err)
	}
	return code
}

// errSilent ends a command with its exit code after it printed its own explanation.
var errSilent = errors.New("reported")

func newRootCommand(s Streams) *cobra.Command {
	root := &cobra.Command{
		Use:   "driverguard",
		Short: "Safe multi-version RBLN NPU drivers: render, preview, route, check and admit RBLNDrivers",
		Long: `driverguard renders the driverguard chart's driver values into RBLNDriver resources exactly as
Helm does, explains where every field came from, routes drivers to nodes, checks policies, and
serves the admission webhook that keeps several driver versions in one cluster safe.

Exit codes: 0 success; 1 the input was judged and rejected (invalid values, a denial, a failed
check); 2 the command could not judge (wrong usage, unreadable or unusable input).`,
		SilenceUsage:  true,
		SilenceErrors: true,
		Version:       readBuildInfo().String(),
	}
	root.SetVersionTemplate("{{.Version}}\n")
	root.SetIn(s.In)
	root.SetOut(s.Out)
	root.SetErr(s.Err)
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usageError(flagError(err)) })
	root.AddCommand(
		newRenderCommand(s),
		newPreviewCommand(s),
		newRouteCommand(s),
		newReviewCommand(s),
		newServeCommand(s),
		newCheckCommand(s),
		newPlanCommand(s),
		newPolicyCommand(s),
		newVersionCommand(s),
	)
	return root
}

// flagError restates a flag parsing error with the offending value truncated: pflag quotes the
// whole value, which may be a 50 MB string.
func flagError(err error) error {
	var iv *pflag.InvalidValueError
	if !errors.As(err, &iv) || len(iv.GetValue()) <= maxValueLength {
		return err
	}
	f := iv.GetFlag()
	name := "--" + f.Name
	if f.Shorthand != "" {
		name = "-" + f.Shorthand + ", " + name
	}
	return fmt.Errorf("invalid argument %q for %q flag: %w", truncateValue(iv.GetValue()), name, errors.Unwrap(iv))
}
