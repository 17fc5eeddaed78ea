package policy_test

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/driverguard/driverguard/api/v1alpha1"
	"github.com/driverguard/driverguard/policy"
)

// TestNodeLabelKeys (#45): METADATA custom.nodeLabels, in any scope and any file, declares the
// node labels policies read; the engine reports them sorted and once. A declaration that is
// not a list of label keys is a load problem that names the entry and what to write.
func TestNodeLabelKeys(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "zones.rego", `# METADATA
# custom:
#   nodeLabels: [topology.kubernetes.io/zone, example.com/rack]
package driverguard.zones

deny contains "x" if {
	some node in data.driverguard_cluster.nodes
	node.labels["topology.kubernetes.io/zone"] == "quarantine"
}
`)
	writeFile(t, dir, "racks.rego", `package driverguard.racks

# METADATA
# custom:
#   nodeLabels: [example.com/rack]
deny contains "y" if {
	some node in data.driverguard_cluster.nodes
	node.labels["example.com/rack"] == "r0"
}
`)
	e := newEngine(t, policy.Options{Dirs: []string{dir}, ExcludeLibrary: true})
	assert.Equal(t, []string{"example.com/rack", "topology.kubernetes.io/zone"}, e.NodeLabelKeys())

	none := newEngine(t, policy.Options{ExcludeLibrary: true})
	assert.Empty(t, none.NodeLabelKeys())

	for name, tc := range map[string]struct{ decl, want string }{
		"a string":        {"nodeLabels: topology.kubernetes.io/zone", "METADATA custom.nodeLabels must be a list of node label keys, e.g. `nodeLabels: [topology.kubernetes.io/zone]`; got a string"},
		"null":            {"nodeLabels:", "got null"},
		"a number":        {"nodeLabels: [1]", "METADATA custom.nodeLabels[0] must be a label key (a string), got"},
		"not a label key": {"nodeLabels: [\"a b\"]", `METADATA custom.nodeLabels[0] "a b" is not a label key: `},
		"a 64-char name":  {"nodeLabels: [example.com/" + "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa]", "is not a label key: name part must be no more than 63 bytes"},
	} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			file := writeFile(t, dir, "bad.rego", "# METADATA\n# custom:\n#   "+tc.decl+"\npackage driverguard.bad\n\ndeny contains \"x\" if false\n")
			_, err := policy.New(t.Context(), policy.Options{Dirs: []string{dir}, ExcludeLibrary: true, Metrics: prometheus.NewRegistry()})
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
			assert.Contains(t, err.Error(), file)
		})
	}
}

// TestNodeLabelsPoliciesSee (#45): in data.driverguard_cluster.nodes a node holds the labels
// serve's cluster view keeps — the operator's, the drivers' selector keys and the declared
// ones — whatever the view was given (check and review read every label of a file): a policy
// sees the same labels in every command and in the webhook.
func TestNodeLabelsPoliciesSee(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "zones.rego", `# METADATA
# custom:
#   nodeLabels: [topology.kubernetes.io/zone]
package driverguard.zones

deny contains "x" if {
	some node in data.driverguard_cluster.nodes
	node.labels["topology.kubernetes.io/zone"] == "quarantine"
}
`)
	e := newEngine(t, policy.Options{Dirs: []string{dir}, ExcludeLibrary: true})
	labels := map[string]string{"rebellions.ai/npu.family": "atom", "topology.kubernetes.io/zone": "quarantine",
		"kubernetes.io/hostname": "n1", "rack": "r1"}
	view := &policy.ClusterView{Nodes: []policy.ClusterNode{{Name: "n1", Labels: labels}}}
	require.NoError(t, e.SyncCluster(t.Context(), view))
	seen := func() any {
		doc, err := e.ClusterDocument()
		require.NoError(t, err)
		return doc.(map[string]any)["nodes"].(map[string]any)["n1"].(map[string]any)["labels"]
	}
	assert.Equal(t, map[string]any{"rebellions.ai/npu.family": "atom", "topology.kubernetes.io/zone": "quarantine"}, seen())

	// A driver that selects rack: the nodes show rack too.
	d := &v1alpha1.RBLNDriver{ObjectMeta: metav1.ObjectMeta{Name: "rbln-driver-r1", ResourceVersion: "1"},
		Spec: v1alpha1.RBLNDriverSpec{NodeSelector: map[string]string{"rack": "r1"}}}
	view.Drivers = []*v1alpha1.RBLNDriver{d}
	require.NoError(t, e.SyncCluster(t.Context(), view))
	assert.Equal(t, map[string]any{"rebellions.ai/npu.family": "atom", "topology.kubernetes.io/zone": "quarantine", "rack": "r1"}, seen())
	// Gone again with the driver.
	view.Drivers = nil
	require.NoError(t, e.SyncCluster(t.Context(), view))
	assert.Equal(t, map[string]any{"rebellions.ai/npu.family": "atom", "topology.kubernetes.io/zone": "quarantine"}, seen())
}
