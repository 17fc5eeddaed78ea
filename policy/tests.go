package policy

import (
	"cmp"
	"context"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/storage/inmem"
	"github.com/open-policy-agent/opa/v1/tester"
)

// TestOptions configure RunTests.
type TestOptions struct {
	// Dirs are policy directories; their modules, tests and data are compiled together with
	// the bundled library, its tests and fixtures.
	Dirs []string
	// Run, when set, is a regular expression: only tests whose package.name matches run.
	Run string
	// Timeout bounds each test (5s when zero).
	Timeout time.Duration
	// MaxFileBytes bounds one file of Dirs (DefaultMaxFileBytes when zero).
	MaxFileBytes int64
}

// TestOutcome is the result of one Rego test.
type TestOutcome string

// Test outcomes.
const (
	TestPass  TestOutcome = "PASS"
	TestFail  TestOutcome = "FAIL"
	TestError TestOutcome = "ERROR"
	TestSkip  TestOutcome = "SKIP" // todo_ tests
)

// TestResult is one Rego test's result.
type TestResult struct {
	// Package is the test's package without data., e.g. driverguard.team_test.
	Package string `json:"package"`
	// Name is the test rule, e.g. test_deny_latest.
	Name    string      `json:"name"`
	File    string      `json:"file"`
	Line    int         `json:"line"`
	Outcome TestOutcome `json:"outcome"`
	// Error explains an ERROR outcome.
	Error string `json:"error,omitempty"`
	// Output is what the test printed (print()).
	Output   string        `json:"output,omitempty"`
	Duration time.Duration `json:"duration"`
	// Bundled is true for the library's own tests.
	Bundled bool `json:"bundled"`
}

// RunTests runs the Rego unit tests (test_* rules) of the bundled library and of dirs with
// OPA's test runner, exactly as `opa test` would with the library's files beside the user's.
// A directory that does not parse or compile is a *LoadError.
func RunTests(ctx context.Context, opts TestOptions) ([]TestResult, error) {
	if opts.Timeout <= 0 {
		opts.Timeout = 5 * time.Second
	}
	if opts.Run != "" {
		if _, err := regexp.Compile(opts.Run); err != nil {
			return nil, fmt.Errorf("policy: --run %q is not a regular expression: %w", opts.Run, err)
		}
	}
	lib, err := library()
	if err != nil {
		return nil, fmt.Errorf("policy: the bundled library does not parse: %w", err)
	}
	files, err := readDirs(opts.Dirs, true, opts.MaxFileBytes)
	if err != nil {
		return nil, err
	}
	user, problems := parseFiles(files)
	if len(problems) > 0 {
		return nil, newLoadError(problems...)
	}
	// The same checks as the engine's (checkSet), with the test modules held apart.
	tests := map[string]*ast.Module{}
	for k, m := range user.modules {
		if strings.HasSuffix(k, "_test.rego") {
			tests[k] = m
			delete(user.modules, k)
		}
	}
	checked, err := checkSet(lib.policies, user, tests, nil, nil)
	if err != nil {
		return nil, err
	}
	modules := map[string]*ast.Module{}
	for _, set := range []map[string]*ast.Module{checked.modules, lib.tests, tests} {
		for k, m := range set {
			modules[k] = m
		}
	}
	store := inmem.NewFromObjectWithOpts(user.data, inmem.OptRoundTripOnWrite(false))
	runner := tester.NewRunner().
		SetCompiler(newCompiler().WithEnablePrintStatements(true)).
		SetStore(store).
		SetModules(modules).
		CapturePrintOutput(true).
		SetTimeout(opts.Timeout).
		Filter(opts.Run)
	ch, err := runner.RunTests(ctx, nil)
	if err != nil {
		return nil, newLoadError(problemsOf(err, "")...)
	}
	var results []TestResult
	for r := range ch {
		results = append(results, testResult(r))
	}
	slices.SortFunc(results, func(a, b TestResult) int {
		return cmp.Or(cmp.Compare(a.File, b.File), cmp.Compare(a.Line, b.Line), cmp.Compare(a.Name, b.Name))
	})
	return results, ctx.Err()
}

func testResult(r *tester.Result) TestResult {
	t := TestResult{
		Package:  strings.TrimPrefix(r.Package, "data."),
		Name:     r.Name,
		Output:   string(r.Output),
		Duration: r.Duration,
	}
	if r.Location != nil {
		t.File, t.Line = r.Location.File, r.Location.Row
		t.Bundled = strings.HasPrefix(t.File, bundledPrefix)
	}
	switch {
	case r.Error != nil:
		t.Outcome, t.Error = TestError, r.Error.Error()
	case r.Skip:
		t.Outcome = TestSkip
	case r.Fail:
		t.Outcome = TestFail
	default:
		t.Outcome = TestPass
	}
	return t
}
