package app

import (
	"fmt"
	"math"
	"regexp"

	"github.com/spf13/cobra"

	"github.com/driverguard/driverguard/action"
	"github.com/driverguard/driverguard/output"
)

func newTestCommand(s Streams) *cobra.Command {
	job := action.NewTest(s.cfg)
	formats := output.NewFlag(output.Table, judgingFormats...)
	var run string
	cmd := &cobra.Command{
		Use:   "test [PATH...] [--run REGEX] [--min-coverage PCT] [--coverage-of PATTERN] [-o FORMAT[=FILE]]...",
		Short: "Run declarative policy test suites (*.dgtest.yaml): values or objects against an inventory, with expected results",
		Long: `test runs every suite file (*.dgtest.yaml) found under the paths (default: the current folder,
recursively). A suite names its policies (and the bundled library unless library: false), an
inventory (nodes, drivers, the cluster policy, pods; files or inline objects) and its cases. Each
case gives values (with set), rendered objects (with oldObjects for an UPDATE) or an
AdmissionReview, and is judged by the webhook's own decision exactly as 'check' or 'review'
would judge it; its expectations (verdict, results by object, rule, result and message, the
plan's node actions) are compared with what came of it. docs/policy-authoring.md, "Test suites",
describes the format.

Coverage lists every rule — each policy's deny and warn rule bodies on their own
(<package>.deny, <package>.warn) and every built-in rule — with the cases that made it fire and
those that judged an object by it without it firing. An expected result's rule may name the
package (either body) or one body. --coverage-of PATTERN (repeatable) and a suite's coverageOf
list scope coverage, and --min-coverage, to the rules they match: rule IDs, or globs on them
(path.Match: driverguard.team.*), a policy package matching its deny and warn; a policy may be
named without its driverguard. prefix, as --disable names it (lib.pinned_version). A team reaches
--min-coverage 100 on its own policies without testing the bundled library again. A pattern
that matches no rule is an error (exit 2).

-o junit writes one test case per suite case; -o sarif one error per missed expectation (at its
line in the suite file) or case that could not be judged, and a note per rule coverage counts that
never fired (at the rule body's line for the suites' own policies).

Exit codes: 0 every case passed (and coverage reached --min-coverage); 1 a case failed, could not
be judged, or coverage is below --min-coverage; 2 a suite cannot be read (unknown field, missing
file: named with its line) or a policy does not compile.`,
		Example: `  driverguard test policies/tests/
  driverguard test --run 'canary' --min-coverage 100
  driverguard test --coverage-of 'driverguard.team.*' --min-coverage 100
  driverguard test -o junit > test-results.xml`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if job.MinCoverage < 0 || job.MinCoverage > 100 || math.IsNaN(job.MinCoverage) {
				return usageError(fmt.Errorf("--min-coverage %g: want a percentage from 0 to 100", job.MinCoverage))
			}
			job.Paths = args
			if run != "" {
				re, err := regexp.Compile(run)
				if err != nil {
					return fmt.Errorf("--run: %w", err)
				}
				job.Select = re
			}
			res, err := job.Run(cmd.Context())
			if err != nil {
				return err
			}
			if err := output.Write(s.Out, formats.Targets(), output.TestReport(res)); err != nil {
				return err
			}
			return failedUnless(res.Passed)
		},
	}
	cmd.Flags().StringVar(&run, "run", "", `run only the cases whose "<suite file>/<case name>" matches this regular expression`)
	cmd.Flags().Float64Var(&job.MinCoverage, "min-coverage", 0, "fail when fewer than this percentage of the rules fired in at least one case")
	cmd.Flags().StringArrayVar(&job.CoverageOf, "coverage-of", nil, "count only these rules in coverage: a rule ID, a policy package (its deny and warn; with or without driverguard., as --disable names it) or a glob such as 'team.*' (can repeat)")
	registerOutput(cmd.Flags(), formats)
	return cmd
}
