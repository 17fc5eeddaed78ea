package action

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/driverguard/driverguard/api/v1alpha1"
	"github.com/driverguard/driverguard/cluster"
	"github.com/driverguard/driverguard/operator"
	"github.com/driverguard/driverguard/release"
	"github.com/driverguard/driverguard/render"
	"github.com/driverguard/driverguard/routing"
)

func drv(name, version string, sel map[string]string) v1alpha1.RBLNDriver {
	return v1alpha1.RBLNDriver{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: v1alpha1.RBLNDriverSpec{
		Registry: "r.example", Image: "org/rbln-driver", Version: version, NodeSelector: sel,
	}}
}

func node(name, owner string, extra map[string]string) routing.Node {
	labels := map[string]string{
		operator.LabelDeployDriver: "true", operator.LabelFamily: "atom", operator.LabelOSID: "ubuntu",
		operator.LabelOSVersion: "22.04", operator.LabelKernel: "6.8.0-90-generic",
	}
	if owner != "" {
		labels[operator.LabelOwner] = owner
	}
	for k, v := range extra {
		labels[k] = v
	}
	return routing.Node{Name: name, Labels: labels}
}

func TestBuildSplitsOverriddenAndInherited(t *testing.T) {
	r := &render.Result{
		Drivers:      []v1alpha1.RBLNDriver{drv("rbln-driver", "1", nil), drv("rbln-driver-a", "2", map[string]string{"env": "a"})},
		InstanceKeys: map[string]string{"rbln-driver": "", "rbln-driver-a": "a"},
		Provenance: map[string]render.Provenance{
			"rbln-driver": {
				{Field: "registry", Origin: render.OriginChartDefault},
				{Field: "version", Origin: render.OriginValues},
			},
			"rbln-driver-a": {
				{Field: "registry", Origin: render.OriginChartDefault},
				{Field: "version", Origin: render.OriginInstance},
				{Field: "tolerations", Origin: render.OriginCleared},
				{Field: "env", Origin: render.OriginValues},
			},
		},
	}
	rep := buildPreview(r)
	require.Len(t, rep.Resources, 2)
	def, inst := rep.Resources[0], rep.Resources[1]
	assert.Equal(t, map[string]string{}, def.Selector, "the empty selector is {} in JSON, not null")
	assert.Equal(t, []string{"version"}, fields(def.Overridden), "for the default, values the user set count as set")
	assert.Equal(t, []string{"registry"}, fields(def.Inherited))
	assert.Equal(t, []string{"version", "tolerations"}, fields(inst.Overridden))
	assert.Equal(t, []string{"registry", "env"}, fields(inst.Inherited))
}

func fields(fs []render.FieldOrigin) []string {
	var out []string
	for _, f := range fs {
		out = append(out, f.Field)
	}
	return out
}

func TestWithNodesReportsChanges(t *testing.T) {
	drivers := []v1alpha1.RBLNDriver{
		drv("rbln-driver-a", "2", map[string]string{"env": "a"}),
		drv("rbln-driver-b", "3", map[string]string{"zone": "b"}),
	}
	nodes := []routing.Node{
		node("stays", "rbln-driver-a", map[string]string{"env": "a"}),
		node("moves", "rbln-driver", map[string]string{"env": "a"}),
		node("loses", "rbln-driver", nil),
		node("tied", "", map[string]string{"env": "a", "zone": "b"}),
		node("nofamily", "", map[string]string{"env": "a", operator.LabelFamily: ""}),
		{Name: "outside", Labels: map[string]string{operator.LabelDeployDriver: "pre-installed", operator.LabelOwner: "rbln-driver"}},
	}
	st := cluster.FromLists(nodes, nil, nil, nil)
	st.SetSources(cluster.Sources{Nodes: cluster.Source{Given: true, From: "--nodes nodes.yaml", Count: len(nodes)}}) // no --drivers
	res, err := release.Apply(t.Context(), release.Objects{Drivers: drivers}, st, release.Options{})
	require.NoError(t, err)
	rep := &PreviewReport{}
	addNodeReport(rep, res)
	nr := rep.Nodes
	require.NotNil(t, nr)
	assert.Equal(t, []release.NodeLoss{{Node: "loses", From: "rbln-driver", Reason: routing.ReasonNoMatchingDriver}}, nr.LosingDriver)
	assert.Equal(t, []release.OwnerChange{{Node: "moves", From: "rbln-driver", To: "rbln-driver-a"}}, nr.ChangingDriver)
	var unowned []string
	for _, n := range nr.Unowned {
		unowned = append(unowned, n.Name)
	}
	// rbln-driver-b ties with rbln-driver-a on "tied": the webhook denies it, so it is not
	// applied and "tied" goes to rbln-driver-a.
	require.Len(t, res.Objects, 2)
	assert.True(t, res.Objects[0].Verdict.Allowed())
	assert.False(t, res.Objects[1].Verdict.Allowed())
	assert.Equal(t, "ConflictingNodeSelector", res.Objects[1].Verdict.Denials[0].Rule)
	assert.ElementsMatch(t, []string{"loses"}, unowned, "out-of-scope nodes are not candidates")
	assert.Equal(t, []string{"nofamily"}, nr.FamilyLabelMissing)
	assert.Empty(t, nr.Routing.Conflicts)
}
