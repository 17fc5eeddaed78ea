// Package app implements the driverguard command line: one file per command, each binding
// flags to the fields of one job of package action, calling its Run and printing its result.
// Run returns the process exit code; only main calls os.Exit.
package app

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"slices"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/driverguard/driverguard/action"
	"github.com/driverguard/driverguard/api/validation"
	"github.com/driverguard/driverguard/output"
)

// Exit codes.
const (
	ExitOK      = 0 // success (review: allowed)
	ExitInvalid = 1 // invalid input, a denial or a failed check
	ExitUsage   = 2 // wrong flags or arguments, unusable input files
)

// Streams are the standard streams a command uses, and what it records of its run.
type Streams struct {
	In  io.Reader
	Out io.Writer
	Err io.Writer
	// ParentStderr, when set, writes to the standard error of the process that started this
	// one (WriteParentStderr; main sets it): post-render's way to reach the user through a
	// Helm that discards its own. Nil in-process: nothing is written beyond Err.
	ParentStderr func(msg []byte)

	// Now is the clock a command records the time of its run with (plan's inputs); nil is
	// time.Now. Version is the driverguard it records ("" is this binary's, `driverguard
	// version`). Tests fix both.
	Now     func() time.Time
	Version string

	// cfg is what every job shares: standard input and the limits of the root's --max-*-size
	// flags; set by Run.
	cfg *action.Configuration
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

// Interrupted is the cause main gives the context of Run when a signal arrives: Run then
// stops reading and judging and returns ExitCode, 128 + the signal's number (130 for SIGINT,
// 143 for SIGTERM), as a shell reports a process a signal ended.
type Interrupted struct {
	Signal syscall.Signal
}

func (i Interrupted) Error() string {
	switch i.Signal {
	case syscall.SIGINT:
		return "interrupted by SIGINT"
	case syscall.SIGTERM:
		return "interrupted by SIGTERM"
	}
	return "interrupted by signal " + i.Signal.String()
}

// ExitCode is the exit code of a command the signal stopped.
func (i Interrupted) ExitCode() int { return 128 + int(i.Signal) }

// defaultStopGrace is how long main waits for a command to return after a signal before it
// exits anyway: a goroutine blocked in the operating system (open(2) on a FIFO) or in a long
// computation cannot be stopped otherwise.
const defaultStopGrace = time.Second

// stopGrace is defaultStopGrace, or what serve needs to shut down gracefully.
var stopGrace atomic.Int64

// StopGrace is how long main waits after a signal for Run to return.
func StopGrace() time.Duration {
	if g := stopGrace.Load(); g > 0 {
		return time.Duration(g)
	}
	return defaultStopGrace
}

// stopsOnSignal annotates a command whose normal end is a signal (serve): Run returns its own
// exit code then, not the signal's.
const stopsOnSignal = "driverguard.stops-on-signal"

// version is the driverguard a command records: s.Version, else this binary's.
func (s Streams) version() string {
	if s.Version != "" {
		return s.Version
	}
	return readBuildInfo().String()
}

// Run executes the driverguard command line with args and returns the exit code.
func Run(ctx context.Context, s Streams, args []string) int {
	setLogDestination(newWarningHandler(s.Err))
	s.cfg = newConfiguration(s.In)
	root := newRootCommand(s)
	singleUse(root)
	root.SetArgs(joinOptionalValues(root, args))
	cmd, err := root.ExecuteContextC(ctx)
	var intr Interrupted
	if errors.As(context.Cause(ctx), &intr) && (cmd == nil || cmd.Annotations[stopsOnSignal] == "") {
		fmt.Fprintln(s.Err, "Error:", intr)
		return intr.ExitCode()
	}
	if err == nil {
		return ExitOK
	}
	var (
		ee      *exitError
		invalid *action.InvalidError
	)
	code := ExitUsage // cobra's own errors, and a job that could not judge its input
	switch {
	case errors.As(err, &ee):
		code = ee.code
	case errors.As(err, &invalid):
		code = ExitInvalid
	}
	if !errors.Is(err, errSilent) {
		line := errorLine(err, givenValues(cmd, args))
		fmt.Fprintln(s.Err, "Error:", line)
		if cmd != nil && cmd.Name() == "post-render" && slices.Contains(args, "--parent-stderr") {
			// Helm 4 shows a post-renderer plugin nothing but "exited with error": an error
			// before any judgement (a flag, unreadable manifests) must reach the user too.
			s.parentStderr(fmt.Appendf(nil, "driverguard post-render: Error: %s\n", line))
		}
	}
	return code
}

// errorLine is err's text for the "Error:" line of standard error, made inert. An error's text
// is built by the package that returns it, often of several lines (a list of problems, one a
// line), and quotes what it read. So: the values it quotes as they were given — the command's
// arguments and flags' values (file names, a release), the paths of the files it names
// (fs.PathError), the files of a policy set that does not load — are escaped whole wherever
// they appear (output.Escape: a line break in a file's name shows as \n); then the rest is
// escaped but its line breaks, which are the message's own (output.EscapeKeeping), so that no
// control character reaches the terminal.
func errorLine(err error, given []string) string {
	msg := err.Error()
	values := slices.Concat(given, namedValues(err))
	slices.SortFunc(values, func(a, b string) int { return len(b) - len(a) }) // a value inside another after it
	for _, v := range values {
		if e := output.Escape(v); e != v && v != "" {
			msg = strings.ReplaceAll(msg, v, e)
		}
	}
	return output.EscapeKeeping(msg, "\n")
}

// givenValues are the arguments of the command line, each flag's value given with = on its own,
// and the values of the flags cmd parsed (each element of a list).
func givenValues(cmd *cobra.Command, args []string) []string {
	out := slices.Clone(args)
	if cmd != nil {
		out = append(out, cmd.Flags().Args()...)
		cmd.Flags().Visit(func(f *pflag.Flag) {
			if sv, ok := f.Value.(pflag.SliceValue); ok {
				out = append(out, sv.GetSlice()...)
				return
			}
			out = append(out, f.Value.String())
		})
	}
	for _, v := range out {
		if _, after, ok := strings.Cut(v, "="); ok {
			out = append(out, after) // -o json=FILE, --set key=value, --nodes=FILE
		}
	}
	return out
}

// namedValues are the values err's chain names as fields: the paths of fs.PathErrors, the
// files of a policy load error (action.PolicyLoadError).
func namedValues(err error) []string {
	var out []string
	var walk func(error)
	walk = func(err error) {
		if err == nil {
			return
		}
		var pe *fs.PathError
		if errors.As(err, &pe) {
			out = append(out, pe.Path)
		}
		var le *action.PolicyLoadError
		if errors.As(err, &le) {
			for _, p := range le.Problems {
				out = append(out, p.File)
			}
		}
		// Every link on: errors.As stops at the first match (a value named twice is escaped once).
		if u, ok := err.(interface{ Unwrap() error }); ok {
			walk(u.Unwrap())
		}
		if u, ok := err.(interface{ Unwrap() []error }); ok {
			for _, e := range u.Unwrap() {
				walk(e)
			}
		}
	}
	walk(err)
	return out
}

// parentStderr writes msg to the parent's standard error when the streams can.
func (s Streams) parentStderr(msg []byte) {
	if s.ParentStderr != nil {
		s.ParentStderr(msg)
	}
}

// errSilent ends a command with its exit code after it printed its own explanation.
var errSilent = errors.New("reported")

// failedUnless is the end of a command that printed its verdict: exit 1 unless it passed.
func failedUnless(passed bool) error {
	if !passed {
		return invalidError(errSilent)
	}
	return nil
}

func newRootCommand(s Streams) *cobra.Command {
	root := &cobra.Command{
		Use:   "driverguard",
		Short: "Safe multi-version RBLN NPU drivers: render, preview, route, check and admit RBLNDrivers",
		Long: `driverguard renders the driverguard chart's driver values into RBLNDriver resources exactly as
Helm does, explains where every field came from, routes drivers to nodes, checks policies, and
serves the admission webhook that keeps several driver versions in one cluster safe.

Exit codes: 0 success; 1 the input was judged and rejected (invalid values, a denial, a failed
check); 2 the command could not judge (wrong usage, unreadable or unusable input, an input
larger than its limit); 130 and 143 stopped by SIGINT and SIGTERM.

Every input is read through a size limit: values files, --set-file files and policy files
(--max-values-size), node, driver, cluster-policy and workload files (--max-inventory-size),
the release plan --release reads, decompressed (--max-release-size); an AdmissionReview within
the webhook's 7 MiB.`,
		SilenceUsage:  true,
		SilenceErrors: true,
		Version:       readBuildInfo().String(),
	}
	root.SetVersionTemplate("{{.Version}}\n")
	root.SetIn(s.In)
	root.SetOut(s.Out)
	root.SetErr(s.Err)
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usageError(flagError(err)) })
	if s.cfg == nil {
		s.cfg = newConfiguration(s.In)
	}
	addLimitFlags(root.PersistentFlags(), s.cfg)
	serve := newServeCommand(s)
	// SIGTERM is how a pod is stopped: serve shuts down gracefully (its own flags say how
	// long) and exits with its own code; main waits for it (a second signal ends it at once).
	serve.Annotations = map[string]string{stopsOnSignal: "true"}
	root.PersistentPreRun = func(cmd *cobra.Command, _ []string) {
		if cmd.Annotations[stopsOnSignal] == "" {
			return
		}
		delay, _ := cmd.Flags().GetDuration("shutdown-delay")
		timeout, _ := cmd.Flags().GetDuration("shutdown-timeout")
		stopGrace.Store(int64(delay + timeout + 5*time.Second))
	}
	root.AddCommand(
		newRenderCommand(s),
		newPreviewCommand(s),
		newRouteCommand(s),
		newReviewCommand(s),
		serve,
		newCheckCommand(s),
		newPlanCommand(s),
		newAuditCommand(s),
		newTestCommand(s),
		newPostRenderCommand(s),
		newPolicyCommand(s),
		newVersionCommand(s),
	)
	return root
}

// flagError restates a flag parsing error with the offending value truncated: pflag quotes the
// whole value, which may be a 50 MB string.
func flagError(err error) error {
	var iv *pflag.InvalidValueError
	if !errors.As(err, &iv) || len(iv.GetValue()) <= validation.MaxQuotedValue {
		return err
	}
	f := iv.GetFlag()
	name := "--" + f.Name
	if f.Shorthand != "" {
		name = "-" + f.Shorthand + ", " + name
	}
	return fmt.Errorf("invalid argument %q for %q flag: %w", truncateValue(iv.GetValue()), name, errors.Unwrap(iv))
}
