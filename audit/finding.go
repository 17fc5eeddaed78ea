package audit

import (
	"encoding/json"
	"strconv"

	"github.com/driverguard/driverguard/finding"
	"github.com/driverguard/driverguard/policy"
)

// Status is a result's outcome, as openreports.io reports it: pass, fail, warn or error.
type Status string

// The outcomes of a result.
const (
	Pass  Status = "pass"
	Fail  Status = "fail"
	Warn  Status = "warn"
	Error Status = "error"
)

// BuiltinPolicy is the policy name of driverguard's built-in rules and of the drift.
const BuiltinPolicy = "driverguard"

// Result is one result of a report: a finding of the one findings model (package finding:
// its rule, the level it has here, its object, field, message and nodes) with what an
// openreports result adds — its outcome (a pass, or an error, as well as a fail or a warning)
// and its properties. Finding.Enforcement is the enforcement of the rule at admission (deny,
// warn, audit), stated for every result: drift and image findings deny.
//
// A pass of a Rego policy (nothing it says of the object) has the rule of its deny body and
// reports no rule. In JSON (`audit -o json`) a result is written as openreports words it:
// policy, rule (the built-in rule or the Rego body), result, field, enforcement, message (the
// finding's Text), subjects, properties.
type Result struct {
	finding.Finding
	Status Status
	// Properties: instance (the driver's driver.instances key), nodes (how many), node, pool,
	// image, daemonSet, reason, credentials, and the image check's counts.
	Properties map[string]string
}

// Subject is an object a result is about.
type Subject struct {
	Kind string `json:"kind"`
	Name string `json:"name"`
}

// ReportPolicy is the result's openreports policy: the Rego package, or BuiltinPolicy.
func (r Result) ReportPolicy() string {
	if pkg := r.Finding.Policy(); pkg != "" {
		return pkg
	}
	return BuiltinPolicy
}

// ReportRule is the result's openreports rule: the built-in rule, the Rego body (deny, warn),
// or none for a pass of a Rego policy.
func (r Result) ReportRule() string {
	if r.Finding.Policy() == "" {
		return r.Rule
	}
	if r.Status == Pass {
		return ""
	}
	return finding.BodyOf(r.Rule)
}

// Subjects are the objects the result is about: its object, then the nodes (a sample).
func (r Result) Subjects() []Subject {
	var out []Subject
	if r.Object.Kind != "" && r.Object.Kind != finding.KindNode {
		out = append(out, Subject{Kind: r.Object.Kind, Name: r.Object.Name})
	}
	for _, n := range r.Nodes {
		out = append(out, Subject{Kind: finding.KindNode, Name: n})
	}
	return out
}

// MarshalJSON writes the result as openreports words it (see Result).
func (r Result) MarshalJSON() ([]byte, error) {
	return json.Marshal(struct {
		Policy      string             `json:"policy"`
		Rule        string             `json:"rule"`
		Result      Status             `json:"result"`
		Field       string             `json:"field,omitempty"`
		Enforcement policy.Enforcement `json:"enforcement"`
		Message     string             `json:"message"`
		Subjects    []Subject          `json:"subjects,omitempty"`
		Properties  map[string]string  `json:"properties,omitempty"`
	}{r.ReportPolicy(), r.ReportRule(), r.Status, r.Field, policy.Enforcement(r.Enforcement), r.Description(), r.Subjects(), r.Properties})
}

// Description is the result's openreports description: the finding's Text (its field, or
// its policy, then its message); none for a result without a message (a pass).
func (r Result) Description() string {
	if r.Message == "" {
		return ""
	}
	return r.Text()
}

// Enforced reports whether the result fails the audit: a fail of a rule that denies.
func (r Result) Enforced() bool {
	return r.Status == Fail && policy.Enforcement(r.Enforcement) == policy.EnforceDeny
}

// newResult is a result of outcome o of rule (a built-in rule, or a Rego rule ID) with
// enforcement e, at the level it has here: a policy on trial audits, a fail of a rule that
// warns warns, a fail or an error denies, a warning warns (a pass has none).
func newResult(rule string, o Status, e policy.Enforcement, object finding.Object, message string) Result {
	r := Result{Finding: finding.Finding{Rule: rule, Object: object, Message: message, Enforcement: finding.Level(e)}, Status: o}
	switch {
	case o == Pass:
	case e == policy.EnforceAudit:
		r.Level = finding.Audit
	case o == Fail && e == policy.EnforceWarn:
		r.Level = finding.Warn
	case o == Fail, o == Error:
		r.Level = finding.Deny
	default:
		r.Level = finding.Warn
	}
	return r
}

// rank is the order of a finding's kind in a report: failures of rules that deny, errors,
// warnings, failures then warnings of policies on trial, passes.
func (r Result) rank() int {
	switch {
	case r.Status == Pass:
		return 5
	case policy.Enforcement(r.Enforcement) == policy.EnforceAudit && r.Status == Fail:
		return 3
	case policy.Enforcement(r.Enforcement) == policy.EnforceAudit:
		return 4
	case r.Status == Fail:
		return 0
	case r.Status == Error:
		return 1
	}
	return 2
}

// breadth is the number of nodes a finding covers (its nodes property), 0 when it names none.
func (r Result) breadth() int {
	n, err := strconv.Atoi(r.Properties["nodes"])
	if err != nil {
		return 0
	}
	return n
}

// encodedSize is about the bytes f takes in a ClusterReport: its JSON, plus what the
// ClusterReport adds to a result (source, severity, timestamp) and to each subject (apiVersion).
func (r Result) encodedSize() int {
	data, err := json.Marshal(r)
	if err != nil {
		return MaxReportBytes + 1 // unreachable: a Finding holds strings only
	}
	return len(data) + 128 + 64*len(r.Subjects())
}

// severity is the openreports severity of a finding: high for what denies, medium for a
// warning, low for a policy on trial, info for a pass.
func (r Result) severity() string {
	switch {
	case r.Status == Pass:
		return "info"
	case policy.Enforcement(r.Enforcement) == policy.EnforceAudit:
		return "low"
	case r.Status == Fail || r.Status == Error:
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

func (s *Summary) add(r Status) {
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
