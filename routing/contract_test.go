package routing

import (
	"encoding/json"
	"sort"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/driverguard/driverguard/api/v1alpha1"
	"github.com/driverguard/driverguard/operator"
)

// TestContractKeys pins the `route -o json` contract of docs/routing.md "`route -o json` contract": exactly these keys.
func TestContractKeys(t *testing.T) {
	drivers := []v1alpha1.RBLNDriver{
		drv("rbln-driver", nil),
		drv("rbln-driver-a", map[string]string{"env": "a"}),
		drv("rbln-driver-b", map[string]string{"zone": "b"}),
		drv("rbln-driver-bad", map[string]string{operator.LabelOwner: "x"}),
	}
	nodes := []Node{{Name: "n1", Labels: map[string]string{
		operator.LabelDeployDriver: "true", operator.LabelFamily: "atom", operator.LabelOSID: "ubuntu",
		operator.LabelOSVersion: "22.04", operator.LabelKernel: "6.8.0-90-generic", "env": "a", "zone": "b",
	}}, {Name: "n2", Labels: map[string]string{
		operator.LabelDeployDriver: "true", operator.LabelFamily: "atom", operator.LabelOSID: "ubuntu",
		operator.LabelOSVersion: "22.04", operator.LabelKernel: "6.8.0-90-generic",
	}}}
	data, err := json.Marshal(Route(drivers, nodes, Options{}).Contract())
	require.NoError(t, err)
	var doc map[string][]map[string]any
	require.NoError(t, json.Unmarshal(data, &doc))
	assert.Equal(t, []string{"conflicts", "invalid", "nodes", "pools"}, keys(doc))
	want := map[string][]string{
		"nodes":     {"image", "name", "owner", "pool", "reason"},
		"conflicts": {"nodes", "resources"},
		"invalid":   {"reason", "resource"},
		"pools":     {"daemonSet", "image", "name", "nodes", "owner"},
	}
	for list, fields := range want {
		require.NotEmpty(t, doc[list], list)
		for _, item := range doc[list] {
			assert.Equal(t, fields, keys(item), list)
		}
	}
}

func keys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
