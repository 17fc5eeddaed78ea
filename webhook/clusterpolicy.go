package webhook

import (
	"context"
	"fmt"

	admissionv1 "k8s.io/api/admission/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/driverguard/driverguard/api/v1alpha1"
	"github.com/driverguard/driverguard/api/validation"
	"github.com/driverguard/driverguard/policy"
)

// ClusterPolicyValidator decides RBLNClusterPolicy CREATE and UPDATE requests (SPEC §5):
// upgradePolicy sanity (api/validation.ValidateUpgradePolicy: negative counts and timeouts are
// denied, reboot without drain is a warning) and the optional policies.
type ClusterPolicyValidator struct {
	state  State
	policy *policyHook
}

var _ admission.Validator[*v1alpha1.RBLNClusterPolicy] = (*ClusterPolicyValidator)(nil)

// NewClusterPolicyValidator returns the RBLNClusterPolicy decisions over state.
func NewClusterPolicyValidator(state State, opts Options) *ClusterPolicyValidator {
	return &ClusterPolicyValidator{state: state, policy: newPolicyHook(opts)}
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
	errs, warnings := ClusterPolicyRules(obj)
	var deny []policy.Message
	if v.policy.eval != nil {
		snap, err := v.state.Snapshot(ctx)
		if err != nil {
			return warnings, err
		}
		d, pw, err := v.policy.evaluate(ctx, func() *policy.Input { return clusterPolicyInput(ctx, snap, op, obj, old) })
		warnings = append(warnings, pw...)
		if err != nil {
			return warnings, err
		}
		deny = d
	}
	if len(errs) > 0 || len(deny) > 0 {
		return warnings, &Rejection{Group: v1alpha1.GroupVersion.Group, Kind: "RBLNClusterPolicy", Name: obj.Name, Errs: errs, Policy: deny}
	}
	return warnings, nil
}

// ClusterPolicyRules applies the built-in RBLNClusterPolicy rules.
func ClusterPolicyRules(cp *v1alpha1.RBLNClusterPolicy) (field.ErrorList, []string) {
	errs, warnings := validation.ValidateUpgradePolicy(&cp.Spec.Driver.UpgradePolicy, field.NewPath("spec", "driver", "upgradePolicy"))
	for i, e := range errs {
		if e.Type == field.ErrorTypeInvalid {
			errs[i].Detail = e.Detail + ": negative counts and timeouts have no meaning; use 0 for unlimited or no timeout"
		}
	}
	if cp.Name != v1alpha1.ClusterPolicyName {
		warnings = append(warnings, fmt.Sprintf("metadata.name: driverguard reads the RBLNClusterPolicy named %q; a policy named %q applies only while no %q exists",
			v1alpha1.ClusterPolicyName, cp.Name, v1alpha1.ClusterPolicyName))
	}
	return errs, warnings
}
