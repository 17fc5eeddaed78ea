package app

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestSingleValueFlagGivenTwice (#30): a flag that takes one value, given twice, is an error
// naming the flag and both values — never the last one silently.
func TestSingleValueFlagGivenTwice(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"drivers", []string{"plan", "-f", exampleValues, "--nodes", exampleNodes, "--drivers", exampleDrivers, "--drivers", "/dev/null"},
			`invalid argument "/dev/null" for "--drivers" flag: given a second time (first "` + exampleDrivers + `"): it takes one value`},
		{"nodes", []string{"check", "-f", exampleValues, "--nodes", "a.yaml", "--nodes", "b.yaml"}, `"--nodes" flag: given a second time (first "a.yaml")`},
		{"a bool", []string{"check", "-f", exampleValues, "--fail-on-warn", "--fail-on-warn=false"}, `"--fail-on-warn" flag: given a second time`},
		{"a duration", []string{"check", "-f", exampleValues, "--policy-timeout", "1s", "--policy-timeout=2s"}, `"--policy-timeout" flag: given a second time`},
		{"a persistent size", []string{"--max-values-size", "1Mi", "render", "-f", exampleValues, "--max-values-size=2Mi"}, `"--max-values-size" flag: given a second time`},
		{"an output", []string{"route", "--drivers", exampleDrivers, "--nodes", exampleNodes, "-o", "json", "-o", "table"}, `"-o, --output" flag: given a second time`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := run(t, "", tc.args...)
			assert.Equal(t, ExitUsage, r.code)
			assert.Empty(t, r.stdout)
			assert.Contains(t, r.stderr, tc.want)
		})
	}
	// Flags that add up still do.
	r := run(t, "", "check", "-f", exampleValues, "-f", "../../../examples/rollout.yaml", "--set", "driver.image.tag=3.2.3", "--set", "driver.instances.rebel.image.tag=3.2.4")
	assert.Equal(t, ExitOK, r.code, r.stderr)
}

// TestKubeContextWithFiles (#30): --kube-context names a cluster to read; with files only it
// would be ignored, so it is refused as --kubeconfig with files is.
func TestKubeContextWithFiles(t *testing.T) {
	noCluster(t)
	for _, cmd := range []string{"check", "preview", "plan", "audit"} {
		t.Run(cmd, func(t *testing.T) {
			args := []string{cmd, "--nodes", exampleNodes, "--drivers", exampleDrivers, "--kube-context", "prod"}
			if cmd != "audit" {
				args = append(args, "-f", exampleValues)
			}
			r := run(t, "", args...)
			assert.Equal(t, ExitUsage, r.code, r.stdout)
			assert.Contains(t, r.stderr, `--kube-context "prod" selects a cluster to read, but nothing is read from a cluster`)
			r = run(t, "", append(args, "--kubeconfig", filepath.Join(t.TempDir(), "none"))...)
			assert.Equal(t, ExitUsage, r.code)
			assert.Contains(t, r.stderr, "--live/--kubeconfig reads the cluster, and --nodes, --drivers read files of it: use one or the other")
		})
	}
}

// TestLiveFalseAsWritten (#30): "--live false", as the README writes it, is --live=false, for
// a boolean --live and for post-render's --live auto|true|false; any other word after --live
// stays an argument.
func TestLiveFalseAsWritten(t *testing.T) {
	noCluster(t)
	r := run(t, "", "check", "-f", exampleValues, "--live", "false")
	assert.Equal(t, ExitOK, r.code, r.stderr)
	assert.Contains(t, r.stdout, "the rendered objects alone")
	r = run(t, "", "plan", "--live", "true", "-f", exampleValues)
	assert.Equal(t, ExitUsage, r.code)
	assert.Contains(t, r.stderr, "no cluster to read", "--live true reads the cluster")
	rendered := helmRendered(t, exampleValues)
	r = run(t, rendered, "post-render", "--live", "false")
	require.Equal(t, ExitOK, r.code, r.stderr)
	assert.Contains(t, r.stderr, "judged against the rendered objects alone (--live=false)")
	r = run(t, rendered, "post-render", "--live", "auto")
	require.Equal(t, ExitOK, r.code, r.stderr)
	assert.Contains(t, r.stderr, "(no cluster configured)")
	r = run(t, "", "check", "-f", exampleValues, "--live", "maybe")
	assert.Equal(t, ExitUsage, r.code)
	assert.Contains(t, r.stderr, `unknown command "maybe" for "driverguard check"`)
	r = run(t, "", "check", "-f", exampleValues, "--", "--live", "false")
	assert.Equal(t, ExitUsage, r.code, "after -- nothing is a flag")
}

// TestPostRenderSaysWarningsWhenItPasses (#30): a passing post-renderer still says its
// warnings (check warns lib.drain_empty_dir on examples/rollout.yaml).
func TestPostRenderSaysWarningsWhenItPasses(t *testing.T) {
	noCluster(t)
	rendered := helmRendered(t, "../../../examples/rollout.yaml")
	r := run(t, rendered, "post-render")
	require.Equal(t, ExitOK, r.code, r.stderr)
	assert.Equal(t, rendered, r.stdout)
	assert.Contains(t, r.stderr, "driverguard post-render: 2 resources passed (1 warning), judged against the rendered objects alone (no cluster configured)")
	assert.Contains(t, r.stderr, "WARN   RBLNClusterPolicy/rbln-cluster-policy: driverguard.lib.drain_empty_dir: spec.driver.upgradePolicy.drain.deleteEmptyDirData is true")
	c := run(t, "", "check", "-f", "../../../examples/rollout.yaml")
	assert.Contains(t, c.stdout, "WARN  driverguard.lib.drain_empty_dir", "the warning check gives")
}
