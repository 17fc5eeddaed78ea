package policy_test

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

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
