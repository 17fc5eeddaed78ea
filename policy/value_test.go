package policy

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	authenticationv1 "k8s.io/api/authentication/v1"

	"github.com/driverguard/driverguard/api/v1alpha1"
	"github.com/driverguard/driverguard/operator"
)

// TestInputValueIsTheJSONForm: policies see exactly the document `policy input` prints.
func TestInputValueIsTheJSONForm(t *testing.T) {
	d := &v1alpha1.RBLNDriver{Spec: v1alpha1.RBLNDriverSpec{Version: "3.2.2", NodeSelector: map[string]string{"a": "b"}}}
	d.Name, d.Kind, d.APIVersion = "rbln-driver", "RBLNDriver", "rebellions.ai/v1alpha1"
	routed := &Routing{
		Selected: 3, Nodes: 2,
		Pools: []Pool{{Name: "atom-ubuntu22.04-6.8.0", DaemonSet: "rbln-driver-atom-ubuntu22.04-6.8.0", Family: "atom", OS: "ubuntu", OSVersion: "22.04",
			Kernel: "6.8.0", Tag: "3.2.2-6.8.0-ubuntu22.04", Image: "r/o/atom/rbln-driver:3.2.2-6.8.0-ubuntu22.04", Nodes: []string{"n1"}}},
		Unpooled:      []UnpooledNode{{Name: "n2", Reason: "DriverFamilyLabelMissing"}},
		Ties:          []Tie{{Resources: []string{"a", "rbln-driver"}, Nodes: []string{"n3"}, Total: 1}},
		PotentialTies: []PotentialTie{{Resource: "a", Identical: true, Labels: map[string]string{"a": "b"}}},
	}
	empty := &Routing{Pools: []Pool{}, Unpooled: []UnpooledNode{}, Ties: []Tie{}, PotentialTies: []PotentialTie{}}
	for name, in := range map[string]*Input{
		"empty":  {},
		"render": {Object: d, Operation: OperationCreate, Source: SourceRender, Routing: routed},
		"admission": {Object: json.RawMessage(`{"kind":"RBLNDriver","n":1.5,"metadata":{"name":"x"}}`), OldObject: d, Operation: OperationUpdate, Source: SourceAdmission,
			UserInfo: &authenticationv1.UserInfo{Username: "u", UID: "1", Groups: []string{"g"}, Extra: map[string]authenticationv1.ExtraValue{"k": {"v"}}}, Routing: empty},
		"map object":           {Object: map[string]any{"kind": "RBLNClusterPolicy"}, UserInfo: &authenticationv1.UserInfo{}},
		"typed nil old object": {OldObject: (*v1alpha1.RBLNDriver)(nil)},
	} {
		t.Run(name, func(t *testing.T) {
			b, err := json.Marshal(in)
			require.NoError(t, err)
			want, err := ast.ValueFromReader(bytes.NewReader(b))
			require.NoError(t, err)
			got, err := inputValue(in, in.Routing, readAll)
			require.NoError(t, err)
			assert.Equal(t, 0, want.Compare(got), "JSON:   %s\ndirect: %s", want, got)
		})
	}
}

// TestClusterDataSyncAndPatch: the store holds exactly the view given, a sync writes only
// what changed, and removals keep the family counts right.
func TestClusterDataSyncAndPatch(t *testing.T) {
	c := newClusterData()
	c.holdNodes(true)
	atom := map[string]string{operator.LabelFamily: "atom"}
	rebel := map[string]string{operator.LabelFamily: "rebel"}
	d1 := &v1alpha1.RBLNDriver{}
	d1.Name = "rbln-driver"
	view := &ClusterView{
		Drivers: []*v1alpha1.RBLNDriver{d1},
		Nodes:   []ClusterNode{{Name: "n1", Labels: atom, Owner: "rbln-driver"}, {Name: "n2", Labels: atom}, {Name: "n3", Labels: rebel}},
	}
	ops, err := c.sync(view)
	require.NoError(t, err)
	assert.Len(t, ops, 1+3+3, "one driver, three nodes, a family count per node")
	ops, err = c.sync(view)
	require.NoError(t, err)
	assert.Empty(t, ops, "nothing changed")

	view.Nodes[1] = ClusterNode{Name: "n2", Labels: rebel}
	ops, err = c.sync(view)
	require.NoError(t, err)
	assert.Len(t, ops, 3, "the node and the two family counts")
	assert.Equal(t, map[string]int{"atom": 1, "rebel": 2}, c.families)

	ops, err = c.patch(&ClusterPatch{Nodes: nil})
	require.NoError(t, err)
	assert.Empty(t, ops)
	view.Nodes = view.Nodes[:1]
	view.Drivers = nil
	_, err = c.sync(view)
	require.NoError(t, err)
	assert.Equal(t, map[string]int{"atom": 1}, c.families)
	assert.Len(t, c.nodes, 1)
	assert.Empty(t, c.drivers)

	doc, err := ast.JSON(c.document(true))
	require.NoError(t, err)
	assert.Equal(t, map[string]any{
		"drivers":  map[string]any{},
		"nodes":    map[string]any{"n1": map[string]any{"name": "n1", "labels": map[string]any{operator.LabelFamily: "atom"}, "owner": "rbln-driver", "pool": ""}},
		"families": map[string]any{"atom": json.Number("1")},
	}, doc)
}

// TestClusterDataWithoutNodes: while no policy reads data.driverguard_cluster.nodes, a sync
// writes only the family counts and converts no node; holding the nodes again converts them
// as they are now.
func TestClusterDataWithoutNodes(t *testing.T) {
	c := newClusterData()
	atom := map[string]string{operator.LabelFamily: "atom"}
	view := &ClusterView{Nodes: []ClusterNode{{Name: "n1", Labels: atom}, {Name: "n2", Labels: atom, Owner: "rbln-driver"}}}
	ops, err := c.sync(view)
	require.NoError(t, err)
	require.Len(t, ops, 2, "the atom count, once per node")
	for _, op := range ops {
		assert.Equal(t, familiesPath, op.path[:2])
	}
	for _, e := range c.nodes {
		assert.Nil(t, e.term)
	}
	doc := c.document(false)
	assert.Equal(t, 0, doc.Get(ast.InternedTerm("nodes")).Value.(ast.Object).Len())

	view.Nodes[0].Owner = "rbln-driver-atom"
	_, err = c.sync(view)
	require.NoError(t, err)
	c.holdNodes(true)
	got, err := ast.JSON(c.document(true).Get(ast.InternedTerm("nodes")).Value)
	require.NoError(t, err)
	assert.Equal(t, "rbln-driver-atom", got.(map[string]any)["n1"].(map[string]any)["owner"])
	assert.NotNil(t, c.nodes["n1"].term, "held nodes keep their values")

	c.holdNodes(false)
	assert.Nil(t, c.nodes["n1"].term, "values are dropped when no policy reads them")
}
