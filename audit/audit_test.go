package audit_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"

	"github.com/driverguard/driverguard/api/v1alpha1"
	"github.com/driverguard/driverguard/audit"
	"github.com/driverguard/driverguard/cluster"
	"github.com/driverguard/driverguard/decision"
	"github.com/driverguard/driverguard/operator"
	"github.com/driverguard/driverguard/policy"
	"github.com/driverguard/driverguard/registry"
	"github.com/driverguard/driverguard/routing"
	wt "github.com/driverguard/driverguard/webhook/webhooktest"
)

// snapshot builds a snapshot of drivers, nodes and the cluster policy, and syncs the
// engine's cluster view to it (as serve does before it publishes one).
func snapshot(t *testing.T, engine *policy.Engine, drivers []*v1alpha1.RBLNDriver, nodes []*corev1.Node, cp *v1alpha1.RBLNClusterPolicy) *cluster.Snapshot {
	t.Helper()
	return snapshotB(t, engine, drivers, nodes, cp)
}

func snapshotB(t testing.TB, engine *policy.Engine, drivers []*v1alpha1.RBLNDriver, nodes []*corev1.Node, cp *v1alpha1.RBLNClusterPolicy) *cluster.Snapshot {
	t.Helper()
	var ds []v1alpha1.RBLNDriver
	for _, d := range drivers {
		ds = append(ds, *d)
	}
	var cps []v1alpha1.RBLNClusterPolicy
	if cp != nil {
		cps = append(cps, *cp)
	}
	st := cluster.NewStatic(cluster.FromLists(wt.RoutingNodes(nodes...), ds, cps, nil))
	if engine != nil {
		st.SyncTo(engine)
	}
	snap, err := st.Snapshot(t.Context())
	require.NoError(t, err)
	return snap
}

func withOwner(labels map[string]string, owner string) map[string]string {
	labels[operator.LabelOwner] = owner
	return labels
}

func results(r audit.Report) []string {
	var out []string
	for _, f := range r.Results {
		out = append(out, fmt.Sprintf("%s %s/%s (%s)", f.Status, f.ReportPolicy(), f.ReportRule(), f.Enforcement))
	}
	return out
}

func report(t *testing.T, out *audit.Outcome, name string) audit.Report {
	t.Helper()
	for _, r := range out.Reports {
		if r.Name == name {
			return r
		}
	}
	t.Fatalf("no report %s", name)
	return audit.Report{}
}

// TestDrift: each kind of drift lands in the report of the driver it is about — a missing
// family label and a stale owner label in the owner's, an unowned node and an owner label
// naming no driver in the cluster's — once per driver and kind, with its nodes counted.
func TestDrift(t *testing.T) {
	noFamily := wt.CandidateLabels("pool", "x")
	delete(noFamily, operator.LabelFamily)
	atom := wt.Driver("rbln-driver-atom", wt.Sel(operator.LabelFamily, "atom"))
	atom.Labels = map[string]string{v1alpha1.LabelInstance: "atom"}
	nodes := []*corev1.Node{
		wt.Node("a-ok", withOwner(wt.CandidateLabels(), "rbln-driver-atom")),
		wt.Node("a-stale-1", withOwner(wt.CandidateLabels(), "rbln-driver")),
		wt.Node("a-stale-2", wt.CandidateLabels()),
		wt.Node("gone", withOwner(wt.CandidateLabels(operator.LabelFamily, "rebel"), "rbln-driver-gone")),
		wt.Node("nofamily", withOwner(noFamily, "rbln-driver-x")),
	}
	x := wt.Driver("rbln-driver-x", wt.Sel("pool", "x"))
	snap := snapshot(t, nil, []*v1alpha1.RBLNDriver{atom, x}, nodes, nil)
	out, err := (&audit.Auditor{}).Run(t.Context(), snap)
	require.NoError(t, err)

	a := report(t, out, "rbln-driver-atom")
	assert.Equal(t, "atom", a.Instance)
	// atom's and x's selectors could tie on a node with both labels (the decision's warning).
	require.Equal(t, []string{"fail driverguard/StaleOwnerLabel (deny)", "warn driverguard/PotentialConflict (warn)"}, results(a))
	stale := a.Results[0]
	assert.Equal(t, map[string]string{"nodes": "2", "instance": "atom"}, stale.Properties)
	assert.Equal(t, []audit.Subject{{Kind: "RBLNDriver", Name: "rbln-driver-atom"}, {Kind: "Node", Name: "a-stale-1"}, {Kind: "Node", Name: "a-stale-2"}}, stale.Subjects())
	assert.Contains(t, stale.Message, "2 nodes whose rebellions.ai/npu.driver.owner label is not the driver rbln-npu-operator gives: a-stale-1, a-stale-2")

	xr := report(t, out, "rbln-driver-x")
	assert.Equal(t, []string{"fail driverguard/DriverFamilyLabelMissing (deny)", "warn driverguard/PotentialConflict (warn)"}, results(xr))
	assert.Equal(t, "nofamily", xr.Results[0].Properties["node"])

	c := report(t, out, audit.ClusterReportName)
	assert.Equal(t, []string{"fail driverguard/StaleOwnerLabel (deny)", "fail driverguard/Unowned (deny)"}, results(c), "rebel node: no driver selects it, its label names a driver that is gone")
	assert.Contains(t, c.Results[0].Message, `its rebellions.ai/npu.driver.owner label is "rbln-driver-gone", but no RBLNDriver owns the node now`)
	assert.Equal(t, 4, out.Enforced)
	assert.Equal(t, audit.Summary{Warn: 2, Fail: 4}, out.Summary)
}

// TestTieIsTheDecisions: a tie between two stored drivers is the decision's
// ConflictingNodeSelector in both drivers' reports (judged as if each were created now), not
// a second drift finding.
func TestTieIsTheDecisions(t *testing.T) {
	nodes := []*corev1.Node{wt.Node("n1", wt.CandidateLabels("env", "canary", "team", "x"))}
	out, err := (&audit.Auditor{}).Run(t.Context(), snapshot(t, nil, []*v1alpha1.RBLNDriver{
		wt.Driver("rbln-driver-a", wt.Sel("env", "canary")), wt.Driver("rbln-driver-b", wt.Sel("team", "x")),
	}, nodes, nil))
	require.NoError(t, err)
	for _, name := range []string{"rbln-driver-a", "rbln-driver-b"} {
		r := report(t, out, name)
		assert.Equal(t, []string{"fail driverguard/ConflictingNodeSelector (deny)"}, results(r), name)
		assert.Contains(t, r.Results[0].Message, "ties with")
	}
	assert.Equal(t, []string{}, nonNil(results(report(t, out, audit.ClusterReportName))))
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// TestPoliciesAndEnforcement: policies judge each stored object; a policy on trial reports
// fail without failing the audit; a policy that finds nothing is a pass.
func TestPoliciesAndEnforcement(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "trial.rego"), []byte(`# METADATA
# custom:
#   enforcement: audit
package driverguard.trial

deny contains "drivers need the team annotation" if {
	input.object.kind == "RBLNDriver"
	input.source == "audit"
	not input.object.metadata.annotations["team.example/owner"]
}
`), 0o600))
	engine, err := policy.New(t.Context(), policy.Options{Dirs: []string{dir}, Metrics: prometheus.NewRegistry()})
	require.NoError(t, err)
	latest := wt.Driver("rbln-driver", nil)
	latest.Spec.Version = "latest"
	snap := snapshot(t, engine, []*v1alpha1.RBLNDriver{latest}, []*corev1.Node{wt.Node("n1", withOwner(wt.CandidateLabels(), "rbln-driver"))}, wt.ClusterPolicy(true))
	a := &audit.Auditor{Decider: &decision.Decider{Policy: engine}, Policies: engine.Policies()}
	out, err := a.Run(t.Context(), snap)
	require.NoError(t, err)

	r := report(t, out, "rbln-driver")
	got := results(r)
	require.GreaterOrEqual(t, len(got), 3)
	assert.Equal(t, []string{"fail driverguard.lib.pinned_version/deny (deny)", "fail driverguard.trial/deny (audit)"}, got[:2])
	assert.Contains(t, got, "pass driverguard/admission (deny)")
	assert.Contains(t, got, "pass driverguard.lib.canary_selector/ (deny)")
	assert.NotContains(t, got, "pass driverguard.trial/ (audit)")
	assert.Equal(t, 1, out.Enforced, "the trial's fail does not fail the audit")
	assert.True(t, r.Results[0].Enforced())
	assert.False(t, r.Results[1].Enforced())

	c := report(t, out, audit.ClusterReportName)
	assert.Contains(t, results(c), "pass driverguard/admission (deny)")
	assert.Contains(t, results(c), "pass driverguard.lib.max_parallel_upgrades/ (deny)")
}

// TestImages: an image a pool or an RSMD DaemonSet pulls that its registry answered 404 for
// fails its driver's report; one no registry answered for is a warning there, with why, and
// the cluster report says what the check covered — never a silent pass.
func TestImages(t *testing.T) {
	d := wt.Driver("rbln-driver", nil)
	snap := snapshot(t, nil, []*v1alpha1.RBLNDriver{d}, []*corev1.Node{wt.Node("n1", withOwner(wt.CandidateLabels(), "rbln-driver"))}, nil)
	images := audit.Images(snap)
	require.Len(t, images, 2, "the pool's driver image and the RSMD image")
	answers := map[string]registry.ImageResult{
		images[0]: {Image: images[0], Status: registry.NotFound, Message: "404 MANIFEST_UNKNOWN"},
		images[1]: {Image: images[1], Status: registry.Warning, Reason: registry.ReasonTimeout, Message: "timeout"},
	}
	out, err := (&audit.Auditor{Images: answers}).Run(t.Context(), snap)
	require.NoError(t, err)
	r := report(t, out, "rbln-driver")
	require.Equal(t, audit.RuleImageNotFound, r.Results[0].Rule)
	assert.Equal(t, images[0], r.Results[0].Properties["image"])
	assert.Equal(t, 1, out.Enforced)
	assert.Contains(t, results(r), "warn driverguard/DriverImageNotVerified (warn)")
	assert.Equal(t, registry.Summary{Checked: true, Images: 2, Missing: 1, NotVerified: 1, NotVerifiedBy: map[registry.Reason]int{registry.ReasonTimeout: 1}}, out.ImageCheck)
	c := report(t, out, audit.ClusterReportName)
	var check *audit.Result
	for i := range c.Results {
		if c.Results[i].Rule == audit.RuleImageCheck {
			check = &c.Results[i]
		}
	}
	require.NotNil(t, check, "the cluster report says what the check covered")
	assert.Equal(t, audit.Warn, check.Status)
	assert.Equal(t, "2 images checked: 0 found, 1 missing, 1 NOT VERIFIED (1 timeout): no registry answered for 1 image: nothing says whether they exist; "+
		"their pools proceed and the kubelet decides whether the pull succeeds", check.Message)
	assert.Equal(t, map[string]string{"images": "2", "found": "0", "missing": "1", "notVerified": "1", "notVerified.timeout": "1"}, check.Properties)

	without, err := (&audit.Auditor{}).Run(t.Context(), snap)
	require.NoError(t, err)
	assert.False(t, without.ImageCheck.Checked, "no check: none reported as done")
	assert.NotContains(t, results(report(t, without, audit.ClusterReportName)), "DriverImageCheck")

	answers[images[1]] = registry.ImageResult{Image: images[1], Status: registry.NotFound, Message: "404"}
	out, err = (&audit.Auditor{Images: answers}).Run(t.Context(), snap)
	require.NoError(t, err)
	assert.Equal(t, 2, out.Enforced, "the RSMD image is checked too")
}

// TestResultsAreCapped: a report lists at most MaxResults results, failures first; its
// summary counts every one; the drift of 1,000 nodes is one finding, not 1,000.
func TestResultsAreCapped(t *testing.T) {
	var nodes []*corev1.Node
	for i := range 1000 {
		nodes = append(nodes, wt.Node(fmt.Sprintf("n%04d", i), wt.CandidateLabels("env", "x")))
	}
	snap := snapshot(t, nil, []*v1alpha1.RBLNDriver{wt.Driver("rbln-driver-y", wt.Sel("env", "y"))}, nodes, nil)
	out, err := (&audit.Auditor{MaxResults: 1}).Run(t.Context(), snap)
	require.NoError(t, err)
	c := report(t, out, audit.ClusterReportName)
	require.Len(t, c.Results, 1)
	assert.Equal(t, routing.DriftUnowned, c.Results[0].Rule)
	assert.Equal(t, "1000", c.Results[0].Properties["nodes"])
	assert.Len(t, c.Results[0].Subjects(), audit.NodeSample)
	assert.Contains(t, c.Results[0].Message, "... (1000 in all)")
	r := report(t, out, "rbln-driver-y")
	assert.Equal(t, []string{"pass driverguard/admission (deny)"}, results(r))
	assert.Equal(t, audit.Summary{Pass: 1, Fail: 1}, out.Summary)
}

// TestMaxResultsBelowOne: a MaxResults of 0 or less lists DefaultMaxResults results; a
// negative one does not panic.
func TestMaxResultsBelowOne(t *testing.T) {
	snap := snapshot(t, nil, []*v1alpha1.RBLNDriver{wt.Driver("rbln-driver", nil)}, []*corev1.Node{wt.Node("n1", wt.CandidateLabels())}, nil)
	for _, max := range []int{0, -1, -100} {
		out, err := (&audit.Auditor{MaxResults: max}).Run(t.Context(), snap)
		require.NoError(t, err, max)
		r := report(t, out, "rbln-driver")
		assert.Len(t, r.Results, 2, "max %d: the StaleOwnerLabel fail and the admission pass", max)
		assert.Zero(t, r.Omitted)
	}
}

// TestReportNamesAreDistinct: every driver, whatever its name, gets a ClusterReport of its
// own, none named as the cluster report; the JSON report's name is the ClusterReport's.
func TestReportNamesAreDistinct(t *testing.T) {
	for _, tt := range []struct {
		drivers []string
		want    []string
	}{
		{[]string{"rbln-driver"}, []string{"rbln-driver", audit.ClusterReportName}},
		{[]string{"driverguard-cluster"}, []string{"rblndriver.driverguard-cluster", audit.ClusterReportName}},
		{
			[]string{"driverguard-cluster", "rblndriver.driverguard-cluster", "rblndriver.rblndriver.driverguard-cluster"},
			[]string{"rblndriver.driverguard-cluster", "rblndriver.rblndriver.driverguard-cluster", "rblndriver.rblndriver.rblndriver.driverguard-cluster", audit.ClusterReportName},
		},
		{[]string{"rblndriver.x", "x"}, []string{"rblndriver.rblndriver.x", "x", audit.ClusterReportName}},
	} {
		var ds []*v1alpha1.RBLNDriver
		for i, n := range tt.drivers {
			ds = append(ds, wt.Driver(n, wt.Sel("team", fmt.Sprint(i))))
		}
		out, err := (&audit.Auditor{}).Run(t.Context(), snapshot(t, nil, ds, nil, nil))
		require.NoError(t, err)
		var names, jsonNames []string
		for i, cr := range audit.ClusterReports(out, time.Now()) {
			names = append(names, cr.Name)
			jsonNames = append(jsonNames, out.Reports[i].Name)
			if out.Reports[i].Driver != "" {
				require.NotNil(t, cr.Scope)
				assert.Equal(t, out.Reports[i].Driver, cr.Scope.Name)
			}
		}
		assert.Equal(t, tt.want, names, "drivers %v", tt.drivers)
		assert.Equal(t, tt.want, jsonNames, "drivers %v", tt.drivers)
	}
}

// TestReportsAreBoundedInBytes: whatever MaxResults allows, a ClusterReport's results stay
// within MaxReportBytes (here 3,000 pools whose images are all missing, each result about a
// KiB); the rest are omitted and still counted.
func TestReportsAreBoundedInBytes(t *testing.T) {
	var nodes []*corev1.Node
	for i := range 3000 {
		l := withOwner(wt.CandidateLabels(), "rbln-driver")
		l[operator.LabelKernel] = fmt.Sprintf("6.8.0-%d-%s", i, strings.Repeat("k", 30)) // a pool name of at most 63
		nodes = append(nodes, wt.Node(fmt.Sprintf("n%04d-%s", i, strings.Repeat("x", 200)), l))
	}
	snap := snapshot(t, nil, []*v1alpha1.RBLNDriver{wt.Driver("rbln-driver", nil)}, nodes, nil)
	images := map[string]registry.ImageResult{}
	for _, im := range audit.Images(snap) {
		images[im] = registry.ImageResult{Image: im, Status: registry.NotFound,
			Message: "driver image " + im + " not found: the registry answered 404 to the manifest request"}
	}
	require.Greater(t, len(images), 3000)
	for _, tt := range []struct {
		max        int
		wantListed int // -1: as many as fit
	}{
		{100, 100},
		{2000, -1},
		{1 << 30, -1},
	} {
		out, err := (&audit.Auditor{Images: images, MaxResults: tt.max}).Run(t.Context(), snap)
		require.NoError(t, err)
		r := report(t, out, "rbln-driver")
		if tt.wantListed >= 0 {
			assert.Len(t, r.Results, tt.wantListed, "max %d", tt.max)
		} else {
			assert.Less(t, len(r.Results), tt.max, "max %d: the byte bound, not MaxResults, cut the list", tt.max)
		}
		assert.Equal(t, r.Summary.Pass+r.Summary.Fail, len(r.Results)+r.Omitted, "max %d: listed and omitted are every result", tt.max)
		assert.Equal(t, len(images), r.Enforced(), "max %d", tt.max)
		for _, cr := range audit.ClusterReports(out, time.Now()) {
			data, err := json.Marshal(cr)
			require.NoError(t, err)
			assert.LessOrEqual(t, len(data), audit.MaxReportBytes+4096, "max %d: ClusterReport %s", tt.max, cr.Name)
		}
	}
}
