package release_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/driverguard/driverguard/api/v1alpha1"
	"github.com/driverguard/driverguard/cluster"
	"github.com/driverguard/driverguard/operator"
	"github.com/driverguard/driverguard/release"
	"github.com/driverguard/driverguard/routing"
	wt "github.com/driverguard/driverguard/webhook/webhooktest"
)

// labelsOnly is st as check sees it without --drivers: the nodes given, the drivers unknown.
func labelsOnly(st *cluster.State) *cluster.State {
	st.SetSources(cluster.Sources{Nodes: cluster.Source{Given: true, From: "--nodes nodes.yaml", Count: len(st.Nodes())}})
	return st
}

// TestStaleOwnerLabelIsNotADriverLoss: a node whose owner label names an RBLNDriver the cluster
// does not hold runs no driver now; a release cannot take one away from it. It is drift
// (StaleOwnerLabel, as the audit calls it), never DriverLoss, and it fails nothing.
func TestStaleOwnerLabelIsNotADriverLoss(t *testing.T) {
	t.Parallel()
	a := owned(wt.Driver("rbln-driver-a", atom))
	nodes := []routing.Node{
		node("ghost-1", "ghost-driver", operator.LabelFamily, "rebel"), // no driver selects it, its label is stale
		node("ghost-2", "ghost-driver"),                                // atom: rbln-driver-a owns it now
		node("atom-1", "rbln-driver-a"),
	}
	objs := release.Objects{Drivers: []v1alpha1.RBLNDriver{a}, ReleaseName: "dg"}
	res, err := release.Apply(t.Context(), objs, cluster.FromLists(nodes, []v1alpha1.RBLNDriver{a}, nil, nil), release.Options{})
	require.NoError(t, err)
	assert.Equal(t, release.BasisRouting, res.Basis)
	assert.Empty(t, res.DriverLoss, "a stale label is no driver to lose")
	assert.Empty(t, res.OwnerChanges, "ghost-2 is rbln-driver-a's now and stays so")
	stale := map[string]string{}
	for _, d := range res.Drift {
		if d.Kind == routing.DriftStaleOwnerLabel {
			stale[d.Node] = d.Detail
		}
	}
	assert.Contains(t, stale["ghost-1"], `"ghost-driver"`)
	assert.Contains(t, stale["ghost-2"], `writes "rbln-driver-a" on its next reconcile`)
	assert.NotContains(t, stale, "atom-1")
	rep := res.Report(release.ReportOptions{})
	assert.True(t, rep.Passed, "drift the release did not cause fails nothing")
	assert.Zero(t, rep.Failures)

	// The same nodes without the current drivers: the labels are all there is, and say so.
	res, err = release.Apply(t.Context(), release.Objects{Drivers: []v1alpha1.RBLNDriver{a}, ReleaseName: "dg"}, labelsOnly(cluster.FromLists(nodes, nil, nil, nil)), release.Options{})
	require.NoError(t, err)
	assert.Equal(t, release.BasisOwnerLabels, res.Basis)
	assert.Nil(t, res.Drift, "no drift without the drivers it is judged against")
	assert.Equal(t, []release.NodeLoss{{Node: "ghost-1", From: "ghost-driver", Reason: routing.ReasonNoMatchingDriver}}, clearDetail(res.DriverLoss))
	assert.Equal(t, []release.OwnerChange{{Node: "ghost-2", From: "ghost-driver", To: "rbln-driver-a"}}, res.OwnerChanges)
}

func clearDetail(l []release.NodeLoss) []release.NodeLoss {
	for i := range l {
		l[i].Detail = ""
	}
	return l
}

// TestChanges: the action of every node, on both bases.
func TestChanges(t *testing.T) {
	t.Parallel()
	def := owned(wt.Driver("rbln-driver", nil))
	a := owned(wt.Driver("rbln-driver-a", atom))
	bumped := *a.DeepCopy()
	bumped.Spec.Version = "3.3.0"
	canaryDriver := owned(wt.Driver("rbln-driver-c", wt.Sel(operator.LabelFamily, "atom", "env", "canary")))
	nodes := []routing.Node{
		node("atom", "rbln-driver-a"),
		node("canary", "rbln-driver-a", "env", "canary"),
		node("rebel", "rbln-driver", operator.LabelFamily, "rebel"),
		node("fresh", "", operator.LabelFamily, "rebel"),
		{Name: "cpu", Labels: map[string]string{}},
	}
	objs := release.Objects{Drivers: []v1alpha1.RBLNDriver{bumped, canaryDriver}, ReleaseName: "dg"} // the default is removed
	current := []v1alpha1.RBLNDriver{def, a}
	actions := func(res *release.Result) map[string]string {
		out := map[string]string{}
		for _, c := range res.Changes {
			out[c.Node] = c.Action
		}
		return out
	}
	res, err := release.Apply(t.Context(), objs, cluster.FromLists(nodes, current, nil, nil), release.Options{})
	require.NoError(t, err)
	assert.Equal(t, []string{"rbln-driver"}, res.Deleted)
	assert.Equal(t, map[string]string{
		"atom":   release.NodeUpgrade,
		"canary": release.NodeChangeOwner,
		"rebel":  release.NodeLoseDriver,
		"fresh":  release.NodeLoseDriver, // the default owns it now (its label is missing: drift)
		"cpu":    release.NodeNone,
	}, actions(res))

	res, err = release.Apply(t.Context(), objs, labelsOnly(cluster.FromLists(nodes, nil, nil, nil)), release.Options{})
	require.NoError(t, err)
	assert.Empty(t, res.Deleted, "deletions need the current drivers")
	assert.Equal(t, map[string]string{
		"atom":   release.NodeNone, // same owner; its image now is not known
		"canary": release.NodeChangeOwner,
		"rebel":  release.NodeLoseDriver,
		"fresh":  release.NodeNone,
		"cpu":    release.NodeNone,
	}, actions(res))
}

// TestForeignRelease: judging a release under a name that does not own the stored objects of
// the names it renders is refused, naming the release that does.
func TestForeignRelease(t *testing.T) {
	t.Parallel()
	a, gone := owned(wt.Driver("rbln-driver-a", atom)), owned(wt.Driver("rbln-driver-gone", canary))
	st := cluster.FromLists(nil, []v1alpha1.RBLNDriver{a, gone}, nil, nil)
	_, err := release.Apply(t.Context(), release.Objects{Drivers: []v1alpha1.RBLNDriver{a}, ReleaseName: "npu"}, st, release.Options{})
	var fe *release.ForeignObjectsError
	require.ErrorAs(t, err, &fe)
	assert.Equal(t, []string{"RBLNDriver/rbln-driver-a"}, fe.Objects)
	assert.Equal(t, []string{"dg"}, fe.Owners)
	assert.Contains(t, err.Error(), `Helm release "dg"`)

	res, err := release.Apply(t.Context(), release.Objects{Drivers: []v1alpha1.RBLNDriver{a}, ReleaseName: "dg"}, st, release.Options{})
	require.NoError(t, err)
	assert.Equal(t, []string{"rbln-driver-gone"}, res.Deleted, "under its own name the release deletes what it no longer renders")

	// A release of other names next to it is no one's business but its own.
	other := owned(wt.Driver("rbln-driver-other", canary))
	_, err = release.Apply(t.Context(), release.Objects{Drivers: []v1alpha1.RBLNDriver{other}, ReleaseName: "npu"}, st, release.Options{})
	require.NoError(t, err)
}

// TestOwnerLabelThatNamesNoDriver (#30): without the current RBLNDrivers a node's driver now
// is the one its owner label names — but a value no object can be named (not a DNS-1123
// subdomain: spaces, "!", uppercase, more than 253 characters) names no driver. The node has
// none now: a release cannot take it away (no DriverLoss) and the label is drift
// (StaleOwnerLabel). A value a stored driver could carry stays a driver.
func TestOwnerLabelThatNamesNoDriver(t *testing.T) {
	t.Parallel()
	a := owned(wt.Driver("rbln-driver-a", atom))
	long := strings.Repeat("x", 254)
	nodes := []routing.Node{
		node("blank", " ", operator.LabelFamily, "rebel"),
		node("bang", "RBLN_DRIVER!!", operator.LabelFamily, "rebel"),
		node("long", long, operator.LabelFamily, "rebel"),
		node("dotted", "rbln.driver", operator.LabelFamily, "rebel"), // a stored driver may be named so
		node("atom-upper", "RBLN-Driver"),                            // rbln-driver-a selects it
	}
	res, err := release.Apply(t.Context(), release.Objects{Drivers: []v1alpha1.RBLNDriver{a}, ReleaseName: "dg"},
		labelsOnly(cluster.FromLists(nodes, nil, nil, nil)), release.Options{})
	require.NoError(t, err)
	assert.Equal(t, release.BasisOwnerLabels, res.Basis)
	assert.Equal(t, []release.NodeLoss{{Node: "dotted", From: "rbln.driver", Reason: routing.ReasonNoMatchingDriver}}, clearDetail(res.DriverLoss))
	actions := map[string]string{}
	for _, c := range res.Changes {
		actions[c.Node] = c.Action
	}
	assert.Equal(t, map[string]string{"blank": release.NodeNone, "bang": release.NodeNone, "long": release.NodeNone,
		"dotted": release.NodeLoseDriver, "atom-upper": release.NodeGainDriver}, actions)
	stale := map[string]string{}
	for _, d := range res.Drift {
		require.Equal(t, routing.DriftStaleOwnerLabel, d.Kind)
		stale[d.Node] = d.Detail
	}
	assert.Len(t, stale, 4)
	assert.Contains(t, stale["bang"], `its rebellions.ai/npu.driver.owner label is "RBLN_DRIVER!!", which no RBLNDriver can be named (`)
	assert.Contains(t, stale["blank"], `label is " ", which no RBLNDriver can be named`)
	assert.NotContains(t, stale["long"], long, "a long value is quoted truncated")
	assert.NotContains(t, stale, "dotted")
	rep := res.Report(release.ReportOptions{})
	assert.Equal(t, 1, rep.Failures, "only the dotted node's loss fails")
}
