package app

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestPlanNeedsTheNodes (#30): a plan without the nodes — no --nodes, --live or --kubeconfig —
// has nothing to plan for; it is a usage error naming the flags, never "can proceed" over an
// empty node table. Its audit mode (no -f) needs the nodes as much.
func TestPlanNeedsTheNodes(t *testing.T) {
	noCluster(t)
	for name, args := range map[string][]string{
		"values":            {"plan", "-f", exampleValues},
		"values, markdown":  {"plan", "-f", exampleValues, "-o", "markdown"},
		"values, json":      {"plan", "-f", exampleValues, "-o", "json"},
		"nothing":           {"plan"},
		"drivers only":      {"plan", "-f", exampleValues, "--drivers", exampleDrivers},
		"pods only":         {"plan", "--pods", exampleWorkloads},
		"release, no nodes": {"plan", "--release", "driverguard", "-f", exampleValues},
	} {
		t.Run(name, func(t *testing.T) {
			r := run(t, "", args...)
			assert.Equal(t, ExitUsage, r.code, r.stdout)
			assert.Empty(t, r.stdout, "no plan")
			for _, flag := range []string{"--live", "--kubeconfig", "--nodes", "--drivers", "--release"} {
				assert.Contains(t, r.stderr, flag)
			}
			assert.Contains(t, r.stderr, "no nodes to plan for")
		})
	}
}
