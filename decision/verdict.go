package decision

import (
	"fmt"
	"math"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/driverguard/driverguard/api/validation"
	"github.com/driverguard/driverguard/finding"
	"github.com/driverguard/driverguard/policy"
)

// PolicyDeniedCause is the cause type of a policy's denial in an admission response (its
// field is "policy:<package>"); the finding's rule is the Rego rule body (<package>.deny).
const PolicyDeniedCause = "PolicyDenied"

// Finding is one reason for a denial, one warning or one audit finding: the one findings
// model (package finding).
type Finding = finding.Finding

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

// policyFindings are the messages of policies as findings of their rule bodies.
func policyFindings(ms []policy.Message) []Finding {
	out := make([]Finding, len(ms))
	for i, m := range ms {
		body := finding.BodyDeny
		if m.Rule == finding.BodyWarn {
			body = finding.BodyWarn
		}
		out[i] = Finding{Rule: finding.RegoRule(m.Package, body), Message: capMessage(m.Msg), Enforcement: finding.Level(m.Enforcement)}
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

// Denied is a verdict on an object that denies it for fs.
func Denied(kind, name string, fs ...Finding) *Verdict {
	v := &Verdict{Kind: kind, Name: name}
	v.deny(fs...)
	return v
}

// Warned is a verdict that allows an object with the warnings fs (none: allowed as it is).
func Warned(kind, name string, fs ...Finding) *Verdict {
	v := &Verdict{Kind: kind, Name: name}
	v.warn(fs...)
	return v
}

// deny adds denials, keeping at most MaxFindings and counting the rest.
func (v *Verdict) deny(fs ...Finding) {
	v.Denials, v.OmittedDenials = v.appendBounded(v.Denials, v.OmittedDenials, fs, finding.Deny)
}

// warn adds warnings, keeping at most MaxFindings and counting the rest.
func (v *Verdict) warn(fs ...Finding) {
	v.Warnings, v.OmittedWarnings = v.appendBounded(v.Warnings, v.OmittedWarnings, fs, finding.Warn)
}

// audit adds audit findings, keeping at most MaxFindings and counting the rest.
func (v *Verdict) audit(fs ...Finding) {
	v.Audit, v.OmittedAudit = v.appendBounded(v.Audit, v.OmittedAudit, fs, finding.Audit)
}

// appendBounded appends fs to list as findings of level on the verdict's object, up to
// MaxFindings, and counts the rest.
func (v *Verdict) appendBounded(list []Finding, omitted int, fs []Finding, level finding.Level) ([]Finding, int) {
	n := min(len(fs), max(MaxFindings-len(list), 0))
	start := len(list)
	list = append(list, fs[:n]...)
	for i := start; i < len(list); i++ {
		list[i].Level, list[i].Object = level, finding.Object{Kind: v.Kind, Name: v.Name}
	}
	return list, omitted + len(fs) - n
}

// OmittedFindings say how many findings of each level the verdict counted without listing
// them: an OmittedFindings finding per level.
func (v *Verdict) OmittedFindings() []Finding {
	var out []Finding
	for _, g := range []struct {
		level, word finding.Level
		n           int
	}{{finding.Deny, "fail", v.OmittedDenials}, {finding.Warn, finding.Warn, v.OmittedWarnings}, {finding.Audit, finding.Audit, v.OmittedAudit}} {
		if g.n > 0 {
			out = append(out, Finding{Rule: finding.RuleOmittedFindings, Level: g.level, Count: g.n,
				Object:  finding.Object{Kind: v.Kind, Name: v.Name},
				Message: fmt.Sprintf("%d more %s findings not listed: the decision lists the first %d of each kind per object", g.n, g.word, MaxFindings)})
		}
	}
	return out
}

// Findings are the verdict's findings, denials first, then warnings and audit findings.
func (v *Verdict) Findings() []Finding {
	out := make([]Finding, 0, len(v.Denials)+len(v.Warnings)+len(v.Audit))
	out = append(out, v.Denials...)
	out = append(out, v.Warnings...)
	return append(out, v.Audit...)
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
		text := w.Text()
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
