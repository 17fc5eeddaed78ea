package action

import (
	"cmp"
	"context"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/driverguard/driverguard/finding"
	"github.com/driverguard/driverguard/suite"
)

// Test runs declarative test suites (`driverguard test`, docs/policy-authoring.md "Test suites"): every case judged by the
// decision core as Check would judge it, its expectations compared, rule coverage collected.
type Test struct {
	cfg *Configuration
	// Paths are suite files or folders searched for *.dgtest.yaml (none: the current folder).
	Paths []string
	// Select picks the cases whose "<suite file>/<case name>" matches (nil: every case).
	Select *regexp.Regexp
	// MinCoverage fails the run when fewer rules than this share (percent) fired.
	MinCoverage float64
	// CoverageOf, when set, are the rules coverage counts (--coverage-of): globs on rule IDs
	// (path.Match; a Rego package matches both its bodies). Each must match a rule of the
	// run.
	CoverageOf []string
}

// NewTest returns a Test.
func NewTest(cfg *Configuration) *Test { return &Test{cfg: cfg} }

// Run loads every suite (an unreadable one is an error naming its line, before any case
// runs) and judges its cases.
func (t *Test) Run(ctx context.Context) (*TestRunResult, error) {
	files, err := suite.Find(t.Paths)
	if err != nil {
		return nil, err
	}
	suites := make([]*suite.Suite, 0, len(files))
	for _, f := range files {
		s, err := suite.Load(f)
		if err != nil {
			return nil, err
		}
		suites = append(suites, s)
	}
	for _, p := range t.CoverageOf {
		if err := suite.CheckPattern(p); err != nil {
			return nil, fmt.Errorf("--coverage-of: %w", err)
		}
	}
	res := &TestRunResult{Cases: []TestCaseResult{}, MinCoverage: t.MinCoverage, CoverageOf: t.CoverageOf}
	cov := suite.NewCoverage()
	known := map[string]bool{} // the IDs of every rule coverage could count
	for _, s := range suites {
		if err := t.runSuite(ctx, s, cov, known, res); err != nil {
			return nil, err
		}
	}
	if err := checkCoverageOf("--coverage-of", t.CoverageOf, ruleIDs(known)); err != nil {
		return nil, err
	}
	if t.Select != nil && len(res.Cases) == 0 {
		n := 0
		for _, s := range suites {
			n += len(s.Tests)
		}
		return nil, fmt.Errorf("--run %q matches none of the %d cases found (it matches <suite file>/<case name>)", t.Select, n)
	}
	res.Coverage, res.CoveragePct = cov.Report()
	res.Findings = testFindings(res)
	res.Passed = res.Failed == 0 && res.CoveragePct >= t.MinCoverage
	return res, nil
}

// testFindings are the findings of a test run.
func testFindings(res *TestRunResult) []finding.Finding {
	out := []finding.Finding{}
	for _, c := range res.Cases {
		obj := finding.Object{Kind: finding.KindTestCase, Name: c.Name}
		if c.Error != "" {
			out = append(out, finding.Finding{Rule: finding.RuleTestCaseError, Level: finding.Deny, Object: obj, Message: c.Error,
				Location: &finding.Location{File: c.Suite, Line: max(c.Line, 1)}})
		}
		for _, m := range c.Mismatch {
			out = append(out, finding.Finding{Rule: finding.RuleTestCaseFailed, Level: finding.Deny, Object: obj, Message: m.String(),
				Location: &finding.Location{File: c.Suite, Line: max(cmp.Or(m.Line, c.Line), 1)}})
		}
	}
	for _, r := range res.Coverage { // only the rules coverage counts (--coverage-of, coverageOf)
		if r.Covered() {
			continue
		}
		f := finding.Finding{Rule: finding.RuleNeverFired, Level: finding.Audit,
			Object: finding.Object{Kind: "Rule", Name: r.Rule}, Message: "no case makes " + r.Rule + " fire"}
		if r.Title != "" && !strings.HasPrefix(r.Title, "Rego policy ") { // a title of its own
			f.Message += " (" + r.Title + ")"
		}
		if file, line, ok := ruleHome(r); ok { // a policy's rule body, at its line
			f.Location = &finding.Location{File: file, Line: line}
		}
		out = append(out, f)
	}
	return out
}

// ruleHome is the file and line of a policy's rule body (its Home, file:line).
func ruleHome(r suite.RuleCoverage) (string, int, bool) {
	if r.Source != finding.SourcePolicy {
		return "", 0, false
	}
	i := strings.LastIndexByte(r.Home, ':')
	if i <= 0 {
		return "", 0, false
	}
	line, err := strconv.Atoi(r.Home[i+1:])
	if err != nil || line < 1 {
		return "", 0, false
	}
	return r.Home[:i], line, true
}

// Rules of results beyond the decision's.
const (
	// RuleDriverLoss: a node that carries a driver now would get none.
	RuleDriverLoss = finding.RuleDriverLoss
	// RuleInvalidValues: the values do not render (the field errors of `render`).
	RuleInvalidValues = finding.RuleInvalidValues
	// RuleRenderWarning: legal but suspicious values (a render warning).
	RuleRenderWarning = finding.RuleRenderWarning
	// RuleOmittedFindings: findings beyond what the decision lists for one object, counted.
	RuleOmittedFindings = finding.RuleOmittedFindings
	// RuleInputWarning: an input that looks like a failed read (a node inventory without
	// nodes, ...), not a cluster.
	RuleInputWarning = finding.RuleInputWarning
)

// runSuite judges the selected cases of s, registering the rules coverage counts (those its
// coverageOf and --coverage-of name) and adding every rule it could count to known.
func (t *Test) runSuite(ctx context.Context, s *suite.Suite, cov *suite.Coverage, known map[string]bool, res *TestRunResult) error {
	selected := t.selected(s)
	run, rules, err := t.compileSuite(ctx, s)
	if err != nil {
		return err
	}
	if err := t.countRules(s, rules, cov, known); err != nil {
		return err
	}
	if run.inventory, err = t.readInventory(ctx, s, &s.Inventory, inventory{}); err != nil {
		return err
	}
	for _, c := range selected {
		cr, err := t.runCase(ctx, run, c, cov)
		if err != nil {
			return err
		}
		if !cr.Passed {
			res.Failed++
		}
		res.Cases = append(res.Cases, cr)
	}
	return nil
}

// selected are the cases of s that Select picks.
func (t *Test) selected(s *suite.Suite) []*suite.Case {
	var out []*suite.Case
	for i := range s.Tests {
		if t.Select == nil || t.Select.MatchString(s.File+"/"+s.Tests[i].Name) {
			out = append(out, &s.Tests[i])
		}
	}
	return out
}

// runCase judges one case and compares its expectations, adding its outcome to cov; the
// error is ctx's when the run was interrupted (no case after this one is judged).
func (t *Test) runCase(ctx context.Context, run *suiteRun, c *suite.Case, cov *suite.Coverage) (TestCaseResult, error) {
	start := time.Now()
	s := run.s
	cr := TestCaseResult{Suite: s.File, Name: c.Name, Line: c.Line, Results: []suite.Result{}}
	out, err := t.judgeCase(ctx, run, c)
	if ctx.Err() != nil { // interrupted: no case after this one was judged, report none
		return cr, ctx.Err()
	}
	switch {
	case err != nil:
		cr.Error = err.Error()
	default:
		cr.Results = out.Results
		cr.Mismatch = suite.Match(c, out)
		cr.Passed = len(cr.Mismatch) == 0
		cov.Add(s.File+"/"+c.Name, out)
	}
	cr.Duration = time.Since(start)
	return cr, nil
}
