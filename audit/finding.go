package audit

import (
	"encoding/json"
	"strconv"

	"github.com/driverguard/driverguard/policy"
)

// Result is a finding's outcome, as openreports.io reports it.
type Result string

const (
	Pass  Result = "pass"
	Fail  Result = "fail"
	Warn  Result = "warn"
	Error Result = "error"
)

// BuiltinPolicy is the policy name of driverguard's built-in rules and of the drift.
const BuiltinPolicy = "driverguard"

// Finding is one result of a report.
type Finding struct {
	// Policy is BuiltinPolicy or a Rego package; Rule a built-in rule, a drift kind
	// (routing.Drift*), DriverImageNotFound, or a policy's deny or warn.
	Policy string `json:"policy"`
	Rule   string `json:"rule"`
	Result Result `json:"result"`
	// Field is the object's field the finding is about ("" for a policy's or the object's);
	// Message starts with it, as an admission response words it.
	Field string `json:"field,omitempty"`
	// Enforcement is what the rule does at admission: deny, warn or audit (a policy on
	// trial); drift and image findings are deny: they fail the audit.
	Enforcement policy.Enforcement `json:"enforcement"`
	Message     string             `json:"message"`
	// Subjects are the objects concerned: the RBLNDriver, the RBLNClusterPolicy, and for
	// drift a sample of the nodes.
	Subjects []Subject `json:"subjects,omitempty"`
	// Properties: instance (the driver's driver.instances key), nodes (how many), node,
	// pool, image.
	Properties map[string]string `json:"properties,omitempty"`
}

// Subject is an object a finding is about.
type Subject struct {
	Kind string `json:"kind"`
	Name string `json:"name"`
}

// Enforced reports whether the finding fails the audit: a fail of a rule that denies.
func (f Finding) Enforced() bool { return f.Result == Fail && f.Enforcement == policy.EnforceDeny }

// rank is the order of a finding's kind in a report: failures of rules that deny, errors,
// warnings, failures then warnings of policies on trial, passes.
func (f Finding) rank() int {
	switch {
	case f.Result == Pass:
		return 5
	case f.Enforcement == policy.EnforceAudit && f.Result == Fail:
		return 3
	case f.Enforcement == policy.EnforceAudit:
		return 4
	case f.Result == Fail:
		return 0
	case f.Result == Error:
		return 1
	}
	return 2
}

// breadth is the number of nodes a finding covers (its nodes property), 0 when it names none.
func (f Finding) breadth() int {
	n, err := strconv.Atoi(f.Properties["nodes"])
	if err != nil {
		return 0
	}
	return n
}

// encodedSize is about the bytes f takes in a ClusterReport: its JSON, plus what the
// ClusterReport adds to a result (source, severity, timestamp) and to each subject (apiVersion).
func (f Finding) encodedSize() int {
	data, err := json.Marshal(f)
	if err != nil {
		return MaxReportBytes + 1 // unreachable: a Finding holds strings only
	}
	return len(data) + 128 + 64*len(f.Subjects)
}

// severity is the openreports severity of a finding: high for what denies, medium for a
// warning, low for a policy on trial, info for a pass.
func (f Finding) severity() string {
	switch {
	case f.Result == Pass:
		return "info"
	case f.Enforcement == policy.EnforceAudit:
		return "low"
	case f.Result == Fail || f.Result == Error:
		return "high"
	}
	return "medium"
}

// Summary counts the results of a report, every one (not only those listed).
type Summary struct {
	Pass  int `json:"pass"`
	Fail  int `json:"fail"`
	Warn  int `json:"warn"`
	Error int `json:"error"`
}

func (s *Summary) add(r Result) {
	switch r {
	case Pass:
		s.Pass++
	case Fail:
		s.Fail++
	case Warn:
		s.Warn++
	case Error:
		s.Error++
	}
}

// Plus is the sum of two summaries.
func (s Summary) Plus(o Summary) Summary {
	return Summary{Pass: s.Pass + o.Pass, Fail: s.Fail + o.Fail, Warn: s.Warn + o.Warn, Error: s.Error + o.Error}
}
