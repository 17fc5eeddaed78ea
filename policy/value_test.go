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
		})
	}
}
