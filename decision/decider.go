package decision

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"

	authenticationv1 "k8s.io/api/authentication/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/driverguard/driverguard/api/v1alpha1"
	"github.com/driverguard/driverguard/api/validation"
	"github.com/driverguard/driverguard/finding"
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

// Driver decides on an RBLNDriver with view as the cluster: its syntax (api/validation),
// then, for a valid driver, its selector conflicts (the view) and the policies.
func (d *Decider) Driver(ctx context.Context, view View, req Request[*v1alpha1.RBLNDriver]) (*Verdict, error) {
	obj, old := req.Object, req.OldObject
	v := &Verdict{Kind: "RBLNDriver", Name: obj.Name}
	if beingDeleted(req.Operation, obj.DeletionTimestamp) || (old != nil && unchanged(req.Operation, obj.Spec, old.Spec)) {
		return v, nil
	}
	need := d.routingNeed()
	invalid, assessment := assess(view, obj, need) // the policies get its routing too
	if len(invalid) > 0 {
		var had map[string]bool
		if old != nil {
			had = keysOf(validation.ValidateDriver(old), errorKey)
		}
		denials, kept := introduced(invalid, errorKey, had)
		v.deny(FieldFindings(denials...)...)
		for _, e := range kept {
			v.warn(preexisting(fieldFinding(e)))
		}
	} else {
		var oldRep *routing.ConflictReport
		if old != nil {
			_, a := assess(view, old, noRouting)
			oldRep = &a.ConflictReport
		}
		denials, warnings := conflictFindings(assessment.ConflictReport, oldRep, obj.Spec.NodeSelector, obj.Name)
		v.deny(denials...)
		v.warn(warnings...)
	}
	if d.Policy == nil || oversized(invalid) {
		// An object over a size limit is denied for its size; its contents are not handed to
		// the policies (whose cost and messages grow with what they are given).
		return v, nil
	}
	in := d.input(req.Operation, req.Source, req.UserInfo, driverObject(obj, req.RawObject), driverObject(old, req.RawOldObject))
	route(in, view, obj, &assessment, need, len(invalid) == 0)
	var before func() *policy.Input
	if old != nil {
		before = func() *policy.Input {
			in := d.input(req.Operation, req.Source, req.UserInfo, driverObject(old, req.RawOldObject), driverObject(old, req.RawOldObject))
			errs, a := assess(view, old, need)
			route(in, view, old, &a, need, len(errs) == 0)
			return in
		}
	}
	return v, d.evaluate(ctx, in, before, v)
}

// routingNeed is how much of a driver's routing the policies need.
type routingNeed int

const (
	noRouting   routingNeed = iota // the policies do not read input.routing
	lazyRouting                    // only guarded rules read it: the pools' tags first (policy.RoutingGuard)
	fullRouting                    // input.routing, always
)

func (d *Decider) routingNeed() routingNeed {
	switch {
	case !d.readsRouting():
		return noRouting
	case guardsRouting(d.Policy):
		return lazyRouting
	}
	return fullRouting
}

func guardsRouting(e policy.Evaluator) bool {
	g, ok := e.(policy.RoutingGuard)
	return ok && g.GuardsRouting()
}

// assess validates a driver (api/validation.ValidateDriver, its syntax findings) and, when it
// is valid, asks the view what it would do if admitted: its conflicts and, as need says, the
// labels of its pools or the nodes and pools it would serve (the policies' input.routing). An
// invalid driver takes no part in routing.
func assess(view View, d *v1alpha1.RBLNDriver, need routingNeed) (field.ErrorList, routing.Assessment) {
	if errs := validation.ValidateDriver(d); len(errs) > 0 {
		return errs, routing.Assessment{}
	}
	if v, ok := view.(validatedView); ok {
		if need == lazyRouting {
			return nil, v.AssessPoolLabels(d)
		}
		return nil, v.AssessValid(d, need == fullRouting)
	}
	if need != noRouting {
		return nil, view.Assess(d)
	}
	return nil, routing.Assessment{ConflictReport: view.Conflicts(*d)}
}

// route gives the policies' input the routing of d from a (its assessment with need): the
// routing itself when a has pools (or d is invalid: no pools), or the pools' image tags and a
// function that builds it, which the engine calls only when a guard holds on the tags.
func route(in *policy.Input, view View, d *v1alpha1.RBLNDriver, a *routing.Assessment, need routingNeed, valid bool) {
	switch {
	case need == noRouting:
	case valid && a.Pools == nil:
		if v, ok := view.(validatedView); ok {
			in.PoolTags = make([]string, len(a.PoolLabels))
			for i, pl := range a.PoolLabels {
				in.PoolTags[i] = routing.DriverTag(&d.Spec, pl)
			}
			in.RoutingFunc = func() *policy.Routing {
				full := v.AssessValid(d, true)
				return policy.RoutingOf(&full, &d.Spec)
			}
			return
		}
		fallthrough
	default:
		in.Routing = policy.RoutingOf(a, &d.Spec)
	}
}

// validatedView is a view that can route a driver without validating it again
// (routing.Index, admission's: validation costs more than the routing).
type validatedView interface {
	AssessValid(candidate *v1alpha1.RBLNDriver, full bool) routing.Assessment
	AssessPoolLabels(candidate *v1alpha1.RBLNDriver) routing.Assessment
}

var _ validatedView = (*routing.Index)(nil)

// oversized reports whether errs hold a size limit (validation.ValidateCount,
// validation.ValidateAnnotationsSize).
func oversized(errs field.ErrorList) bool {
	return slices.ContainsFunc(errs, func(e *field.Error) bool {
		return e.Type == field.ErrorTypeTooMany || e.Type == field.ErrorTypeTooLong
	})
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
	if beingDeleted(req.Operation, obj.DeletionTimestamp) || (req.OldObject != nil && unchanged(req.Operation, obj.Spec, req.OldObject.Spec)) {
		return v, nil
	}
	upgradePath := field.NewPath("spec", "driver", "upgradePolicy")
	errs, warnings := validation.ValidateUpgradePolicy(&obj.Spec.Driver.UpgradePolicy, upgradePath)
	var had map[string]bool
	if old := req.OldObject; old != nil && len(errs) > 0 {
		oldErrs, _ := validation.ValidateUpgradePolicy(&old.Spec.Driver.UpgradePolicy, upgradePath)
		had = keysOf(oldErrs, errorKey)
	}
	errs, kept := introduced(errs, errorKey, had)
	explain := func(e *field.Error) *field.Error {
		if e.Type == field.ErrorTypeInvalid {
			e.Detail += ": negative counts and timeouts have no meaning; use 0 for unlimited or no timeout"
		}
		return e
	}
	for _, e := range errs {
		v.deny(fieldFinding(explain(e)))
	}
	for _, e := range kept {
		v.warn(preexisting(fieldFinding(explain(e))))
	}
	for _, w := range warnings {
		v.warn(Finding{Rule: finding.RuleUpgradePolicy, Message: capMessage(w)})
	}
	if obj.Name != v1alpha1.ClusterPolicyName {
		v.warn(warning(finding.RuleClusterPolicyName, "metadata.name",
			"the chart renders the RBLNClusterPolicy named %q, and rbln-npu-operator reads only one, the oldest that is not ignored, whatever its name: %q applies only if it is that one; keep a single RBLNClusterPolicy",
			v1alpha1.ClusterPolicyName, obj.Name))
	}
	if d.Policy == nil {
		return v, nil
	}
	in := d.input(req.Operation, req.Source, req.UserInfo, clusterPolicyObject(obj, req.RawObject), clusterPolicyObject(req.OldObject, req.RawOldObject))
	var before func() *policy.Input
	if old := req.OldObject; old != nil {
		before = func() *policy.Input {
			o := clusterPolicyObject(old, req.RawOldObject)
			return d.input(req.Operation, req.Source, req.UserInfo, o, o)
		}
	}
	return v, d.evaluate(ctx, in, before, v)
}

func (d *Decider) input(op string, source policy.Source, user *authenticationv1.UserInfo, obj, old any) *policy.Input {
	return &policy.Input{Object: obj, OldObject: old, Operation: op, UserInfo: user, Source: source}
}

// evaluate runs the policies and adds their messages to v. On UPDATE, before builds the input
// of the stored object (the object and old object both the stored one): a deny it already
// gets, word for word, is a warning; it is evaluated only when the update is denied.
func (d *Decider) evaluate(ctx context.Context, in *policy.Input, before func() *policy.Input, v *Verdict) error {
	dec, err := d.Policy.Evaluate(ctx, in)
	var kept []policy.Message
	if err == nil && dec != nil && len(dec.Deny) > 0 && before != nil {
		var prev *policy.Decision
		if prev, err = d.Policy.Evaluate(ctx, before()); err == nil && prev != nil {
			dec.Deny, kept = introduced(dec.Deny, messageKey, keysOf(prev.Deny, messageKey))
		}
	}
	if err != nil {
		if d.PolicyFailOpen {
			v.warn(Finding{Rule: finding.RulePolicyUnavailable, Message: capMessage("policy evaluation failed, admitted without policies (fail-open): " + err.Error())})
			return nil
		}
		return &UnavailableError{Err: err}
	}
	if dec == nil {
		return nil
	}
	v.deny(policyFindings(dec.Deny)...)
	v.warn(policyFindings(dec.Warn)...)
	v.audit(policyFindings(dec.Audit)...)
	for _, f := range policyFindings(kept) {
		v.warn(preexisting(f))
	}
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
