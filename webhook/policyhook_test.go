package webhook_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/driverguard/driverguard/api/v1alpha1"
	"github.com/driverguard/driverguard/operator"
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
		ctx, cancel := context.WithTimeout(ctx, 50*time.Millisecond) // the evaluator's own deadline
		defer cancel()
		<-ctx.Done()
		return nil, ctx.Err()
	}}
	for _, tt := range []struct {
		name string
		eval *wt.Evaluator
	}{{"error", failing}, {"deadline", slow}} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			closed := webhook.New(state(nil, nil, nil), webhook.Options{Policy: tt.eval})
			open := webhook.New(state(nil, nil, nil), webhook.Options{Policy: tt.eval, PolicyFailOpen: true})
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
	atom := wt.Sel(operator.LabelFamily, "atom")
	nodes := []*corev1.Node{
		wt.Node("node-a", wt.CandidateLabels()),
		wt.Node("node-c", wt.CandidateLabels("env", "canary")),
		wt.Node("node-x", wt.Sel("kubernetes.io/os", "linux")),
	}
	cp := wt.ClusterPolicy(true)
	hooks := webhook.New(state([]*v1alpha1.RBLNDriver{wt.Driver("rbln-driver", nil), wt.Driver("rbln-driver-atom", atom)}, nodes, cp), webhook.Options{Policy: eval})

	canary := wt.Driver("rbln-driver-canary", wt.Sel(operator.LabelFamily, "atom", "env", "canary"))
	req := wt.Request(admissionv1.Create, canary, nil)
	expect(t, handle(t, hooks, webhook.PathValidateDriver, req), true, nil, nil)
	in := eval.Inputs()[0]
	if in.Source != policy.SourceAdmission || in.Operation != "CREATE" || in.OldObject != nil {
		t.Errorf("source %q operation %q oldObject %v", in.Source, in.Operation, in.OldObject)
	}
	if in.UserInfo == nil || in.UserInfo.Username != wt.User.Username {
		t.Errorf("userInfo %+v", in.UserInfo)
	}
	// The object reaches policies as the request sent it, not re-encoded.
	if raw, ok := in.Object.(json.RawMessage); !ok || string(raw) != string(req.Object.Raw) {
		t.Errorf("object %T %s", in.Object, in.Object)
	}
	// Routing with the object in place: the canary takes node-c from rbln-driver-atom.
	r := in.Routing
	if r == nil || r.Selected != 1 || r.Nodes != 1 || len(r.Pools) != 1 || len(r.Ties) != 0 {
		t.Fatalf("routing %+v", r)
	}
	if p := r.Pools[0]; p.Name != "atom-ubuntu22.04-6.8.0-90-generic" || p.Kernel != wt.Kernel || p.Tag != "3.2.2-6.8.0-90-generic-ubuntu22.04" ||
		p.DaemonSet != "rbln-driver-canary-atom-ubuntu22.04-6.8.0-90-generic" || len(p.Nodes) != 1 || p.Nodes[0] != "node-c" {
		t.Errorf("pool %+v", p)
	}

	// UPDATE: oldObject is set.
	bumped := wt.Driver("rbln-driver-atom", atom)
	bumped.Spec.Version = "3.3.0"
	expect(t, handle(t, hooks, webhook.PathValidateDriver, wt.Request(admissionv1.Update, bumped, wt.Driver("rbln-driver-atom", atom))), true, nil, nil)
	in = eval.Inputs()[1]
	if in.Operation != "UPDATE" || in.OldObject == nil {
		t.Errorf("operation %q oldObject %v", in.Operation, in.OldObject)
	}
	if in.Routing == nil || in.Routing.Nodes != 2 || in.Routing.Pools[0].Tag != "3.3.0-6.8.0-90-generic-ubuntu22.04" {
		t.Errorf("routing %+v", in.Routing)
	}

	// RBLNClusterPolicy: no routing.
	expect(t, handle(t, hooks, webhook.PathValidateClusterPolicy, wt.Request(admissionv1.Create, wt.ClusterPolicy(false), nil)), true, nil, nil)
	if in = eval.Inputs()[2]; in.Routing != nil {
		t.Errorf("cluster policy routing %+v", in.Routing)
	}
}

// TestPolicyClusterView: the engine reads the webhook's cluster at data.driverguard_cluster:
// every driver, the cluster policy, the nodes with their routing and the family counts.
func TestPolicyClusterView(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writePolicy(t, dir, "view.rego", `package driverguard.view

warn contains sprintf("drivers=%d nodes=%d atom=%d owner=%s auto=%v", [
	count(data.driverguard_cluster.drivers),
	count(data.driverguard_cluster.nodes),
	data.driverguard_cluster.families.atom,
	data.driverguard_cluster.nodes["node-c"].owner,
	data.driverguard_cluster.clusterPolicy.spec.driver.upgradePolicy.autoUpgrade,
]) if input.object.kind == "RBLNDriver"
`)
	engine, err := policy.New(t.Context(), policy.Options{Dirs: []string{dir}, ExcludeLibrary: true, Metrics: prometheus.NewRegistry()})
	if err != nil {
		t.Fatal(err)
	}
	nodes := []*corev1.Node{
		wt.Node("node-a", wt.CandidateLabels()),
		wt.Node("node-c", wt.CandidateLabels("env", "canary")),
		wt.Node("node-x", wt.Sel("kubernetes.io/os", "linux")),
	}
	hooks := webhook.New(state([]*v1alpha1.RBLNDriver{wt.Driver("rbln-driver", nil), wt.Driver("rbln-driver-atom", wt.Sel(operator.LabelFamily, "atom"))}, nodes, wt.ClusterPolicy(true)), webhook.Options{Policy: engine})
	resp := handle(t, hooks, webhook.PathValidateDriver, wt.Request(admissionv1.Create, wt.Driver("rbln-driver-rebel", wt.Sel(operator.LabelFamily, "rebel")), nil))
	expect(t, resp, true, nil, []string{"policy driverguard.view: drivers=2 nodes=3 atom=2 owner=rbln-driver-atom auto=true"})
}

func writePolicy(t *testing.T, dir, name, content string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}

// TestAuditEnforcementAtAdmission: a policy on trial (enforcement audit) neither denies nor
// warns at admission; the same policy enforced (deny) denies the same object, and in warn
// enforcement its denial is a warning.
func TestAuditEnforcementAtAdmission(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writePolicy(t, dir, "trial.rego", `# METADATA
# custom:
#   enforcement: audit
package driverguard.trial

deny contains "drivers need the team annotation" if {
	input.object.kind == "RBLNDriver"
	not input.object.metadata.annotations["team.example/owner"]
}
`)
	req := wt.Request(admissionv1.Create, wt.Driver("rbln-driver-rebel", wt.Sel(operator.LabelFamily, "rebel")), nil)
	for _, tt := range []struct {
		mode     map[string]policy.Enforcement
		allowed  bool
		deny     []string
		warnings []string
	}{
		{nil, true, nil, nil},
		{map[string]policy.Enforcement{"trial": policy.EnforceDeny}, false, []string{"policy driverguard.trial: drivers need the team annotation"}, nil},
		{map[string]policy.Enforcement{"trial": policy.EnforceWarn}, true, nil, []string{"policy driverguard.trial: drivers need the team annotation"}},
	} {
		engine, err := policy.New(t.Context(), policy.Options{Dirs: []string{dir}, ExcludeLibrary: true, Enforcement: tt.mode, Metrics: prometheus.NewRegistry()})
		if err != nil {
			t.Fatal(err)
		}
		hooks := webhook.New(state([]*v1alpha1.RBLNDriver{wt.Driver("rbln-driver", nil)}, nil, nil), webhook.Options{Policy: engine})
		expect(t, handle(t, hooks, webhook.PathValidateDriver, req), tt.allowed, tt.deny, tt.warnings)
	}
}
