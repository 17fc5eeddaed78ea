package output

import (
	"fmt"
	"io"
	"strings"

	"github.com/driverguard/driverguard/finding"
	"github.com/driverguard/driverguard/suite"
)

// TestReport is a test run for the writers: each case a subject (a JUnit case of its suite
// file), failed by the expectations it missed.
func TestReport(res *suite.RunResult) *Report {
	r := &Report{Tool: "driverguard test", Findings: res.Findings, Document: res, Rules: finding.NewRegistry(),
		OnlyJudged: true, Table: func(w io.Writer) error { return printTestTable(w, res) }}
	for _, c := range res.Cases {
		r.Judged = append(r.Judged, Subject{Object: finding.Object{Kind: finding.KindTestCase, Name: c.Name},
			Name: c.Name, Group: c.Suite, Location: &finding.Location{File: c.Suite, Line: c.Line}, Duration: max(c.Duration, 1), Error: c.Error})
	}
	return r
}

// printTestTable prints each case (PASS, FAIL with what was expected and what came, ERROR),
// then the coverage and a summary.
func printTestTable(w io.Writer, res *suite.RunResult) error {
	for _, c := range res.Cases {
		switch {
		// Names, messages and policies' words are the suite's: escaped, so that they cannot
		// act on the terminal.
		case c.Error != "":
			fmt.Fprintf(w, "ERROR %s:%d %s\n  %s\n", Escape(c.Suite), c.Line, Escape(c.Name), Escape(c.Error))
		case !c.Passed:
			fmt.Fprintf(w, "FAIL  %s:%d %s\n", Escape(c.Suite), c.Line, Escape(c.Name))
			for _, m := range c.Mismatch {
				fmt.Fprintf(w, "  line %d: expected %s\n          got %s\n", m.Line, Escape(m.Expected), Escape(m.Got))
			}
		default:
			fmt.Fprintf(w, "PASS  %s:%d %s\n", Escape(c.Suite), c.Line, Escape(c.Name))
		}
	}
	fmt.Fprintln(w, "\nCOVERAGE")
	tw := newTable(w)
	fmt.Fprintln(tw, "RULE\tFIRED\tPASSED")
	var uncovered []string
	for _, r := range res.Coverage {
		name := r.Rule
		if r.BuiltIn {
			name += " (built-in)"
		}
		fmt.Fprintf(tw, "%s\t%d\t%d\n", Escape(name), len(r.Fired), len(r.Passed))
		if !r.Covered() {
			uncovered = append(uncovered, r.Rule)
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if len(uncovered) > 0 {
		fmt.Fprintf(w, "never fired: %s\n", Escape(strings.Join(uncovered, ", ")))
	}
	verdict := "passed"
	if !res.Passed {
		verdict = "FAILED"
		if res.Failed == 0 {
			verdict = fmt.Sprintf("FAILED (coverage below --min-coverage %g%%)", res.MinCoverage)
		}
	}
	scope := ""
	if len(res.CoverageOf) > 0 {
		scope = " matching --coverage-of " + Escape(strings.Join(res.CoverageOf, ", "))
	}
	_, err := fmt.Fprintf(w, "\n%d cases, %d failed; coverage %.1f%% of %d rules%s; %s\n",
		len(res.Cases), res.Failed, res.CoveragePct, len(res.Coverage), scope, verdict)
	return err
}
