package decision

import (
	"fmt"
	"math"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/driverguard/driverguard/api/validation"
	"github.com/driverguard/driverguard/policy"
)

// Rules of findings beyond the field error types of syntax findings (FieldValueInvalid,
// FieldValueRequired, FieldValueForbidden, ...). A finding's rule is what the admission
// response reports as the cause type and what `check` reports as the rule, so the two can be
// compared one to one.
const (
	// RuleIdenticalNodeSelector: the selector is identical to another driver's.
	RuleIdenticalNodeSelector = "IdenticalNodeSelector"
	// RuleConflictingNodeSelector: the selector ties with another driver on existing nodes.
	RuleConflictingNodeSelector = "ConflictingNodeSelector"
	// RulePotentialConflict: the selector could tie with another driver on a future node
	// (a warning), or a conflict the old object already had (a warning on UPDATE).
	RulePotentialConflict = "PotentialConflict"
	// RulePolicyDenied and RulePolicyWarning are the messages of OPA policies.
	RulePolicyDenied  = "PolicyDenied"
	RulePolicyWarning = "PolicyWarning"
	// RulePolicyUnavailable: policy evaluation failed and the decider is fail-open (a warning).
	RulePolicyUnavailable = "PolicyUnavailable"
	// RuleUpgradePolicy: a legal but risky upgradePolicy (a warning).
	RuleUpgradePolicy = "UpgradePolicy"
	// RuleClusterPolicyName: an RBLNClusterPolicy that is not the one driverguard reads.
	RuleClusterPolicyName = "ClusterPolicyName"
)

// Finding is one reason for a denial or one warning.
type Finding struct {
	// Rule is a field error type (syntax) or one of the Rule constants.
	Rule string `json:"rule"`
	// Field is the object's field concerned, e.g. spec.nodeSelector ("" for a policy).
	Field string `json:"field,omitempty"`
	// Package is the Rego package of a policy finding.
	Package string `json:"package,omitempty"`
	// Message says what is wrong and how to fix it (without the field, which Field holds).
	Message string `json:"message"`
	// Enforcement is set on a policy finding whose policy does not deny: warn (a deny
	// message that warns) or audit (see Verdict.Audit).
	Enforcement policy.Enforcement `json:"enforcement,omitempty"`
}

// String is the finding on one line, as the webhook reports it: "<field>: <message>", or
// "policy <package>: <message>".
func (f Finding) String() string {
	switch {
	case f.Package != "":
		return "policy " + f.Package + ": " + f.Message
	case f.Rule == RulePolicyDenied || f.Rule == RulePolicyWarning:
		return "policy: " + f.Message
	case f.Field != "":
		return f.Field + ": " + f.Message
	}
	return f.Message
}

func fieldFinding(e *field.Error) Finding {
	e = validation.Quotable(field.ErrorList{e})[0]
	return Finding{Rule: string(e.Type), Field: e.Field, Message: capMessage(e.ErrorBody())}
}

// Bounds of a verdict: whatever an object holds, what is said about it stays readable and
// small (an admission response, a line of `check`).
const (
	// MaxFindings is the most denials, and the most warnings, a verdict holds; the rest are
	// counted (Verdict.OmittedDenials, Verdict.OmittedWarnings).
	MaxFindings = 50
	// MaxMessageBytes bounds one finding's message (a policy's message may quote anything).
	MaxMessageBytes = 1024
)

// capMessage cuts a message longer than MaxMessageBytes, saying how long it was.
func capMessage(m string) string {
	if len(m) <= MaxMessageBytes {
		return m
	}
	return validation.Truncate(m, MaxMessageBytes)
}

// FieldFindings are field errors as findings (rule: the error type).
func FieldFindings(errs ...*field.Error) []Finding {
	out := make([]Finding, len(errs))
	for i, e := range errs {
		out[i] = fieldFinding(e)
	}
	return out
}

func conflictFinding(rule string, e *field.Error) Finding {
	e = validation.Quotable(field.ErrorList{e})[0]
	return Finding{Rule: rule, Field: e.Field, Message: capMessage(e.ErrorBody())}
}

func warning(rule, field, format string, args ...any) Finding {
	return Finding{Rule: rule, Field: field, Message: capMessage(fmt.Sprintf(format, args...))}
}

func policyFindings(rule string, ms []policy.Message) []Finding {
	out := make([]Finding, len(ms))
	for i, m := range ms {
		out[i] = Finding{Rule: rule, Package: m.Package, Message: capMessage(m.Msg), Enforcement: m.Enforcement}
	}
	return out
}

// auditFindings are the messages of audit policies, each with the rule its message set had.
func auditFindings(ms []policy.Message) []Finding {
	out := make([]Finding, len(ms))
	for i, m := range ms {
		rule := RulePolicyDenied
		if m.Rule == "warn" {
			rule = RulePolicyWarning
		}
		out[i] = Finding{Rule: rule, Package: m.Package, Message: capMessage(m.Msg), Enforcement: m.Enforcement}
	}
	return out
}

// Verdict is the decision on one object.
type Verdict struct {
	// Kind and Name identify the object, e.g. RBLNDriver rbln-driver-atom-canary.
	Kind string `json:"kind"`
	Name string `json:"name"`
	// Denials are every failed rule (built-in ones first, then policy denies); none means
	// the object is allowed.
	Denials []Finding `json:"deny"`
	// Warnings are admitted with the object (admission warnings).
	Warnings []Finding `json:"warn"`
	// OmittedDenials and OmittedWarnings count the findings beyond the first MaxFindings of
	// each list, which the verdict does not hold.
	OmittedDenials  int `json:"omittedDeny,omitempty"`
	OmittedWarnings int `json:"omittedWarn,omitempty"`
	// Audit are the findings of policies in audit enforcement: they change neither the
	// verdict nor an admission's warnings; `check` lists them and the audit reports them.
	Audit        []Finding `json:"audit,omitempty"`
	OmittedAudit int       `json:"omittedAudit,omitempty"`
}

// deny adds denials, keeping at most MaxFindings and counting the rest.
func (v *Verdict) deny(fs ...Finding) {
	v.Denials, v.OmittedDenials = appendBounded(v.Denials, v.OmittedDenials, fs)
}

// warn adds warnings, keeping at most MaxFindings and counting the rest.
func (v *Verdict) warn(fs ...Finding) {
	v.Warnings, v.OmittedWarnings = appendBounded(v.Warnings, v.OmittedWarnings, fs)
}

func appendBounded(list []Finding, omitted int, fs []Finding) ([]Finding, int) {
	n := min(len(fs), max(MaxFindings-len(list), 0))
	return append(list, fs[:n]...), omitted + len(fs) - n
}

// audit adds audit findings, keeping at most MaxFindings and counting the rest.
func (v *Verdict) audit(fs ...Finding) {
	v.Audit, v.OmittedAudit = appendBounded(v.Audit, v.OmittedAudit, fs)
}

// Allowed reports whether the object is admitted.
func (v *Verdict) Allowed() bool { return len(v.Denials) == 0 && v.OmittedDenials == 0 }

// WarningTexts are the warnings as the webhook reports them, one line each, then how many
// more there are when the verdict holds only the first MaxFindings.
func (v *Verdict) WarningTexts() []string { return v.BoundedWarningTexts(math.MaxInt) }

// BoundedWarningTexts are the WarningTexts that fit in maxBytes, then how many more.
func (v *Verdict) BoundedWarningTexts(maxBytes int) []string {
	out := make([]string, 0, len(v.Warnings))
	size := 0
	for i, w := range v.Warnings {
		text := w.String()
		if size += len(text); size > maxBytes {
			return append(out, fmt.Sprintf("and %d more warnings", len(v.Warnings)-i+v.OmittedWarnings))
		}
		out = append(out, text)
	}
	if v.OmittedWarnings > 0 {
		out = append(out, fmt.Sprintf("and %d more warnings", v.OmittedWarnings))
	}
	return out
}

// UnavailableError is a decision that could not be made: the policies failed to evaluate
// and the decider is fail-closed. The webhook answers 503 (a retry may succeed); `check`
// exits 2.
type UnavailableError struct {
	Err error
}

func (e *UnavailableError) Error() string {
	return fmt.Sprintf("policy evaluation failed: %v; the decision is fail-closed, so the object is refused: retry, or fix the policy that fails (--policy-fail-open admits such objects with a warning)", e.Err)
}

func (e *UnavailableError) Unwrap() error { return e.Err }
