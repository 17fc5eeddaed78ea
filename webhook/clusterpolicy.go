package webhook

import (
	"context"

	admissionv1 "k8s.io/api/admission/v1"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/driverguard/driverguard/api/v1alpha1"
	"github.com/driverguard/driverguard/decision"
	"github.com/driverguard/driverguard/policy"
)

// ClusterPolicyValidator decides RBLNClusterPolicy CREATE and UPDATE requests (SPEC §5) with
// the one decision core: upgradePolicy sanity and the optional policies.
type ClusterPolicyValidator struct {
	state   State
	decider *decision.Decider
}

var _ admission.Validator[*v1alpha1.RBLNClusterPolicy] = (*ClusterPolicyValidator)(nil)

// NewClusterPolicyValidator returns the RBLNClusterPolicy decisions over state.
func NewClusterPolicyValidator(state State, opts Options) *ClusterPolicyValidator {
	return &ClusterPolicyValidator{state: state, decider: opts.decider()}
}

// ValidateCreate decides the creation of obj.
func (v *ClusterPolicyValidator) ValidateCreate(ctx context.Context, obj *v1alpha1.RBLNClusterPolicy) (admission.Warnings, error) {
	return v.validate(ctx, string(admissionv1.Create), obj, nil)
}

// ValidateUpdate decides the change from oldObj to newObj.
func (v *ClusterPolicyValidator) ValidateUpdate(ctx context.Context, oldObj, newObj *v1alpha1.RBLNClusterPolicy) (admission.Warnings, error) {
	return v.validate(ctx, string(admissionv1.Update), newObj, oldObj)
}

// ValidateDelete allows every deletion.
func (v *ClusterPolicyValidator) ValidateDelete(context.Context, *v1alpha1.RBLNClusterPolicy) (admission.Warnings, error) {
	return nil, nil
}

func (v *ClusterPolicyValidator) validate(ctx context.Context, op string, obj, old *v1alpha1.RBLNClusterPolicy) (admission.Warnings, error) {
	if v.decider.Policy != nil {
		// Policies read the cluster view: refuse (503) until it is synced rather than
		// decide on an empty one.
		if _, err := v.state.Snapshot(ctx); err != nil {
			return nil, err
		}
	}
	req := decision.Request[*v1alpha1.RBLNClusterPolicy]{Operation: op, Object: obj, OldObject: old, Source: policy.SourceAdmission}
	withRequest(ctx, &req.RawObject, &req.RawOldObject, &req.UserInfo)
	verdict, err := v.decider.ClusterPolicy(ctx, req)
	return outcome(v1alpha1.GroupVersion.Group, verdict, err)
}
