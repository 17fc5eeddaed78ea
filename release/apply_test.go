package release_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/driverguard/driverguard/api/v1alpha1"
	"github.com/driverguard/driverguard/cluster"
	"github.com/driverguard/driverguard/decision"
	"github.com/driverguard/driverguard/finding"
	"github.com/driverguard/driverguard/operator"
	"github.com/driverguard/driverguard/policy"
	"github.com/driverguard/driverguard/release"
	"github.com/driverguard/driverguard/routing"
	wt "github.com/driverguard/driverguard/webhook/webhooktest"
)

var (
	atom   = wt.Sel(operator.LabelFamily, "atom")
	canary = wt.Sel("env", "canary")
)

func node(name, owner string, extra ...string) routing.Node {
	labels := wt.CandidateLabels(extra...)
	if owner != "" {
		labels[operator.LabelOwner] = owner
	}
	return routing.Node{Name: name, Labels: labels}
}

// owned marks d as rendered by the Helm release "dg".
func owned(d *v1alpha1.RBLNDriver) v1alpha1.RBLNDriver {
	c := d.DeepCopy()
	c.Labels = map[string]string{"app.kubernetes.io/instance": "dg", "app.kubernetes.io/managed-by": "Helm"}
	return *c
}

func drivers(ds ...*v1alpha1.RBLNDriver) []v1alpha1.RBLNDriver {
	out := make([]v1alpha1.RBLNDriver, len(ds))
	for i, d := range ds {
		out[i] = *d
	}
	return out
}

func verdicts(res *release.Result) map[string]*decision.Verdict {
	out := map[string]*decision.Verdict{}
	for _, j := range res.Objects {
		out[j.Name] = j.Verdict
	}
	return out
}

func rules(v *decision.Verdict) []string {
	var out []string
	for _, f := range v.Denials {
		out = append(out, f.Rule)
	}
	return out
}

func TestOrderAndOperations(t *testing.T) {
	t.Parallel()
	objs := release.Objects{
		ClusterPolicy: wt.ClusterPolicy(false),
		Drivers:       drivers(wt.Driver("rbln-driver", nil), wt.Driver("rbln-driver-a", atom), wt.Driver("rbln-driver-b", canary)),
	}
	cl := cluster.FromLists(nil, drivers(wt.Driver("rbln-driver-a", atom)), []v1alpha1.RBLNClusterPolicy{*wt.ClusterPolicy(true)}, nil)
	var got []string
	for _, o := range release.Order(objs, cl) {
		got = append(got, o.Kind+"/"+o.Name+" "+o.Operation)
	}
	assert.Equal(t, []string{
		"RBLNClusterPolicy/rbln-cluster-policy UPDATE",
		"RBLNDriver/rbln-driver CREATE",
		"RBLNDriver/rbln-driver-a UPDATE",
		"RBLNDriver/rbln-driver-b CREATE",
	}, got)
}

// TestTieAmongRenderedInstances: in Helm's order the first instance is admitted and the second
// denied, and the second is not applied for what follows.
func TestTieAmongRenderedInstances(t *testing.T) {
	t.Parallel()
	objs := release.Objects{Drivers: drivers(wt.Driver("rbln-driver", nil), wt.Driver("rbln-driver-atom", atom), wt.Driver("rbln-driver-canary", canary))}
	nodes := []routing.Node{node("n-atom", ""), node("n-both", "", "env", "canary"), node("n-rebel", "", operator.LabelFamily, "rebel", "env", "canary")}
	res, err := release.Apply(t.Context(), objs, cluster.FromLists(nodes, nil, nil, nil), release.Options{})
	require.NoError(t, err)
	v := verdicts(res)
	assert.True(t, v["rbln-driver"].Allowed())
	assert.True(t, v["rbln-driver-atom"].Allowed())
	assert.Equal(t, []string{finding.RuleConflictingNodeSelector}, rules(v["rbln-driver-canary"]))
	assert.Contains(t, v["rbln-driver-canary"].Denials[0].Message, `ties with RBLNDriver "rbln-driver-atom" on existing node(s) n-both`)
	for _, n := range res.Routing.Nodes {
		assert.NotEqual(t, "rbln-driver-canary", n.Owner, "a denied driver is not applied")
	}
}

// TestWithoutNodes: conflicts are judged on the selectors alone, as the webhook does on a
// cluster without nodes: identical selectors deny, possible ties warn.
func TestWithoutNodes(t *testing.T) {
	t.Parallel()
	objs := release.Objects{Drivers: drivers(wt.Driver("rbln-driver-a", atom), wt.Driver("rbln-driver-b", atom), wt.Driver("rbln-driver-c", canary))}
	res, err := release.Apply(t.Context(), objs, cluster.FromLists(nil, nil, nil, nil), release.Options{})
	require.NoError(t, err)
	v := verdicts(res)
	assert.True(t, v["rbln-driver-a"].Allowed())
	assert.Equal(t, []string{finding.RuleIdenticalNodeSelector}, rules(v["rbln-driver-b"]))
	require.True(t, v["rbln-driver-c"].Allowed())
	require.Len(t, v["rbln-driver-c"].Warnings, 1)
	assert.Equal(t, finding.RulePotentialConflict, v["rbln-driver-c"].Warnings[0].Rule)
	assert.Contains(t, v["rbln-driver-c"].Warnings[0].Message, `could tie with RBLNDriver "rbln-driver-a" on a future node`)
}

// TestUpgrade: rendered drivers the cluster holds are UPDATEs (an old tie is a warning), the
// drivers the release owns and no longer renders are deleted, others are kept.
func TestUpgrade(t *testing.T) {
	t.Parallel()
	a, b := wt.Driver("rbln-driver-a", atom), wt.Driver("rbln-driver-b", canary)
	gone := wt.Driver("rbln-driver-gone", wt.Sel(operator.LabelFamily, "rebel"))
	foreign := wt.Driver("rbln-driver-foreign", wt.Sel(operator.LabelFamily, "ca"))
	current := []v1alpha1.RBLNDriver{owned(a), owned(b), owned(gone), *foreign}
	bumped := owned(a)
	bumped.Spec.Version = "3.3.0"
	objs := release.Objects{Drivers: []v1alpha1.RBLNDriver{bumped, owned(b)}, ReleaseName: "dg"}
	nodes := []routing.Node{node("tied", "rbln-driver-a", "env", "canary"), node("rebel", "rbln-driver-gone", operator.LabelFamily, "rebel")}
	res, err := release.Apply(t.Context(), objs, cluster.FromLists(nodes, current, nil, nil), release.Options{})
	require.NoError(t, err)
	v := verdicts(res)
	require.True(t, v["rbln-driver-a"].Allowed(), "a version bump is never blocked by an old tie")
	assert.Contains(t, v["rbln-driver-a"].WarningTexts()[0], "already ties with")
	assert.Equal(t, "UPDATE", res.Objects[0].Operation)
	assert.Equal(t, []string{"rbln-driver-gone"}, res.Deleted, "the foreign driver is not the release's")
	assert.Equal(t, []release.NodeLoss{{Node: "rebel", From: "rbln-driver-gone", Reason: routing.ReasonNoMatchingDriver}}, res.DriverLoss)
}

func TestOwned(t *testing.T) {
	t.Parallel()
	d := wt.Driver("rbln-driver", nil)
	assert.False(t, release.Owned(d, "dg"))
	d.Labels = map[string]string{"app.kubernetes.io/instance": "dg", "app.kubernetes.io/managed-by": "Helm"}
	assert.True(t, release.Owned(d, "dg"))
	assert.False(t, release.Owned(d, "other"))
	d.Annotations = map[string]string{"meta.helm.sh/release-name": "other"}
	assert.False(t, release.Owned(d, "dg"), "Helm's annotation decides")
	assert.True(t, release.Owned(d, "other"))
}

// TestDriverLoss: every way a node loses its driver, and the report's treatment of them.
func TestDriverLoss(t *testing.T) {
	t.Parallel()
	def := wt.Driver("rbln-driver", nil)
	a := wt.Driver("rbln-driver-a", atom)
	tests := []struct {
		name     string
		rendered []v1alpha1.RBLNDriver
		current  []v1alpha1.RBLNDriver
		nodes    []routing.Node
		want     []release.NodeLoss
	}{
		{
			name:     "deployDefault false",
			rendered: drivers(a),
			nodes:    []routing.Node{node("n1", "rbln-driver", operator.LabelFamily, "rebel"), node("n2", "rbln-driver")},
			want:     []release.NodeLoss{{Node: "n1", From: "rbln-driver", Reason: routing.ReasonNoMatchingDriver}},
		},
		{
			name:     "a narrowed instance",
			rendered: drivers(wt.Driver("rbln-driver-a", wt.Sel(operator.LabelFamily, "atom", "env", "canary"))),
			current:  []v1alpha1.RBLNDriver{owned(a)},
			nodes:    []routing.Node{node("n1", "rbln-driver-a"), node("n2", "rbln-driver-a", "env", "canary")},
			want:     []release.NodeLoss{{Node: "n1", From: "rbln-driver-a", Reason: routing.ReasonNoMatchingDriver}},
		},
		{
			name:     "a removed instance (its label stays on the node)",
			rendered: drivers(wt.Driver("rbln-driver-b", canary)),
			nodes:    []routing.Node{node("n1", "rbln-driver-a")},
			want:     []release.NodeLoss{{Node: "n1", From: "rbln-driver-a", Reason: routing.ReasonNoMatchingDriver}},
		},
		{
			name:     "out of scope and unlabelled nodes never lose a driver",
			rendered: drivers(a),
			nodes:    []routing.Node{{Name: "pre", Labels: map[string]string{operator.LabelDeployDriver: "pre-installed", operator.LabelOwner: "rbln-driver"}}, node("fresh", "", operator.LabelFamily, "rebel")},
			want:     []release.NodeLoss{},
		},
		{
			name:     "the default stays",
			rendered: drivers(def, a),
			nodes:    []routing.Node{node("n1", "rbln-driver", operator.LabelFamily, "rebel")},
			want:     []release.NodeLoss{},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			st := cluster.FromLists(tt.nodes, tt.current, nil, nil)
			if tt.current == nil { // as check without --drivers: the owner labels say what runs now
				st.SetSources(cluster.Sources{Nodes: cluster.Source{Given: true, From: "--nodes n.yaml", Count: len(tt.nodes)}})
			}
			res, err := release.Apply(t.Context(), release.Objects{Drivers: tt.rendered, ReleaseName: "dg"}, st, release.Options{})
			require.NoError(t, err)
			for i := range res.DriverLoss {
				res.DriverLoss[i].Detail = ""
			}
			assert.Equal(t, tt.want, res.DriverLoss)
			rep := res.Report(release.ReportOptions{})
			assert.Equal(t, len(tt.want) == 0, rep.Passed)
			assert.Equal(t, len(tt.want), rep.Failures)
			acked := res.Report(release.ReportOptions{AllowDriverLoss: true})
			assert.True(t, acked.Passed, "acknowledged losses are warnings")
			assert.Equal(t, len(tt.want), acked.Warnings)
			if len(tt.want) > 0 {
				assert.False(t, res.Report(release.ReportOptions{AllowDriverLoss: true, FailOnWarn: true}).Passed, "--fail-on-warn fails on acknowledged losses")
			}
		})
	}
}

func TestReportCountsRenderWarningsAndFailOnWarn(t *testing.T) {
	t.Parallel()
	res, err := release.Apply(t.Context(), release.Objects{Drivers: drivers(wt.Driver("rbln-driver", nil))}, cluster.FromLists(nil, nil, nil, nil), release.Options{})
	require.NoError(t, err)
	rep := res.Report(release.ReportOptions{})
	assert.True(t, rep.Passed)
	assert.Zero(t, rep.Warnings)
	assert.NotNil(t, rep.RenderWarnings)
	assert.NotNil(t, rep.Findings, "[] in JSON")
}

// TestPoliciesReadTheClusterAsApplied: data.driverguard_cluster follows the release: each
// object's policies see the objects applied before it, and not the denied ones.
func TestPoliciesReadTheClusterAsApplied(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "count.rego"), []byte(`package driverguard.count

warn contains sprintf("sees %d drivers; n-both owned by %q", [count(data.driverguard_cluster.drivers), data.driverguard_cluster.nodes["n-both"].owner]) if input.object.kind == "RBLNDriver"
`), 0o600))
	e, err := policy.New(t.Context(), policy.Options{Dirs: []string{dir}, ExcludeLibrary: true, Metrics: prometheus.NewRegistry()})
	require.NoError(t, err)
	objs := release.Objects{Drivers: drivers(wt.Driver("rbln-driver", nil), wt.Driver("rbln-driver-atom", atom), wt.Driver("rbln-driver-canary", canary), wt.Driver("rbln-driver-x", wt.Sel("x", "y")))}
	nodes := []routing.Node{node("n-both", "", "env", "canary")}
	res, err := release.Apply(t.Context(), objs, cluster.FromLists(nodes, nil, nil, nil), release.Options{Decider: &decision.Decider{Policy: e}, Data: e})
	require.NoError(t, err)
	var got []string
	for _, j := range res.Objects {
		for _, w := range j.Verdict.Warnings {
			if w.Policy() != "" {
				got = append(got, j.Name+": "+w.Message)
			}
		}
	}
	assert.Equal(t, []string{
		`rbln-driver: sees 0 drivers; n-both owned by ""`,
		`rbln-driver-atom: sees 1 drivers; n-both owned by "rbln-driver"`,
		`rbln-driver-canary: sees 2 drivers; n-both owned by "rbln-driver-atom"`,
		`rbln-driver-x: sees 2 drivers; n-both owned by "rbln-driver-atom"`, // the canary was denied
	}, got)
}

// TestPolicyFailure: an evaluation error stops the release (fail-closed) or becomes a warning.
func TestPolicyFailure(t *testing.T) {
	t.Parallel()
	failing := &wt.Evaluator{Fn: func(context.Context, *policy.Input) (*policy.Decision, error) { return nil, fmt.Errorf("boom") }}
	objs := release.Objects{Drivers: drivers(wt.Driver("rbln-driver", nil))}
	_, err := release.Apply(t.Context(), objs, cluster.FromLists(nil, nil, nil, nil), release.Options{Decider: &decision.Decider{Policy: failing}})
	var u *decision.UnavailableError
	require.ErrorAs(t, err, &u)
	res, err := release.Apply(t.Context(), objs, cluster.FromLists(nil, nil, nil, nil), release.Options{Decider: &decision.Decider{Policy: failing, PolicyFailOpen: true}})
	require.NoError(t, err)
	assert.Equal(t, finding.RulePolicyUnavailable, res.Objects[0].Verdict.Warnings[0].Rule)
}
