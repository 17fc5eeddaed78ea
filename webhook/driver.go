package webhook

import (
	"context"
	"fmt"
	"slices"
	"strings"

	admissionv1 "k8s.io/api/admission/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/driverguard/driverguard/api/v1alpha1"
	"github.com/driverguard/driverguard/api/validation"
	"github.com/driverguard/driverguard/policy"
	"github.com/driverguard/driverguard/routing"
)

// DriverValidator decides RBLNDriver CREATE and UPDATE requests (SPEC §5): the shared syntax
// rules of api/validation, selector conflicts against the other drivers and the live nodes
// (routing.Index.Conflicts on the State's snapshot), and the optional policies.
type DriverValidator struct {
	state  State
	policy *policyHook
}

var _ admission.Validator[*v1alpha1.RBLNDriver] = (*DriverValidator)(nil)

// NewDriverValidator returns the RBLNDriver decisions over state.
func NewDriverValidator(state State, opts Options) *DriverValidator {
	return &DriverValidator{state: state, policy: newPolicyHook(opts)}
}

// ValidateCreate decides the creation of obj.
func (v *DriverValidator) ValidateCreate(ctx context.Context, obj *v1alpha1.RBLNDriver) (admission.Warnings, error) {
	return v.validate(ctx, string(admissionv1.Create), obj, nil)
}

// ValidateUpdate decides the change from oldObj to newObj. Conflicts that oldObj already had
// are warnings, not denials: a version bump is never blocked by an old tie.
func (v *DriverValidator) ValidateUpdate(ctx context.Context, oldObj, newObj *v1alpha1.RBLNDriver) (admission.Warnings, error) {
	return v.validate(ctx, string(admissionv1.Update), newObj, oldObj)
}

// ValidateDelete allows every deletion (the webhook configuration does not send them).
func (v *DriverValidator) ValidateDelete(context.Context, *v1alpha1.RBLNDriver) (admission.Warnings, error) {
	return nil, nil
}

func (v *DriverValidator) validate(ctx context.Context, op string, obj, old *v1alpha1.RBLNDriver) (admission.Warnings, error) {
	snap, err := v.state.Snapshot(ctx)
	if err != nil {
		return nil, err
	}
	errs := driverSyntaxErrors(obj)
	syntaxOK := len(errs) == 0
	var warnings []string
	if syntaxOK {
		w, cerrs := DriverConflicts(snap.Index(), obj, old)
		warnings, errs = w, cerrs
	}
	deny, pw, err := v.policy.evaluate(ctx, func() *policy.Input { return driverPolicyInput(ctx, snap, op, obj, old, syntaxOK) })
	warnings = append(warnings, pw...)
	if err != nil {
		return warnings, err
	}
	if len(errs) > 0 || len(deny) > 0 {
		return warnings, &Rejection{Group: v1alpha1.GroupVersion.Group, Kind: "RBLNDriver", Name: obj.Name, Errs: errs, Policy: deny}
	}
	return warnings, nil
}

// driverSyntaxErrors applies the shared rules: the name must be a DNS-1123 label (it becomes
// the owner label's value), the selector must use valid, non-reserved label keys and values,
// and only the default driver may have an empty selector.
func driverSyntaxErrors(d *v1alpha1.RBLNDriver) field.ErrorList {
	errs := validation.ValidateDriverName(d.Name, field.NewPath("metadata", "name"))
	return append(errs, validation.ValidateDriverSpec(d.Name, &d.Spec, field.NewPath("spec"))...)
}

var nodeSelectorPath = field.NewPath("spec", "nodeSelector")

// DriverConflicts decides the selector conflicts of obj against the drivers and nodes of ix
// (obj replaces the indexed driver of the same name, so an UPDATE never conflicts with its own
// old version). It returns errors for conflicts obj introduces — an identical selector, or a
// tie on an existing node — and warnings for ties that could only happen on a future node and,
// on UPDATE (old != nil), for conflicts old already had. obj must be syntactically valid.
func DriverConflicts(ix *routing.Index, obj, old *v1alpha1.RBLNDriver) (warnings []string, errs field.ErrorList) {
	rep := ix.Conflicts(*obj)
	intro := rep
	if old != nil {
		intro = rep.Introduced(ix.Conflicts(*old))
	}
	sel := formatSelector(obj.Spec.NodeSelector)

	blocked := map[string]bool{} // resources already reported as a denial
	for _, p := range intro.Potential {
		if !p.Identical {
			continue
		}
		blocked[p.Resource] = true
		errs = append(errs, field.Invalid(nodeSelectorPath, sel, fmt.Sprintf(
			"is identical to the nodeSelector of RBLNDriver %q: two drivers with the same selector tie on every node they select, so none of those nodes gets a driver; "+
				"change one selector (e.g. add a label that only the more specific driver selects) or delete one of the two drivers", p.Resource)))
	}
	for _, c := range intro.Ties {
		others := otherResources(c.Resources, obj.Name)
		for _, o := range others {
			blocked[o] = true
		}
		errs = append(errs, field.Invalid(nodeSelectorPath, sel, fmt.Sprintf(
			"ties with %s on %s: neither selector is a strict superset of the other, so no unique owner can be chosen and the node(s) would get no driver (ConflictingNodeSelector); "+
				"make one selector a strict superset of the other, select disjoint nodes, or relabel the node(s)", quoteList(others), nodeList(c))))
	}

	introTies := map[string]bool{}
	for _, c := range intro.Ties {
		introTies[strings.Join(c.Resources, "\x00")] = true
	}
	introPot := map[string]bool{}
	for _, p := range intro.Potential {
		introPot[p.Resource] = true
	}
	for _, c := range rep.Ties {
		if introTies[strings.Join(c.Resources, "\x00")] {
			continue
		}
		others := otherResources(c.Resources, obj.Name)
		for _, o := range others {
			blocked[o] = true
		}
		warnings = append(warnings, fmt.Sprintf(
			"%s: this RBLNDriver already ties with %s on %s with its current selector; the change does not introduce the tie, so it is allowed, but those nodes get no driver until one selector is a strict superset of the other",
			nodeSelectorPath, quoteList(others), nodeList(c)))
	}
	for _, p := range rep.Potential {
		if blocked[p.Resource] {
			continue
		}
		switch {
		case p.Identical: // pre-existing (introduced ones are denied above)
			warnings = append(warnings, fmt.Sprintf(
				"%s: already identical to the nodeSelector of RBLNDriver %q before this change; allowed because the change does not introduce it, but the two drivers tie on every node they select: change one selector",
				nodeSelectorPath, p.Resource))
		case introPot[p.Resource] || old == nil:
			warnings = append(warnings, fmt.Sprintf(
				"%s: could tie with RBLNDriver %q on a future node labelled %s (no existing node ties them today); make one selector a strict superset of the other to rule it out",
				nodeSelectorPath, p.Resource, formatSelector(p.Labels)))
		default:
			warnings = append(warnings, fmt.Sprintf(
				"%s: could already tie with RBLNDriver %q on a future node labelled %s before this change; make one selector a strict superset of the other to rule it out",
				nodeSelectorPath, p.Resource, formatSelector(p.Labels)))
		}
	}
	return warnings, errs
}

func otherResources(resources []string, self string) []string {
	return slices.DeleteFunc(slices.Clone(resources), func(s string) bool { return s == self })
}

// quoteList names drivers: RBLNDriver "a", or RBLNDrivers "a" and "b".
func quoteList(names []string) string {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = fmt.Sprintf("%q", n)
	}
	if len(q) == 1 {
		return "RBLNDriver " + q[0]
	}
	return "RBLNDrivers " + strings.Join(q, " and ")
}

// nodeList names the tied nodes: "node(s) a, b" or "3 node(s) (a, b, ...)".
func nodeList(c routing.Conflict) string {
	names := strings.Join(c.Nodes, ", ")
	if c.Total > len(c.Nodes) {
		return fmt.Sprintf("%d existing node(s), e.g. %s", c.Total, names)
	}
	return fmt.Sprintf("existing node(s) %s", names)
}

// formatSelector prints a selector as {k=v,...}, sorted.
func formatSelector(sel map[string]string) string {
	return "{" + labels.Set(sel).String() + "}"
}
