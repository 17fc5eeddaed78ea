package decision

import (
	"fmt"

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
	return Finding{Rule: string(e.Type), Field: e.Field, Message: e.ErrorBody()}
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
	return Finding{Rule: rule, Field: e.Field, Message: e.ErrorBody()}
}

func warning(rule, field, format string, args ...any) Finding {
	return Finding{Rule: rule, Field: field, Message: fmt.Sprintf(format, args...)}
}

func policyFindings(rule string, ms []policy.Message) []Finding {
	out := make([]Finding, len(ms))
	for i, m := range ms {
		out[i] = Finding{Rule: rule, Package: m.Package, Message: m.Msg}
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
}

// Allowed reports whether the object is admitted.
func (v *Verdict) Allowed() bool { return len(v.Denials) == 0 }

// WarningTexts are the warnings as the webhook reports them, one line each.
func (v *Verdict) WarningTexts() []string {
	out := make([]string, len(v.Warnings))
	for i, w := range v.Warnings {
		out[i] = w.String()
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
