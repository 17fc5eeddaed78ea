package policy

import (
	"bytes"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	authenticationv1 "k8s.io/api/authentication/v1"

	"github.com/driverguard/driverguard/api/v1alpha1"
)

// TestInputValueIsTheJSONForm: policies see exactly the document `policy input` prints.
func TestInputValueIsTheJSONForm(t *testing.T) {
	d := &v1alpha1.RBLNDriver{Spec: v1alpha1.RBLNDriverSpec{Version: "3.2.2", NodeSelector: map[string]string{"a": "b"}}}
	d.Name, d.Kind, d.APIVersion = "rbln-driver", "RBLNDriver", "rebellions.ai/v1alpha1"
	cp := &v1alpha1.RBLNClusterPolicy{}
	cp.Name = "rbln-cluster-policy"
	for name, in := range map[string]*Input{
		"empty":  {},
		"render": {Object: d, Operation: OperationCreate, Source: SourceRender, Cluster: Cluster{Drivers: []v1alpha1.RBLNDriver{*d}, ClusterPolicy: cp, Nodes: []Node{{Name: "n1", Labels: map[string]string{"x": "y", "z": ""}, Owner: "rbln-driver", Pool: "p"}, {Name: "n2"}}}},
		"admission": {Object: map[string]any{"kind": "RBLNDriver", "n": 1.5}, OldObject: d, Operation: OperationUpdate, Source: SourceAdmission,
			UserInfo: &authenticationv1.UserInfo{Username: "u", Extra: map[string]authenticationv1.ExtraValue{"k": {"v"}}}, Cluster: Cluster{Nodes: []Node{}}},
		"typed nil old object": {OldObject: (*v1alpha1.RBLNDriver)(nil)},
	} {
		t.Run(name, func(t *testing.T) {
			b, err := json.Marshal(in)
			require.NoError(t, err)
			want, err := ast.ValueFromReader(bytes.NewReader(b))
			require.NoError(t, err)
			got, err := inputValue(in, nil)
			require.NoError(t, err)
			assert.Equal(t, 0, want.Compare(got), "JSON:   %s\ndirect: %s", want, got)
			memo := &valueMemo{drivers: map[string]*ast.Term{}}
			for range 2 {
				got, err = inputValue(in, memo)
				require.NoError(t, err)
				assert.Equal(t, 0, want.Compare(got), "through the memo")
			}
			cache := newNodeCache()
			for range 2 {
				got, err = inputValue(in, &valueMemo{nodeCache: cache})
				require.NoError(t, err)
				assert.Equal(t, 0, want.Compare(got), "through the node cache")
			}
		})
	}
}

// TestNodeCacheFollowsChanges: a cached node is reused only while its name, owner, pool and
// labels map are the same; a new snapshot (new maps) or a new routing gets a new value.
func TestNodeCacheFollowsChanges(t *testing.T) {
	cache := newNodeCache()
	labels := map[string]string{"rebellions.ai/npu.family": "atom"}
	value := func(nodes []Node) ast.Value {
		v, err := inputValue(&Input{Cluster: Cluster{Nodes: nodes}}, &valueMemo{nodeCache: cache})
		require.NoError(t, err)
		return v
	}
	first := value([]Node{{Name: "n", Labels: labels, Owner: "rbln-driver"}})
	assert.Equal(t, 0, first.Compare(value([]Node{{Name: "n", Labels: labels, Owner: "rbln-driver"}})))
	moved := value([]Node{{Name: "n", Labels: labels, Owner: "rbln-driver-atom"}})
	assert.NotEqual(t, 0, first.Compare(moved), "a new owner is a new value")
	relabelled := value([]Node{{Name: "n", Labels: map[string]string{"rebellions.ai/npu.family": "rebel"}, Owner: "rbln-driver"}})
	assert.NotEqual(t, 0, first.Compare(relabelled), "a new labels map (a new snapshot) is a new value")

	many := make([]Node, 3000)
	for i := range many {
		many[i] = Node{Name: fmt.Sprint(i), Labels: map[string]string{}}
	}
	value(many)
	value(many[:10])
	cache.mu.Lock()
	defer cache.mu.Unlock()
	assert.Len(t, cache.m, 10, "entries of older snapshots are dropped once the cache outgrows what a request needs")
}
