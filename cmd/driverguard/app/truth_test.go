package app

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/driverguard/driverguard/action"
	"github.com/driverguard/driverguard/cluster"
	"github.com/driverguard/driverguard/plan"
)

// ghostNodes writes n candidate nodes of a family no driver selects whose owner label names
// "ghost-driver", an RBLNDriver no cluster holds, and one rebel node owned by
// rbln-driver-rebel.
func ghostNodes(t *testing.T, n int) string {
	t.Helper()
	var b strings.Builder
	b.WriteString("apiVersion: v1\nkind: List\nitems:\n")
	node := func(name, family, owner string) {
		fmt.Fprintf(&b, `- apiVersion: v1
  kind: Node
  metadata:
    name: %s
    labels:
      rebellions.ai/npu.deploy.driver: "true"
      rebellions.ai/npu.family: %s
      rebellions.ai/npu.driver.owner: %s
      feature.node.kubernetes.io/system-os_release.ID: ubuntu
      feature.node.kubernetes.io/system-os_release.VERSION_ID: "22.04"
      feature.node.kubernetes.io/kernel-version.full: 6.8.0-90-generic
`, name, family, owner)
	}
	for i := range n {
		node(fmt.Sprintf("npu-ghost-%03d", i), "ghost", "ghost-driver")
	}
	node("npu-rebel-01", "rebel", "rbln-driver-rebel")
	path := filepath.Join(t.TempDir(), "nodes.yaml")
	require.NoError(t, os.WriteFile(path, []byte(b.String()), 0o600))
	return path
}

// TestStaleOwnerLabelIsNotADriverLoss (#30): 300 nodes whose owner label names an RBLNDriver
// that does not exist run no driver; no release can take one away. check, preview and plan
// call them StaleOwnerLabel as the audit does, and none fails the release for them.
func TestStaleOwnerLabelIsNotADriverLoss(t *testing.T) {
	nodes := ghostNodes(t, 300)
	// The cluster runs the example without a default driver: nothing selects the ghost family.
	r := run(t, "", "render", "-f", exampleValues, "--set", "driver.deployDefault=false")
	require.Equal(t, ExitOK, r.code, r.stderr)
	drivers := filepath.Join(t.TempDir(), "drivers.yaml")
	require.NoError(t, os.WriteFile(drivers, []byte(r.stdout), 0o600))
	args := []string{"-f", exampleValues, "--set", "driver.deployDefault=false", "--set", "driver.image.tag=3.2.3", "--nodes", nodes, "--drivers", drivers}

	r = run(t, "", append([]string{"check"}, args...)...)
	require.Equal(t, ExitOK, r.code, r.stdout+r.stderr)
	assert.NotContains(t, r.stdout, "WOULD LOSE THEIR DRIVER")
	assert.Contains(t, r.stdout, `npu-ghost-000: StaleOwnerLabel: its rebellions.ai/npu.driver.owner label is "ghost-driver", but no RBLNDriver owns the node now`)
	assert.Contains(t, r.stdout, `npu-ghost-000: Unowned: a candidate node that no RBLNDriver selects`)
	assert.Contains(t, r.stdout, "... and 550 more (driverguard audit lists every one)")
	var rep action.CheckReport
	r = run(t, "", append([]string{"check", "-o", "json"}, args...)...)
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &rep))
	assert.Empty(t, rep.DriverLoss)
	assert.Equal(t, "routing", rep.Basis)
	assert.Len(t, rep.Drift, 50)
	assert.Equal(t, 600, len(rep.Drift)+rep.DriftOmitted, "a StaleOwnerLabel and an Unowned per ghost node; the rebel node is fine")

	r = run(t, "", append([]string{"plan", "-o", "json"}, args...)...)
	p := planJSON(t, r)
	assert.Zero(t, p.Summary.LoseDriver)
	for _, reason := range p.Reasons {
		assert.NotContains(t, reason, "lose", "plan's verdict agrees with its summary")
	}
	stale := 0
	for _, d := range p.Drift {
		if d.Kind == plan.DriftStaleOwnerLabel && strings.HasPrefix(d.Node, "npu-ghost-") {
			stale++
		}
	}
	assert.Equal(t, 300, stale)

	r = run(t, "", "audit", "--nodes", nodes, "--drivers", drivers, "-o", "json")
	require.Contains(t, []int{ExitOK, ExitInvalid}, r.code, r.stderr)
	assert.Contains(t, r.stdout, `"rule": "StaleOwnerLabel"`)
	assert.NotContains(t, r.stdout, `"rule": "DriverLoss"`)

	r = run(t, "", append([]string{"preview"}, args...)...)
	require.Equal(t, ExitOK, r.code, r.stdout+r.stderr)
	assert.NotContains(t, r.stdout, "npu-ghost-000: lose-driver")

	// Without the current drivers the label is all there is: the loss stands, and the
	// output says what it was compared with and how to tell.
	r = run(t, "", "check", "-f", exampleValues, "--set", "driver.deployDefault=false", "--nodes", nodes)
	assert.Equal(t, ExitInvalid, r.code)
	assert.Contains(t, r.stdout, "npu-ghost-000: owned by ghost-driver now, would get no driver")
	assert.Contains(t, r.stdout, "RBLNDrivers: not given (a node's driver now is the one its rebellions.ai/npu.driver.owner label names; give --drivers or --live to tell a stale label from a driver)")
}

// TestReleaseNameThatOwnsNothing (#30): judging a release under a name whose release does not
// store the drivers it renders would hide what that release deletes; check and plan refuse,
// naming the flag and the release that does.
func TestReleaseNameThatOwnsNothing(t *testing.T) {
	for _, cmd := range []string{"check", "plan", "preview"} {
		t.Run(cmd, func(t *testing.T) {
			r := run(t, "", cmd, "-f", exampleValues, "--nodes", exampleNodes, "--drivers", exampleDrivers, "--release-name", "npu")
			assert.Equal(t, ExitUsage, r.code, r.stdout)
			assert.Empty(t, r.stdout)
			assert.Contains(t, r.stderr, `release "npu" renders RBLNDriver/rbln-driver, RBLNDriver/rbln-driver-rebel, stored in the cluster by Helm release "driverguard"`)
			assert.Contains(t, r.stderr, "--release-name driverguard")
		})
	}
	// Under its own name a removed instance is a deletion.
	values := filepath.Join(t.TempDir(), "values.yaml")
	require.NoError(t, os.WriteFile(values, []byte("driver:\n  image: {tag: \"3.2.2\"}\n"), 0o600))
	r := run(t, "", "plan", "-f", values, "--nodes", exampleNodes, "--drivers", exampleDrivers, "-o", "json")
	p := planJSON(t, r)
	actions := map[string]string{}
	for _, d := range p.Drivers {
		actions[d.Name] = d.Action
	}
	assert.Equal(t, plan.DriverDelete, actions["rbln-driver-rebel"])
}

// TestEmptyNodeInventory (#30): a --nodes file without nodes (a kubectl that failed into a
// process substitution) is said in every format and counts as a warning.
func TestEmptyNodeInventory(t *testing.T) {
	empty := filepath.Join(t.TempDir(), "nodes.yaml")
	require.NoError(t, os.WriteFile(empty, nil, 0o600))
	want := "--nodes " + empty + " holds no nodes"
	for _, format := range []string{"table", "json", "junit", "sarif"} {
		t.Run(format, func(t *testing.T) {
			r := run(t, "", "check", "-f", exampleValues, "--nodes", empty, "-o", format)
			assert.Equal(t, ExitOK, r.code, r.stderr)
			assert.Contains(t, r.stdout, want)
			if format == "json" {
				var rep action.CheckReport
				require.NoError(t, json.Unmarshal([]byte(r.stdout), &rep))
				assert.Equal(t, action.Inputs{Nodes: cluster.Source{Given: true, From: "--nodes " + empty}}, rep.Inputs)
				return
			}
			assert.Contains(t, r.stdout, "0 nodes read from --nodes "+empty)
		})
	}
	r := run(t, "", "check", "-f", exampleValues, "--nodes", empty, "--fail-on-warn")
	assert.Equal(t, ExitInvalid, r.code, "the CI gate fails on it")
	r = run(t, "", "preview", "-f", exampleValues, "--nodes", empty)
	assert.Contains(t, r.stdout, want)
	r = run(t, "", "plan", "-f", exampleValues, "--nodes", empty)
	assert.Contains(t, r.stdout, want)
}

// TestPreviewAndPlanAgree (#30): given the same inputs, preview and plan name the same nodes
// with the same actions (plan adds held and blocked on top of a restart).
func TestPreviewAndPlanAgree(t *testing.T) {
	r := run(t, "", "preview", "-f", exampleValues, "--nodes", exampleNodes, "--drivers", exampleDrivers, "-o", "json")
	require.Equal(t, ExitOK, r.code, r.stderr)
	var pre action.PreviewReport
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &pre))
	got := map[string]string{}
	for _, c := range pre.Nodes.Changes {
		got[c.Node] = c.Action
	}
	p := planJSON(t, run(t, "", "plan", "-f", exampleValues, "--nodes", exampleNodes, "--drivers", exampleDrivers, "--pods", "../../../examples/workloads.yaml", "-o", "json"))
	want := map[string]string{}
	for _, n := range p.Nodes {
		a := n.Action
		if a == plan.NodeBlocked || a == plan.NodeHeld {
			a = plan.NodeUpgrade
			if n.OldOwner != n.NewOwner {
				a = plan.NodeChangeOwner
			}
		}
		if a != plan.NodeNone {
			want[n.Name] = a
		}
	}
	assert.Equal(t, want, got)
	assert.Equal(t, map[string]string{
		"npu-atom-canary-01": "change-owner", "npu-atom-canary-02": "change-owner",
		"npu-rebel-01": "upgrade", "npu-rebel-02": "upgrade", "npu-rebel-03": "upgrade",
	}, got)
}

// TestAuditSaysWhatItRead (#30): the audit of an empty node inventory says so in every format.
func TestAuditSaysWhatItRead(t *testing.T) {
	empty := filepath.Join(t.TempDir(), "nodes.yaml")
	require.NoError(t, os.WriteFile(empty, nil, 0o600))
	for _, format := range []string{"table", "json", "junit", "sarif"} {
		t.Run(format, func(t *testing.T) {
			r := run(t, "", "audit", "--nodes", empty, "--drivers", exampleDrivers, "-o", format)
			assert.Equal(t, ExitOK, r.code, r.stderr)
			assert.Contains(t, r.stdout, "--nodes "+empty+" holds no nodes")
			if format != "json" {
				assert.Contains(t, r.stdout, "0 nodes read from --nodes "+empty)
			}
		})
	}
}

// TestRouteWarnsAboutAnEmptyInventory (#30): route's JSON contract has no place for it, so
// the warning goes to standard error.
func TestRouteWarnsAboutAnEmptyInventory(t *testing.T) {
	r := run(t, "", "route", "--drivers", exampleDrivers, "--nodes", "/dev/null", "-o", "json")
	assert.Equal(t, ExitOK, r.code)
	assert.Contains(t, r.stderr, "Warning: --nodes /dev/null holds no nodes")
	assert.Contains(t, r.stdout, `"nodes": []`)
}
