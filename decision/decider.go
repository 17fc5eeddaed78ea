package decision

import (
	"context"
	"encoding/json"
	"fmt"

	authenticationv1 "k8s.io/api/authentication/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/driverguard/driverguard/api/v1alpha1"
	"github.com/driverguard/driverguard/api/validation"
	"github.com/driverguard/driverguard/policy"
	"github.com/driverguard/driverguard/routing"
)

// View is the routing side of the cluster a decision reads: [routing.Index] (an immutable
// snapshot, at admission) and [routing.Cluster] (a release replayed one object at a time, at
// render time) are views. Both judge a candidate in place of the stored driver of the same
// name.
type View interface {
	Conflicts(candidate v1alpha1.RBLNDriver) routing.ConflictReport
	Assess(candidate *v1alpha1.RBLNDriver) routing.Assessment
}

var (
	_ View = (*routing.Index)(nil)
	_ View = (*routing.Cluster)(nil)
)

// Request is one object to decide on.
type Request[T any] struct {
	// Operation is policy.OperationCreate or policy.OperationUpdate.
	Operation string
	// Object is the object; OldObject the stored one on UPDATE (nil on CREATE).
	Object    T
	OldObject T
	// RawObject and RawOldObject, when set, are the objects' JSON as received (an admission
	// request's): policies see them instead of the typed objects re-encoded.
	RawObject, RawOldObject json.RawMessage
	// UserInfo is the requesting user (admission only).
	UserInfo *authenticationv1.UserInfo
	// Source is policy.SourceAdmission or policy.SourceRender.
	Source policy.Source
}

// Decider makes the decision. The zero value decides with the built-in rules only.
type Decider struct {
	// Policy evaluates the OPA policies; nil evaluates none. Its deadline bounds an evaluation.
	Policy policy.Evaluator
	// PolicyFailOpen admits an object whose policy evaluation fails, with a warning. The
	// default (false) is fail-closed: the decision fails with an *UnavailableError.
	PolicyFailOpen bool
}

// Driver decides on an RBLNDriver with view as the cluster.
func (d *Decider) Driver(ctx context.Context, view View, req Request[*v1alpha1.RBLNDriver]) (*Verdict, error) {
	obj, old := req.Object, req.OldObject
	v := &Verdict{Kind: "RBLNDriver", Name: obj.Name}
	// The view validates the driver (api/validation.ValidateDriver) before it routes it: its
	// errors are the syntax findings, and an invalid driver is not routed.
	var assessment routing.Assessment
	if d.readsRouting() {
		assessment = view.Assess(obj) // the policies get its routing verdict too
	} else {
		assessment.ConflictReport = view.Conflicts(*obj)
	}
	for _, e := range assessment.Invalid {
		v.Denials = append(v.Denials, fieldFinding(e))
	}
	if len(assessment.Invalid) == 0 {
		var oldRep *routing.ConflictReport
		if old != nil {
			r := view.Conflicts(*old)
			oldRep = &r
		}
		denials, warnings := conflictFindings(assessment.ConflictReport, oldRep, obj.Spec.NodeSelector, obj.Name)
		v.Denials = append(v.Denials, denials...)
		v.Warnings = append(v.Warnings, warnings...)
	}
	if d.Policy == nil {
		return v, nil
	}
	in := d.input(req.Operation, req.Source, req.UserInfo, driverObject(obj, req.RawObject), driverObject(old, req.RawOldObject))
	if d.readsRouting() {
		in.Routing = policy.RoutingOf(&assessment, &obj.Spec)
	}
	return v, d.evaluate(ctx, in, v)
}

// readsRouting reports whether the policies read input.routing: evaluators that say they do
// not (policy.RoutingReader) are spared the pools of the nodes the driver selects.
func (d *Decider) readsRouting() bool {
	if d.Policy == nil {
		return false
	}
	r, ok := d.Policy.(policy.RoutingReader)
	return !ok || r.ReadsRouting()
}

// ClusterPolicy decides on an RBLNClusterPolicy.
func (d *Decider) ClusterPolicy(ctx context.Context, req Request[*v1alpha1.RBLNClusterPolicy]) (*Verdict, error) {
	obj := req.Object
	v := &Verdict{Kind: "RBLNClusterPolicy", Name: obj.Name}
	errs, warnings := validation.ValidateUpgradePolicy(&obj.Spec.Driver.UpgradePolicy, field.NewPath("spec", "driver", "upgradePolicy"))
	for _, e := range errs {
		if e.Type == field.ErrorTypeInvalid {
			e.Detail += ": negative counts and timeouts have no meaning; use 0 for unlimited or no timeout"
		}
		v.Denials = append(v.Denials, fieldFinding(e))
	}
	for _, w := range warnings {
		v.Warnings = append(v.Warnings, Finding{Rule: RuleUpgradePolicy, Message: w})
	}
	if obj.Name != v1alpha1.ClusterPolicyName {
		v.Warnings = append(v.Warnings, warning(RuleClusterPolicyName, "metadata.name",
			"driverguard reads the RBLNClusterPolicy named %q; a policy named %q applies only while no %q exists",
			v1alpha1.ClusterPolicyName, obj.Name, v1alpha1.ClusterPolicyName))
	}
	if d.Policy == nil {
		return v, nil
	}
	in := d.input(req.Operation, req.Source, req.UserInfo, clusterPolicyObject(obj, req.RawObject), clusterPolicyObject(req.OldObject, req.RawOldObject))
	return v, d.evaluate(ctx, in, v)
}

func (d *Decider) input(op string, source policy.Source, user *authenticationv1.UserInfo, obj, old any) *policy.Input {
	return &policy.Input{Object: obj, OldObject: old, Operation: op, UserInfo: user, Source: source}
}

// evaluate runs the policies and adds their messages to v.
func (d *Decider) evaluate(ctx context.Context, in *policy.Input, v *Verdict) error {
	dec, err := d.Policy.Evaluate(ctx, in)
	if err != nil {
		if d.PolicyFailOpen {
			v.Warnings = append(v.Warnings, Finding{Rule: RulePolicyUnavailable, Message: "policy evaluation failed, admitted without policies (fail-open): " + err.Error()})
			return nil
		}
		return &UnavailableError{Err: err}
	}
	if dec == nil {
		return nil
	}
	v.Denials = append(v.Denials, policyFindings(RulePolicyDenied, dec.Deny)...)
	v.Warnings = append(v.Warnings, policyFindings(RulePolicyWarning, dec.Warn)...)
	return nil
}

// driverObject is what policies see of a driver: its JSON as received, or the typed object
// with its apiVersion and kind (nil stays nil).
func driverObject(d *v1alpha1.RBLNDriver, raw json.RawMessage) any {
	switch {
	case len(raw) > 0:
		return raw
	case d == nil:
		return nil
	}
	return d.WithTypeMeta()
}

func clusterPolicyObject(cp *v1alpha1.RBLNClusterPolicy, raw json.RawMessage) any {
	switch {
	case len(raw) > 0:
		return raw
	case cp == nil:
		return nil
	}
	return cp.WithTypeMeta()
}

// String describes the decider, for logs.
func (d *Decider) String() string {
	return fmt.Sprintf("decider(policies=%t, failOpen=%t)", d.Policy != nil, d.PolicyFailOpen)
}
