package webhook_test

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/driverguard/driverguard/api/v1alpha1"
	"github.com/driverguard/driverguard/policy"
	"github.com/driverguard/driverguard/webhook"
	wt "github.com/driverguard/driverguard/webhook/webhooktest"
)

func TestPolicyDenyAndWarn(t *testing.T) {
	t.Parallel()
	eval := &wt.Evaluator{Fn: func(_ context.Context, in *policy.Input) (*policy.Decision, error) {
		return &policy.Decision{
			Deny: []policy.Message{
				{Package: "driverguard.lib.versions", Rule: "deny", Msg: "spec.version latest is not pinned"},
				{Package: "driverguard.team", Rule: "deny", Msg: "registry not allowed"},
			},
			Warn: []policy.Message{{Package: "driverguard.lib.drain", Rule: "warn", Msg: "deleteEmptyDirData loses data"}},
		}, nil
	}}
	hooks := webhook.New(state([]*v1alpha1.RBLNDriver{wt.Driver("rbln-driver", nil)}, nil, nil), webhook.Options{Policy: eval})

	resp := handle(t, hooks, webhook.PathValidateDriver, wt.Request(admissionv1.Create, wt.Driver("rbln-driver", nil), nil))
	expect(t, resp, false,
		[]string{"policy driverguard.lib.versions: spec.version latest is not pinned", "policy driverguard.team: registry not allowed"},
		[]string{"policy driverguard.lib.drain: deleteEmptyDirData loses data"})
	if resp.Result.Code != http.StatusForbidden {
		t.Errorf("policy-only denial: code %d, want 403", resp.Result.Code)
	}

	// Built-in failures and policy denials are reported together.
	resp = handle(t, hooks, webhook.PathValidateDriver, wt.Request(admissionv1.Create, wt.Driver("rbln-driver-x", nil), nil))
	expect(t, resp, false, []string{"spec.nodeSelector: Required value", "policy driverguard.team: registry not allowed"},
		[]string{"deleteEmptyDirData"})

	resp = handle(t, hooks, webhook.PathValidateClusterPolicy, wt.Request(admissionv1.Create, wt.ClusterPolicy(false), nil))
	expect(t, resp, false, []string{`RBLNClusterPolicy "rbln-cluster-policy" is denied`, "registry not allowed"}, []string{"deleteEmptyDirData"})

	// DaemonSets never go to policies.
	n := len(eval.Inputs())
	resp = handle(t, hooks, webhook.PathMutateDaemonSet, wt.Request(admissionv1.Create,
		wt.DaemonSet("ns", "d", "rbln-driver", "smd", nil), nil))
	if len(eval.Inputs()) != n {
		t.Errorf("a DaemonSet was evaluated")
	}
	if !resp.Allowed {
		t.Errorf("smd DaemonSet denied: %+v", resp.Result)
	}
}

func TestPolicyEvaluationErrors(t *testing.T) {
	t.Parallel()
	failing := &wt.Evaluator{Fn: func(context.Context, *policy.Input) (*policy.Decision, error) {
		return nil, errors.New("rego: eval_conflict_error")
	}}
	slow := &wt.Evaluator{Fn: func(ctx context.Context, _ *policy.Input) (*policy.Decision, error) {
		<-ctx.Done()
		return nil, ctx.Err()
	}}
	for _, tt := range []struct {
		name string
		eval *wt.Evaluator
	}{{"error", failing}, {"deadline", slow}} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			closed := webhook.New(state(nil, nil, nil), webhook.Options{Policy: tt.eval, PolicyTimeout: 50 * time.Millisecond})
			open := webhook.New(state(nil, nil, nil), webhook.Options{Policy: tt.eval, PolicyFailOpen: true, PolicyTimeout: 50 * time.Millisecond})
			for _, path := range []string{webhook.PathValidateDriver, webhook.PathValidateClusterPolicy} {
				req := wt.Request(admissionv1.Create, wt.Driver("rbln-driver", nil), nil)
				if path == webhook.PathValidateClusterPolicy {
					req = wt.Request(admissionv1.Create, wt.ClusterPolicy(false), nil)
				}
				resp := handle(t, closed, path, req)
				expect(t, resp, false, []string{"policy evaluation failed", "fail-closed"}, nil)
				if resp.Result.Code != http.StatusServiceUnavailable {
					t.Errorf("fail-closed code %d, want 503", resp.Result.Code)
				}
				expect(t, handle(t, open, path, req), true, nil, []string{"policy evaluation failed, admitted without policies (fail-open)"})
			}
		})
	}
}

func TestPolicyInput(t *testing.T) {
	t.Parallel()
	eval := &wt.Evaluator{}
	atom := wt.Sel(v1alpha1.LabelFamily, "atom")
	nodes := []*corev1.Node{
		wt.Node("node-a", wt.CandidateLabels()),
		wt.Node("node-c", wt.CandidateLabels("env", "canary")),
		wt.Node("node-x", wt.Sel("kubernetes.io/os", "linux")),
	}
	cp := wt.ClusterPolicy(true)
	hooks := webhook.New(state([]*v1alpha1.RBLNDriver{wt.Driver("rbln-driver", nil), wt.Driver("rbln-driver-atom", atom)}, nodes, cp), webhook.Options{Policy: eval})

	canary := wt.Driver("rbln-driver-canary", wt.Sel(v1alpha1.LabelFamily, "atom", "env", "canary"))
	expect(t, handle(t, hooks, webhook.PathValidateDriver, wt.Request(admissionv1.Create, canary, nil)), true, nil, nil)
	in := eval.Inputs()[0]
	if in.Source != policy.SourceAdmission || in.Operation != "CREATE" || in.OldObject != nil {
		t.Errorf("source %q operation %q oldObject %v", in.Source, in.Operation, in.OldObject)
	}
	if in.UserInfo == nil || in.UserInfo.Username != wt.User.Username {
		t.Errorf("userInfo %+v", in.UserInfo)
	}
	if obj, ok := in.Object.(*v1alpha1.RBLNDriver); !ok || obj.Name != canary.Name || obj.Kind != "RBLNDriver" {
		t.Errorf("object %#v", in.Object)
	}
	var others []string
	for _, d := range in.Cluster.Drivers {
		others = append(others, d.Name)
	}
	if len(others) != 2 || others[0] != "rbln-driver" || others[1] != "rbln-driver-atom" {
		t.Errorf("cluster.drivers %v, want the two others", others)
	}
	if in.Cluster.ClusterPolicy == nil || !in.Cluster.ClusterPolicy.Spec.Driver.UpgradePolicy.AutoUpgrade {
		t.Errorf("cluster.clusterPolicy %+v", in.Cluster.ClusterPolicy)
	}
	// Nodes are routed as if the object were admitted: node-c moves to the canary driver.
	want := map[string][2]string{
		"node-a": {"rbln-driver-atom", "atom-ubuntu22.04-6.8.0-90-generic"},
		"node-c": {"rbln-driver-canary", "atom-ubuntu22.04-6.8.0-90-generic"},
		"node-x": {"", ""},
	}
	if len(in.Cluster.Nodes) != len(want) {
		t.Fatalf("cluster.nodes %+v", in.Cluster.Nodes)
	}
	for _, n := range in.Cluster.Nodes {
		if w := want[n.Name]; n.Owner != w[0] || n.Pool != w[1] || len(n.Labels) == 0 {
			t.Errorf("node %s: owner %q pool %q labels %v, want %v", n.Name, n.Owner, n.Pool, n.Labels, w)
		}
	}

	// UPDATE: oldObject is set; a version bump reuses the cluster's routing.
	bumped := wt.Driver("rbln-driver-atom", atom)
	bumped.Spec.Version = "3.3.0"
	expect(t, handle(t, hooks, webhook.PathValidateDriver, wt.Request(admissionv1.Update, bumped, wt.Driver("rbln-driver-atom", atom))), true, nil, nil)
	in = eval.Inputs()[1]
	if in.Operation != "UPDATE" || in.OldObject == nil {
		t.Errorf("operation %q oldObject %v", in.Operation, in.OldObject)
	}
	if len(in.Cluster.Drivers) != 1 || in.Cluster.Drivers[0].Name != "rbln-driver" {
		t.Errorf("cluster.drivers %+v", in.Cluster.Drivers)
	}
	for _, n := range in.Cluster.Nodes {
		if n.Name == "node-c" && n.Owner != "rbln-driver-atom" {
			t.Errorf("node-c owner %q", n.Owner)
		}
	}

	// RBLNClusterPolicy: every driver, the current policy, the current routing.
	expect(t, handle(t, hooks, webhook.PathValidateClusterPolicy, wt.Request(admissionv1.Create, wt.ClusterPolicy(false), nil)), true, nil, nil)
	in = eval.Inputs()[2]
	if len(in.Cluster.Drivers) != 2 || len(in.Cluster.Nodes) != 3 {
		t.Errorf("cluster %+v", in.Cluster)
	}
}
