package suite

import (
	"time"

	"github.com/driverguard/driverguard/finding"
)

// The types of a test run's result (`driverguard test`, its `-o json`).
type (
	// CaseResult is one case: its expectations missed (none: it passed) or the error that
	// kept it from being judged.
	CaseResult struct {
		Suite    string        `json:"suite"`
		Name     string        `json:"name"`
		Line     int           `json:"line"`
		Passed   bool          `json:"passed"`
		Mismatch []Mismatch    `json:"mismatches,omitempty"`
		Error    string        `json:"error,omitempty"`
		Results  []Result      `json:"results"`
		Duration time.Duration `json:"durationNs"`
	}
	// RunResult is every case of every suite with the rule coverage.
	RunResult struct {
		// Findings are the run's findings: a TestCaseFailed per expectation a case missed (at
		// its line), a TestCaseError per case that could not be judged, a RuleNeverFired (audit)
		// per rule coverage counts that no case made fire.
		Findings    []finding.Finding `json:"findings"`
		Cases       []CaseResult      `json:"cases"`
		Coverage    []RuleCoverage    `json:"coverage"`
		CoveragePct float64           `json:"coveragePercent"`
		MinCoverage float64           `json:"minCoverage,omitempty"`
		// CoverageOf are the patterns of --coverage-of that scoped the coverage (suites may
		// scope theirs too, with coverageOf).
		CoverageOf []string `json:"coverageOf,omitempty"`
		Passed     bool     `json:"passed"`
		Failed     int      `json:"failed"`
	}
)

// BuiltInRules are the rules of the decision core a suite's coverage counts (syntax findings
// carry field error types, which a case may expect but coverage does not list).
var BuiltInRules = []string{
	finding.RuleIdenticalNodeSelector, finding.RuleConflictingNodeSelector, finding.RulePotentialConflict,
	finding.RuleUpgradePolicy, finding.RuleClusterPolicyName, finding.RuleDriverLoss,
}
