package webhook

import (
	"context"

	admissionv1 "k8s.io/api/admission/v1"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/driverguard/driverguard/api/v1alpha1"
	"github.com/driverguard/driverguard/decision"
	"github.com/driverguard/driverguard/policy"
)

// DriverValidator decides RBLNDriver CREATE and UPDATE requests (SPEC §5) with the one
// decision core (decision.Decider) over the State's snapshot: its routing index judges the
// selector conflicts and the object's routing for the policies.
type DriverValidator struct {
	state   State
	decider *decision.Decider
}

var _ admission.Validator[*v1alpha1.RBLNDriver] = (*DriverValidator)(nil)

// NewDriverValidator returns the RBLNDriver decisions over state.
func NewDriverValidator(state State, opts Options) *DriverValidator {
	return &DriverValidator{state: state, decider: opts.decider()}
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
	req := decision.Request[*v1alpha1.RBLNDriver]{Operation: op, Object: obj, OldObject: old, Source: policy.SourceAdmission}
	withRequest(ctx, &req.RawObject, &req.RawOldObject, &req.UserInfo)
	verdict, err := v.decider.Driver(ctx, snap.Index(), req)
	return outcome(v1alpha1.GroupVersion.Group, verdict, err)
}
