package webhook

import (
	"context"
	"maps"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/driverguard/driverguard/api/v1alpha1"
	"github.com/driverguard/driverguard/policy"
	"github.com/driverguard/driverguard/routing"
)

// DefaultPolicyTimeout bounds one policy evaluation when Options.PolicyTimeout is zero. It
// stays well below the webhook configurations' timeoutSeconds (10 s in the chart).
const DefaultPolicyTimeout = 3 * time.Second

// policyHook runs the optional policy.Evaluator for one object.
type policyHook struct {
	eval     policy.Evaluator
	failOpen bool
	timeout  time.Duration
}

func newPolicyHook(o Options) *policyHook {
	h := &policyHook{eval: o.Policy, failOpen: o.PolicyFailOpen, timeout: o.PolicyTimeout}
	if h.timeout <= 0 {
		h.timeout = DefaultPolicyTimeout
	}
	return h
}

// evaluate builds the input (only when an evaluator is configured) and evaluates it. It
// returns the deny messages and the warn messages as admission warnings. An evaluation error
// is a 503 when fail-closed, and a warning when fail-open.
func (h *policyHook) evaluate(ctx context.Context, input func() *policy.Input) (deny []policy.Message, warnings []string, err error) {
	if h == nil || h.eval == nil {
		return nil, nil, nil
	}
	ctx, cancel := context.WithTimeout(ctx, h.timeout)
	defer cancel()
	dec, err := h.eval.Evaluate(ctx, input())
	if err != nil {
		if h.failOpen {
			return nil, []string{"policy evaluation failed, admitted without policies (fail-open): " + err.Error()}, nil
		}
		return nil, nil, unavailable("policy evaluation failed: %v; the webhook is fail-closed, so the request is denied: retry, or fix the policy that fails (serve --policy-fail-open admits such requests with a warning)", err)
	}
	if dec == nil {
		return nil, nil, nil
	}
	for _, m := range dec.Warn {
		warnings = append(warnings, policyText(m))
	}
	return dec.Deny, warnings, nil
}

// userInfo returns the requesting user from the admission request in ctx, if any.
func userInfo(ctx context.Context) *authenticationv1.UserInfo {
	req, err := admission.RequestFromContext(ctx)
	if err != nil {
		return nil
	}
	u := req.UserInfo
	return &u
}

// driverPolicyInput builds the policy input for an RBLNDriver request. cluster.drivers are the
// other drivers; cluster.nodes are routed as if the object were admitted (the same view
// `driverguard check` gives at render time, where every rendered driver is routed together).
// The snapshot's cached routing is the starting point; only the nodes the object's new or
// stored selector matches are routed again, and none when the change cannot move a node (same
// selector, same validity).
func driverPolicyInput(ctx context.Context, snap *Snapshot, op string, obj, old *v1alpha1.RBLNDriver, objValid bool) *policy.Input {
	in := &policy.Input{
		Object:    withDriverTypeMeta(obj),
		Operation: op,
		UserInfo:  userInfo(ctx),
		Source:    policy.SourceAdmission,
		Cluster: policy.Cluster{
			Drivers:       otherDrivers(snap, obj.Name),
			ClusterPolicy: snap.ClusterPolicy(),
		},
	}
	if old != nil {
		in.OldObject = withDriverTypeMeta(old)
	}
	if len(snap.Nodes()) == 0 {
		return in
	}
	in.Cluster.Nodes = policy.ClusterNodes(snap.Nodes(), snap.Route())
	cur, exists := snap.Driver(obj.Name)
	if exists && maps.Equal(cur.Spec.NodeSelector, obj.Spec.NodeSelector) && objValid == (len(driverSyntaxErrors(cur)) == 0) {
		return in // the change cannot move any node
	}
	// Each node is routed on its own labels, so only the nodes the new or the stored selector
	// matches can change: route just those with the object in place of the stored version.
	var affected []routing.Node
	for _, n := range snap.Nodes() {
		if selects(obj.Spec.NodeSelector, n.Labels) || (exists && selects(cur.Spec.NodeSelector, n.Labels)) {
			affected = append(affected, n)
		}
	}
	if len(affected) == 0 {
		return in
	}
	res := routing.Route(append(otherDrivers(snap, obj.Name), *obj), affected)
	verdict := make(map[string]routing.NodeResult, len(res.Nodes))
	for _, nr := range res.Nodes {
		verdict[nr.Name] = nr
	}
	for i := range in.Cluster.Nodes {
		if nr, ok := verdict[in.Cluster.Nodes[i].Name]; ok {
			in.Cluster.Nodes[i].Owner, in.Cluster.Nodes[i].Pool = nr.Owner, nr.Pool
		}
	}
	return in
}

// selects reports whether a driver with selector sel matches a node with these labels: the
// node is a candidate and carries every key=value of sel.
func selects(sel, labels map[string]string) bool {
	if labels[v1alpha1.LabelDeployDriver] != "true" {
		return false
	}
	for k, v := range sel {
		if lv, ok := labels[k]; !ok || lv != v {
			return false
		}
	}
	return true
}

// clusterPolicyInput builds the policy input for an RBLNClusterPolicy request.
func clusterPolicyInput(ctx context.Context, snap *Snapshot, op string, obj, old *v1alpha1.RBLNClusterPolicy) *policy.Input {
	in := &policy.Input{
		Object:    withClusterPolicyTypeMeta(obj),
		Operation: op,
		UserInfo:  userInfo(ctx),
		Source:    policy.SourceAdmission,
		Cluster: policy.Cluster{
			Drivers:       append([]v1alpha1.RBLNDriver{}, snap.Drivers()...),
			ClusterPolicy: snap.ClusterPolicy(),
		},
	}
	if old != nil {
		in.OldObject = withClusterPolicyTypeMeta(old)
	}
	if len(snap.Nodes()) > 0 {
		in.Cluster.Nodes = policy.ClusterNodes(snap.Nodes(), snap.Route())
	}
	return in
}

func otherDrivers(snap *Snapshot, name string) []v1alpha1.RBLNDriver {
	out := make([]v1alpha1.RBLNDriver, 0, len(snap.Drivers()))
	for _, d := range snap.Drivers() {
		if d.Name != name {
			out = append(out, d)
		}
	}
	return out
}

func withDriverTypeMeta(d *v1alpha1.RBLNDriver) *v1alpha1.RBLNDriver {
	if d.Kind != "" && d.APIVersion != "" {
		return d
	}
	c := d.DeepCopy()
	c.APIVersion, c.Kind = v1alpha1.GroupVersion.String(), "RBLNDriver"
	return c
}

func withClusterPolicyTypeMeta(cp *v1alpha1.RBLNClusterPolicy) *v1alpha1.RBLNClusterPolicy {
	if cp.Kind != "" && cp.APIVersion != "" {
		return cp
	}
	c := cp.DeepCopy()
	c.APIVersion, c.Kind = v1alpha1.GroupVersion.String(), "RBLNClusterPolicy"
	return c
}
