package cluster_test

import (
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/driverguard/driverguard/api/v1alpha1"
	"github.com/driverguard/driverguard/cluster"
	"github.com/driverguard/driverguard/operator"
)

// fleetNode is a node labelled as a fleet's: the operator's labels among the kubelet's, the
// cloud's and NFD's.
func fleetNode(host, family string) map[string]string {
	return map[string]string{
		operator.LabelDeployDriver: "true", operator.LabelFamily: family, operator.LabelOSID: "ubuntu",
		operator.LabelOSVersion: "22.04", operator.LabelKernel: "6.8.0-90-generic",
		"kubernetes.io/hostname": host, "kubernetes.io/arch": "amd64", "topology.kubernetes.io/zone": "zone-a",
		"feature.node.kubernetes.io/cpu-cpuid.AVX512F": "true", "rack": "r7",
	}
}

// TestLabelKeysKeep (#45): a node keeps the operator's labels and the added keys, nothing
// else; nodes whose kept labels are equal share one map, and the strings are shared too.
func TestLabelKeysKeep(t *testing.T) {
	keys := cluster.NewLabelKeys("rack")
	a, b := keys.Keep(fleetNode("npu-1", "atom")), keys.Keep(fleetNode("npu-2", "atom"))
	assert.Equal(t, map[string]string{
		operator.LabelDeployDriver: "true", operator.LabelFamily: "atom", operator.LabelOSID: "ubuntu",
		operator.LabelOSVersion: "22.04", operator.LabelKernel: "6.8.0-90-generic", "rack": "r7",
	}, a)
	assert.True(t, sameMap(a, b), "equal kept labels share one map")
	c := keys.Keep(fleetNode("npu-3", "rebel"))
	assert.False(t, sameMap(a, c))
	assert.Equal(t, unsafe.StringData(a[operator.LabelKernel]), unsafe.StringData(c[operator.LabelKernel]), "values are interned")

	assert.Nil(t, keys.Keep(map[string]string{"kubernetes.io/hostname": "x"}), "nothing kept")
	assert.Nil(t, keys.Keep(nil))
	// Empty values and 63-character names are labels like any other.
	long := "example.com/" + "k23456789012345678901234567890123456789012345678901234567890123"
	keys.Add(long)
	assert.Equal(t, map[string]string{long: ""}, keys.Keep(map[string]string{long: "", "other": "x"}))
}

func sameMap(a, b map[string]string) bool {
	return *(*unsafe.Pointer)(unsafe.Pointer(&a)) == *(*unsafe.Pointer)(unsafe.Pointer(&b))
}

// TestLabelKeysAdd: Add reports the keys it added, sorted and once, and counts a version per
// Add that added some; AddedSince says what a version lacks.
func TestLabelKeysAdd(t *testing.T) {
	keys := cluster.NewLabelKeys()
	v0 := keys.Version()
	for _, k := range operator.NodeLabels {
		assert.True(t, keys.Has(k), k)
	}
	assert.False(t, keys.Has("rack"))
	assert.Equal(t, []string{"zone", "rack"}, keys.Missing([]string{"zone", operator.LabelFamily, "rack", "zone"}), "in their order")
	assert.Equal(t, []string{"rack", "zone"}, keys.Add("zone", "rack", "zone", operator.LabelFamily))
	assert.Nil(t, keys.Add("rack"), "nothing new")
	assert.Equal(t, v0+1, keys.Version())
	assert.Equal(t, []string{"slot"}, keys.Add("slot"))
	assert.Equal(t, []string{"rack", "zone", "slot"}, keys.AddedSince(v0))
	assert.Equal(t, []string{"slot"}, keys.AddedSince(v0+1))
	assert.Empty(t, keys.AddedSince(keys.Version()))
	assert.Empty(t, keys.Missing([]string{"rack", "slot"}))
}

// TestLabelKeysSweep: the shared maps no node uses any more are forgotten once the table
// has grown past twice those in use (and a margin): a fresh map is made when needed again.
func TestLabelKeysSweep(t *testing.T) {
	keys := cluster.NewLabelKeys("kubernetes.io/hostname")
	first := keys.Keep(fleetNode("npu-0", "atom"))
	var inUse []map[string]string
	for i := range 1100 {
		m := keys.Keep(fleetNode(string(rune('a'+i%26))+string(rune('a'+i/26)), "atom"))
		if i < 10 {
			inUse = append(inUse, m)
		}
	}
	keys.Sweep(func(yield func(map[string]string) bool) {
		for _, m := range inUse {
			if !yield(m) {
				return
			}
		}
	})
	assert.True(t, sameMap(inUse[3], keys.Keep(fleetNode("da", "atom"))), "a map in use stays shared")
	again := keys.Keep(fleetNode("npu-0", "atom"))
	assert.Equal(t, first, again)
	assert.False(t, sameMap(first, again), "a forgotten map is made anew")
}

// TestSelectorKeys lists every key of every selector.
func TestSelectorKeys(t *testing.T) {
	d := func(sel map[string]string) v1alpha1.RBLNDriver {
		return v1alpha1.RBLNDriver{Spec: v1alpha1.RBLNDriverSpec{NodeSelector: sel}}
	}
	require.ElementsMatch(t, []string{"a", "b", "a"}, cluster.SelectorKeys([]v1alpha1.RBLNDriver{d(map[string]string{"a": "1", "b": "2"}), d(nil), d(map[string]string{"a": "3"})}))
}
