package webhook_test

import (
	"context"
	"net/http"
	"strings"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/driverguard/driverguard/api/v1alpha1"
	"github.com/driverguard/driverguard/cluster"
	"github.com/driverguard/driverguard/operator"
	"github.com/driverguard/driverguard/webhook"
	wt "github.com/driverguard/driverguard/webhook/webhooktest"
)

// handle runs one request through the served HTTP path's handler (decoding, decision,
// response mapping), as the API server would.
func handle(t *testing.T, hooks *webhook.Webhooks, path string, req admission.Request) admission.Response {
	t.Helper()
	h := hooks.Webhook(path)
	if h == nil {
		t.Fatalf("no admission webhook on %s", path)
	}
	resp := h.Handle(context.Background(), req)
	if resp.UID != req.UID {
		t.Errorf("response UID %q, want the request's %q", resp.UID, req.UID)
	}
	return resp
}

func state(drivers []*v1alpha1.RBLNDriver, nodes []*corev1.Node, cp *v1alpha1.RBLNClusterPolicy) webhook.State {
	ds := make([]v1alpha1.RBLNDriver, len(drivers))
	for i, d := range drivers {
		ds[i] = *d
	}
	var cps []v1alpha1.RBLNClusterPolicy
	if cp != nil {
		cps = append(cps, *cp)
	}
	return cluster.NewStatic(cluster.FromLists(wt.RoutingNodes(nodes...), ds, cps, nil))
}

// expect checks allowed, that the message contains every want, and that some warning
// contains every wantWarn.
func expect(t *testing.T, resp admission.Response, allowed bool, want []string, wantWarn []string) {
	t.Helper()
	msg := ""
	if resp.Result != nil {
		msg = resp.Result.Message
	}
	if resp.Allowed != allowed {
		t.Fatalf("allowed = %v, want %v; message: %s; warnings: %q", resp.Allowed, allowed, msg, resp.Warnings)
	}
	for _, w := range want {
		if !strings.Contains(msg, w) {
			t.Errorf("message does not contain %q:\n%s", w, msg)
		}
	}
	for _, w := range wantWarn {
		found := false
		for _, got := range resp.Warnings {
			found = found || strings.Contains(got, w)
		}
		if !found {
			t.Errorf("no warning contains %q; warnings: %q", w, resp.Warnings)
		}
	}
	if len(wantWarn) == 0 && len(resp.Warnings) > 0 {
		t.Errorf("unexpected warnings: %q", resp.Warnings)
	}
}

func TestDriverSyntaxRules(t *testing.T) {
	t.Parallel()
	hooks := webhook.New(state(nil, nil, nil), webhook.Options{})
	long := strings.Repeat("a", 64)
	tests := []struct {
		name string
		obj  *v1alpha1.RBLNDriver
		want []string // empty: allowed
	}{
		{"default may have an empty selector", wt.Driver("rbln-driver", nil), nil},
		{"instance with a selector", wt.Driver("rbln-driver-atom", wt.Sel(operator.LabelFamily, "atom")), nil},
		{"empty selector on an instance", wt.Driver("rbln-driver-atom", nil),
			[]string{"spec.nodeSelector: Required value", "only the default resource rbln-driver may have an empty selector"}},
		{"reserved owner key", wt.Driver("rbln-driver-x", wt.Sel(operator.LabelOwner, "x")),
			[]string{"spec.nodeSelector[rebellions.ai/npu.driver.owner]: Forbidden", "is reserved", "remove it from the selector"}},
		{"reserved deploy key", wt.Driver("rbln-driver-x", wt.Sel(operator.LabelDeployDriver, "true")),
			[]string{"spec.nodeSelector[rebellions.ai/npu.deploy.driver]: Forbidden"}},
		{"invalid label key", wt.Driver("rbln-driver-x", wt.Sel("bad key!", "v")),
			[]string{"spec.nodeSelector[bad key!]", "not a valid label key"}},
		{"invalid label value", wt.Driver("rbln-driver-x", wt.Sel("env", "-canary")),
			[]string{"spec.nodeSelector[env]", "not a valid label value"}},
		{"name with dots", wt.Driver("rbln.driver", wt.Sel("env", "a")),
			[]string{`metadata.name: Invalid value: "rbln.driver"`, "owner label value"}},
		{"name longer than 63", wt.Driver(long, wt.Sel("env", "a")),
			[]string{"metadata.name", "must be no more than 63 characters"}},
		{"missing version", func() *v1alpha1.RBLNDriver { d := wt.Driver("rbln-driver", nil); d.Spec.Version = ""; return d }(),
			[]string{"spec.version: Required value"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			resp := handle(t, hooks, webhook.PathValidateDriver, wt.Request(admissionv1.Create, tt.obj, nil))
			expect(t, resp, len(tt.want) == 0, tt.want, nil)
			if len(tt.want) > 0 {
				if resp.Result.Code != http.StatusUnprocessableEntity || resp.Result.Reason != "Invalid" {
					t.Errorf("status %d %s, want 422 Invalid", resp.Result.Code, resp.Result.Reason)
				}
				if resp.Result.Details == nil || len(resp.Result.Details.Causes) == 0 {
					t.Errorf("no causes in the status: %+v", resp.Result)
				}
			}
		})
	}
}

func TestDriverConflicts(t *testing.T) {
	t.Parallel()
	atom := wt.Sel(operator.LabelFamily, "atom")
	canary := wt.Sel("env", "canary")
	nodes := []*corev1.Node{
		wt.Node("node-a", wt.CandidateLabels()),
		wt.Node("node-b", wt.CandidateLabels("env", "canary")),
		wt.Node("node-out", wt.Sel("env", "canary", operator.LabelFamily, "atom")), // not a candidate
	}
	existing := []*v1alpha1.RBLNDriver{
		wt.Driver("rbln-driver", nil),
		wt.Driver("rbln-driver-atom", atom),
	}
	tests := []struct {
		name     string
		drivers  []*v1alpha1.RBLNDriver
		nodes    []*corev1.Node
		obj, old *v1alpha1.RBLNDriver
		deny     []string
		warn     []string
	}{
		{name: "strict superset owns its nodes",
			drivers: existing, nodes: nodes,
			obj: wt.Driver("rbln-driver-atom-canary", wt.Sel(operator.LabelFamily, "atom", "env", "canary"))},
		{name: "identical selector is denied",
			drivers: existing, nodes: nodes,
			obj:  wt.Driver("rbln-driver-atom2", atom),
			deny: []string{`is identical to the nodeSelector of RBLNDriver "rbln-driver-atom"`, "change one selector"}},
		{name: "tie on an existing node is denied, naming the node and the other driver",
			drivers: existing, nodes: nodes,
			obj:  wt.Driver("rbln-driver-canary", canary),
			deny: []string{`ties with RBLNDriver "rbln-driver-atom" on existing node(s) node-b`, "strict superset"}},
		{name: "tie that only a future node could have is a warning",
			drivers: existing, nodes: []*corev1.Node{nodes[0]},
			obj:  wt.Driver("rbln-driver-canary", canary),
			warn: []string{`could tie with RBLNDriver "rbln-driver-atom" on a future node labelled {env=canary,rebellions.ai/npu.family=atom}`}},
		{name: "non-candidate nodes never tie",
			drivers: existing, nodes: []*corev1.Node{nodes[0], nodes[2]},
			obj:  wt.Driver("rbln-driver-canary", canary),
			warn: []string{`could tie with RBLNDriver "rbln-driver-atom"`}},
		{name: "update never conflicts with its own old version",
			drivers: existing, nodes: nodes,
			obj: func() *v1alpha1.RBLNDriver {
				d := wt.Driver("rbln-driver-atom", atom)
				d.Spec.Version = "3.3.0"
				return d
			}(),
			old: wt.Driver("rbln-driver-atom", atom)},
		{name: "update of a selector to overlap its own old selector",
			drivers: existing, nodes: nodes,
			obj: wt.Driver("rbln-driver-atom", wt.Sel(operator.LabelFamily, "atom", "env", "canary")),
			old: wt.Driver("rbln-driver-atom", atom)},
		{name: "update keeping a pre-existing tie is a warning (version bump)",
			drivers: append(existing, wt.Driver("rbln-driver-canary", canary)), nodes: nodes,
			obj: func() *v1alpha1.RBLNDriver {
				d := wt.Driver("rbln-driver-canary", canary)
				d.Spec.Version = "3.3.0"
				return d
			}(),
			old:  wt.Driver("rbln-driver-canary", canary),
			warn: []string{`already ties with RBLNDriver "rbln-driver-atom" on existing node(s) node-b`, "does not introduce"}},
		{name: "update introducing a tie is denied",
			drivers: append(existing, wt.Driver("rbln-driver-canary", wt.Sel("env", "canary", "zone", "a"))), nodes: nodes,
			obj:  wt.Driver("rbln-driver-canary", canary),
			old:  wt.Driver("rbln-driver-canary", wt.Sel("env", "canary", "zone", "a")),
			deny: []string{`ties with RBLNDriver "rbln-driver-atom" on existing node(s) node-b`}},
		{name: "update becoming identical is denied",
			drivers: append(existing, wt.Driver("rbln-driver-b", wt.Sel("env", "b"))), nodes: nodes,
			obj:  wt.Driver("rbln-driver-b", atom),
			old:  wt.Driver("rbln-driver-b", wt.Sel("env", "b")),
			deny: []string{`identical to the nodeSelector of RBLNDriver "rbln-driver-atom"`}},
		{name: "conflicts among other drivers are not this object's fault",
			drivers: append(existing, wt.Driver("rbln-driver-atom2", atom)), nodes: nodes,
			obj: wt.Driver("rbln-driver-rebel", wt.Sel(operator.LabelFamily, "rebel"))},
		{name: "invalid drivers in the cluster take no part",
			drivers: append(existing, wt.Driver("rbln-driver-bad", wt.Sel(operator.LabelOwner, "x", "env", "canary"))), nodes: nodes,
			obj: wt.Driver("rbln-driver-atom-canary", wt.Sel(operator.LabelFamily, "atom", "env", "canary"))},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			hooks := webhook.New(state(tt.drivers, tt.nodes, nil), webhook.Options{})
			op := admissionv1.Create
			var old *v1alpha1.RBLNDriver
			if tt.old != nil {
				op, old = admissionv1.Update, tt.old
			}
			var req admission.Request
			if old != nil {
				req = wt.Request(op, tt.obj, old)
			} else {
				req = wt.Request(op, tt.obj, nil)
			}
			expect(t, handle(t, hooks, webhook.PathValidateDriver, req), len(tt.deny) == 0, tt.deny, tt.warn)
		})
	}
}

// TestDriverConflictsManyNodes checks that a denial lists a bounded sample of the tied nodes
// and their total.
func TestDriverConflictsManyNodes(t *testing.T) {
	t.Parallel()
	var nodes []*corev1.Node
	for _, n := range []string{"n00", "n01", "n02", "n03", "n04", "n05", "n06", "n07", "n08", "n09", "n10", "n11"} {
		nodes = append(nodes, wt.Node(n, wt.CandidateLabels("env", "canary")))
	}
	hooks := webhook.New(state([]*v1alpha1.RBLNDriver{wt.Driver("rbln-driver-atom", wt.Sel(operator.LabelFamily, "atom"))}, nodes, nil), webhook.Options{})
	resp := handle(t, hooks, webhook.PathValidateDriver, wt.Request(admissionv1.Create, wt.Driver("rbln-driver-canary", wt.Sel("env", "canary")), nil))
	expect(t, resp, false, []string{"on 12 existing node(s), e.g. n00, n01", "n09"}, nil)
	if strings.Contains(resp.Result.Message, "n10") {
		t.Errorf("the sample should stop at 10 nodes: %s", resp.Result.Message)
	}
}
