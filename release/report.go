package release

import (
	"fmt"

	"github.com/driverguard/driverguard/api/v1alpha1"
	"github.com/driverguard/driverguard/cluster"
	"github.com/driverguard/driverguard/decision"
	"github.com/driverguard/driverguard/finding"
	"github.com/driverguard/driverguard/render"
	"github.com/driverguard/driverguard/routing"
)

// Report is the verdict of `driverguard check` (and of `preview`) on a release; its JSON
// form is `check -o json`.
type Report struct {
	// Findings are every finding, in this order: each object's (in Helm's order: denials,
	// warnings, audit findings, then what its verdict did not list), the nodes that would lose
	// their driver, the render warnings, the input warnings, then the drift now (level audit:
	// reported, never a failure).
	Findings []finding.Finding `json:"findings"`
	// Resources are the objects in Helm's order, each with its verdict.
	Resources []ObjectReport `json:"resources"`
	// Deleted are the drivers the release would delete (no longer rendered), sorted.
	Deleted []string `json:"deleted"`
	// RenderWarnings are legal but suspicious values (the first MaxRenderWarnings;
	// RenderWarningsOmitted counts the others).
	RenderWarnings        []render.Warning `json:"renderWarnings"`
	RenderWarningsOmitted int              `json:"renderWarningsOmitted,omitempty"`
	// DriverLoss are the nodes that would lose their driver (the first MaxDriverLoss by name;
	// DriverLossOmitted counts the others); they fail the check unless DriverLossAllowed
	// (--allow-driver-loss), and are then counted as warnings.
	DriverLoss        []NodeLoss `json:"driverLoss"`
	DriverLossOmitted int        `json:"driverLossOmitted,omitempty"`
	DriverLossAllowed bool       `json:"driverLossAllowed"`
	// Policies are the evaluated policy packages; Disabled those turned off.
	Policies []string `json:"policies"`
	Disabled []string `json:"disabled,omitempty"`
	// Failures counts denials plus unacknowledged driver losses; Warnings counts object,
	// render and acknowledged-loss warnings.
	Failures int `json:"failures"`
	Warnings int `json:"warnings"`
	// Audited counts the findings of policies in audit enforcement.
	Audited int `json:"audited,omitempty"`
	// Passed is false when there is a failure, or a warning with FailOnWarn.
	Passed     bool `json:"passed"`
	FailOnWarn bool `json:"failOnWarn"`
	// Inputs say what the cluster was read from and how many objects of each kind: a part
	// not given is unknown, not empty.
	Inputs cluster.Sources `json:"inputs"`
	// Basis is what a node's driver now was read from: "routing" (the current RBLNDrivers
	// route the nodes) or "ownerLabels" (the current drivers were not given: the nodes' owner
	// labels are all there is, and a stale one cannot be told from a driver).
	Basis string `json:"basis"`
	// InputWarnings are inputs that look like a failed read (counted as warnings).
	InputWarnings []string `json:"inputWarnings"`
	// Drift is what is wrong with the nodes now, whatever the values do — stale owner labels,
	// ties, unowned nodes (the audit's words) — with the current drivers (without them, only
	// owner labels no RBLNDriver can be named): the first
	// MaxDrift by node; DriftOmitted counts the others. It is not counted as a failure or a
	// warning: the values did not cause it.
	Drift        []routing.Drift `json:"drift"`
	DriftOmitted int             `json:"driftOmitted,omitempty"`
}

// ObjectReport is one object's verdict; its findings are the Report's (Findings), in order.
type ObjectReport struct {
	Kind      string `json:"kind"`
	Name      string `json:"name"`
	Operation string `json:"operation"`
	Allowed   bool   `json:"allowed"`
	// OmittedDeny, OmittedWarn and OmittedAudit count the findings beyond decision.MaxFindings
	// (an OmittedFindings finding says so too).
	OmittedDeny  int `json:"omittedDeny,omitempty"`
	OmittedWarn  int `json:"omittedWarn,omitempty"`
	OmittedAudit int `json:"omittedAudit,omitempty"`
}

// MaxDriverLoss is the most nodes a Report lists as losing their driver (`plan` lists every
// node), MaxRenderWarnings the most render warnings it lists.
const (
	MaxDriverLoss     = decision.MaxFindings
	MaxRenderWarnings = decision.MaxFindings
	MaxDrift          = decision.MaxFindings
)

// ReportOptions complete a Report.
type ReportOptions struct {
	RenderWarnings []render.Warning
	Policies       []string
	Disabled       []string
	// AllowDriverLoss acknowledges the nodes that would lose their driver.
	AllowDriverLoss bool
	// FailOnWarn fails the report on any warning.
	FailOnWarn bool
}

// Report summarises the result.
func (r *Result) Report(o ReportOptions) *Report {
	rep := &Report{
		Resources:             make([]ObjectReport, 0, len(r.Objects)),
		Deleted:               r.Deleted,
		RenderWarnings:        o.RenderWarnings[:min(len(o.RenderWarnings), MaxRenderWarnings)],
		RenderWarningsOmitted: max(len(o.RenderWarnings)-MaxRenderWarnings, 0),
		DriverLoss:            r.DriverLoss[:min(len(r.DriverLoss), MaxDriverLoss)],
		DriverLossOmitted:     max(len(r.DriverLoss)-MaxDriverLoss, 0),
		DriverLossAllowed:     o.AllowDriverLoss,
		Policies:              o.Policies,
		Disabled:              o.Disabled,
		FailOnWarn:            o.FailOnWarn,
		Inputs:                r.Sources,
		Basis:                 r.Basis,
		InputWarnings:         r.InputWarnings,
		Drift:                 r.Drift[:min(len(r.Drift), MaxDrift)],
		DriftOmitted:          max(len(r.Drift)-MaxDrift, 0),
	}
	if rep.InputWarnings == nil {
		rep.InputWarnings = []string{}
	}
	if rep.Drift == nil {
		rep.Drift = []routing.Drift{}
	}
	if rep.RenderWarnings == nil {
		rep.RenderWarnings = []render.Warning{}
	}
	if rep.Policies == nil {
		rep.Policies = []string{}
	}
	for _, j := range r.Objects {
		v := j.Verdict
		or := ObjectReport{Kind: j.Kind, Name: j.Name, Operation: j.Operation, Allowed: v.Allowed(),
			OmittedDeny: v.OmittedDenials, OmittedWarn: v.OmittedWarnings, OmittedAudit: v.OmittedAudit}
		rep.Findings = append(rep.Findings, v.Findings()...)
		rep.Findings = append(rep.Findings, v.OmittedFindings()...)
		rep.Failures += len(v.Denials) + or.OmittedDeny
		rep.Warnings += len(v.Warnings) + or.OmittedWarn
		rep.Audited += len(v.Audit) + or.OmittedAudit
		rep.Resources = append(rep.Resources, or)
	}
	lossLevel := finding.Deny
	if o.AllowDriverLoss {
		lossLevel = finding.Warn
	}
	for _, l := range rep.DriverLoss {
		rep.Findings = append(rep.Findings, finding.Finding{Rule: finding.RuleDriverLoss, Level: lossLevel,
			Object: finding.Object{Kind: finding.KindNode, Name: l.Node}, Message: l.Message(), Nodes: []string{l.Node}})
	}
	if n := rep.DriverLossOmitted; n > 0 {
		rep.Findings = append(rep.Findings, finding.Finding{Rule: finding.RuleDriverLoss, Level: lossLevel, Count: n,
			Message: fmt.Sprintf("%d more nodes would lose their driver (driverguard plan lists every node)", n)})
	}
	for _, w := range rep.RenderWarnings {
		rep.Findings = append(rep.Findings, finding.Finding{Rule: finding.RuleRenderWarning, Level: finding.Warn,
			Object: renderWarningObject(w.Resource), Message: w.String()})
	}
	if n := rep.RenderWarningsOmitted; n > 0 {
		rep.Findings = append(rep.Findings, finding.Finding{Rule: finding.RuleRenderWarning, Level: finding.Warn, Count: n,
			Message: fmt.Sprintf("%d more render warnings", n)})
	}
	rep.Findings = append(rep.Findings, InputFindings(rep.InputWarnings, rep.Drift)...)
	if n := rep.DriftOmitted; n > 0 {
		rep.Findings = append(rep.Findings, finding.Finding{Rule: finding.RuleOmittedFindings, Level: finding.Audit, Count: n,
			Message: fmt.Sprintf("%d more drift findings (driverguard audit lists every one)", n)})
	}
	if rep.Findings == nil {
		rep.Findings = []finding.Finding{}
	}
	rep.Warnings += len(o.RenderWarnings) + len(r.InputWarnings)
	if o.AllowDriverLoss {
		rep.Warnings += len(r.DriverLoss)
	} else {
		rep.Failures += len(r.DriverLoss)
	}
	rep.Passed = rep.Failures == 0 && (!o.FailOnWarn || rep.Warnings == 0)
	return rep
}

// InputFindings are the input warnings (warn: an input that looks like a failed read) and the
// drift now (audit: not caused by the change, it fails nothing) as findings.
func InputFindings(warnings []string, drift []routing.Drift) []finding.Finding {
	out := make([]finding.Finding, 0, len(warnings)+len(drift))
	for _, w := range warnings {
		out = append(out, finding.Finding{Rule: finding.RuleInputWarning, Level: finding.Warn,
			Object: finding.Object{Kind: finding.KindCluster, Name: "inputs"}, Message: w})
	}
	for _, d := range drift {
		out = append(out, finding.Finding{Rule: d.Kind, Level: finding.Audit,
			Object: finding.Object{Kind: finding.KindNode, Name: d.Node}, Message: "drift now, not caused by these values: " + d.Detail, Nodes: []string{d.Node}})
	}
	return out
}

// renderWarningObject is the object a render warning is about.
func renderWarningObject(resource string) finding.Object {
	if resource == v1alpha1.ClusterPolicyName {
		return finding.Object{Kind: "RBLNClusterPolicy", Name: resource}
	}
	return finding.Object{Kind: "RBLNDriver", Name: resource}
}
