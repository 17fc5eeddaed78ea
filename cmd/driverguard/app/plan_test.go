package app

import (
	"encoding/json"
	"io"
	"log"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	ggcrregistry "github.com/google/go-containerregistry/pkg/registry"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/driverguard/driverguard/plan"
)

// The worked example of docs/plan.md: examples/multi-driver.yaml applied to a cluster running
// examples/drivers.yaml, with the workloads of examples/workloads.yaml.
const (
	exampleDrivers   = "../../../examples/drivers.yaml"
	exampleRollout   = "../../../examples/rollout.yaml"
	exampleWorkloads = "../../../examples/workloads.yaml"
)

func planArgs(extra ...string) []string {
	return append([]string{"plan", "-f", exampleValues, "--nodes", exampleNodes, "--drivers", exampleDrivers, "--pods", exampleWorkloads}, extra...)
}

func planJSON(t *testing.T, r result) plan.Plan {
	t.Helper()
	var p plan.Plan
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &p), "stdout: %s\nstderr: %s", r.stdout, r.stderr)
	return p
}

// TestPlanGolden pins the three output formats of the worked example, with autoUpgrade (batches
// and drain blockers) and without (the manual procedure), and the audit without values.
func TestPlanGolden(t *testing.T) {
	for _, tc := range []struct {
		golden string
		args   []string
		code   int
	}{
		{"plan-canary.txt", planArgs("-f", exampleRollout), ExitInvalid},
		{"plan-canary.json", planArgs("-f", exampleRollout, "-o", "json"), ExitInvalid},
		{"plan-canary.md", planArgs("-f", exampleRollout, "-o", "markdown"), ExitInvalid},
		{"plan-canary.html", planArgs("-f", exampleRollout, "-o", "html"), ExitInvalid}, // the same exit code as the other formats
		{"plan-manual.txt", planArgs(), ExitInvalid},                                    // the notebook NPU pod blocks npu-rebel-02, drain or not
		{"plan-audit.txt", []string{"plan", "--nodes", exampleNodes, "--drivers", exampleDrivers}, ExitOK},
	} {
		t.Run(tc.golden, func(t *testing.T) {
			r := run(t, "", tc.args...)
			require.Equal(t, tc.code, r.code, r.stderr)
			assert.Empty(t, r.stderr)
			golden(t, tc.golden, r.stdout)
		})
	}
}

// TestPlanWorkedExample asserts what the golden files show, so that a regenerated golden cannot
// hide a wrong plan: every action, blocker kind and the batches of the canary rollout.
func TestPlanWorkedExample(t *testing.T) {
	p := planJSON(t, run(t, "", planArgs("-f", exampleRollout, "-o", "json")...))
	drivers := map[string]string{}
	for _, d := range p.Drivers {
		drivers[d.Name] = d.Action + " " + d.OldVersion + "->" + d.NewVersion
	}
	assert.Equal(t, map[string]string{
		"rbln-driver":             "unchanged 3.2.2->3.2.2",
		"rbln-driver-atom-canary": "create ->3.3.0-rc1",
		"rbln-driver-rebel":       "update 3.2.2->3.2.3",
	}, drivers)
	nodes := map[string]plan.NodePlan{}
	for _, n := range p.Nodes {
		nodes[n.Name] = n
	}
	assert.Equal(t, plan.NodeChangeOwner, nodes["npu-atom-canary-01"].Action)
	assert.Equal(t, "rbln-driver", nodes["npu-atom-canary-01"].OldOwner)
	assert.Equal(t, "rbln-driver-atom-canary", nodes["npu-atom-canary-01"].NewOwner)
	assert.Equal(t, plan.NodeUpgrade, nodes["npu-rebel-01"].Action)
	assert.Equal(t, plan.NodeBlocked, nodes["npu-atom-canary-02"].Action, "two of inference's pods, and its budget allows one disruption")
	assert.Equal(t, plan.NodeBlocked, nodes["npu-rebel-02"].Action, "a hand-started NPU pod")
	assert.Equal(t, plan.NodeNone, nodes["npu-atom-01"].Action)
	assert.Equal(t, "DriverFamilyLabelMissing", nodes["npu-nofamily-01"].Reason)

	kinds := func(n string) []string {
		var out []string
		for _, b := range nodes[n].Blockers {
			out = append(out, b.Kind+" "+b.Pod)
		}
		return out
	}
	assert.Equal(t, []string{"PodDisruptionBudget serving/inference-6b8f9-p9m4t"}, kinds("npu-atom-canary-02"),
		"the first of the two pods is evicted within the budget, the second is refused")
	assert.Equal(t, []string{"NPUPod research/notebook", "NoController research/notebook"}, kinds("npu-rebel-02"))
	assert.Equal(t, []string{"SingleReplica batch/cache-5c7d4-x2l9f"}, kinds("npu-rebel-01"), "a warning; its emptyDir is allowed by deleteEmptyDirData")
	assert.Empty(t, kinds("npu-atom-canary-01"), "one inference pod: the budget allows it")

	assert.Equal(t, [][]string{{"npu-atom-canary-01", "npu-rebel-01"}, {"npu-rebel-03"}}, p.Batches, "batches of 2 in (owner, pool, node) order, blocked nodes left out")
	assert.False(t, p.Proceed)
	assert.Equal(t, []string{"2 node(s) blocked by a drain blocker"}, p.Reasons)
	assert.Equal(t, plan.Summary{Upgrade: 2, ChangeOwner: 1, Blocked: 2, Batches: 2}, p.Summary)
}

// TestPlanBatchSizes: maxParallelUpgrades 0 is one batch of every node, 1 is node by node, N
// chunks; the order is (new owner, pool, node): the REBEL pool rhel9.2 sorts before ubuntu22.04.
func TestPlanBatchSizes(t *testing.T) {
	for _, tc := range []struct {
		max  string
		want [][]string
	}{
		{"0", [][]string{{"npu-atom-canary-01", "npu-atom-canary-02", "npu-rebel-02", "npu-rebel-01", "npu-rebel-03"}}},
		{"1", [][]string{{"npu-atom-canary-01"}, {"npu-atom-canary-02"}, {"npu-rebel-02"}, {"npu-rebel-01"}, {"npu-rebel-03"}}},
		{"3", [][]string{{"npu-atom-canary-01", "npu-atom-canary-02", "npu-rebel-02"}, {"npu-rebel-01", "npu-rebel-03"}}},
	} {
		t.Run("maxParallelUpgrades="+tc.max, func(t *testing.T) {
			// Without --pods there are no drain blockers: every restarting node is batched.
			r := run(t, "", "plan", "-f", exampleValues, "--nodes", exampleNodes, "--drivers", exampleDrivers,
				"--set", "driver.upgradePolicy.autoUpgrade=true", "--set", "driver.upgradePolicy.maxParallelUpgrades="+tc.max, "-o", "json")
			require.Equal(t, ExitOK, r.code, r.stderr)
			p := planJSON(t, r)
			assert.Equal(t, tc.want, p.Batches)
			assert.Empty(t, p.Manual)
			assert.Equal(t, len(tc.want), p.Summary.Batches)
		})
	}
}

// TestPlanManual: with autoUpgrade false each node's procedure names the exact driver pod to
// delete when the pods are known, and the DaemonSet (and how to find the pod) when not.
func TestPlanManual(t *testing.T) {
	p := planJSON(t, run(t, "", planArgs("--set", "driver.upgradePolicy.drain.enable=true", "--set", "driver.upgradePolicy.drain.force=true", "--set", "driver.upgradePolicy.drain.deleteEmptyDirData=true",
		"--set", "driver.upgradePolicy.npuPodDeletion.force=true", "--set", "driver.upgradePolicy.drain.timeoutSeconds=120", "-o", "json")...))
	require.Empty(t, p.Batches)
	steps := map[string][]string{}
	for _, m := range p.Manual {
		steps[m.Node] = m.Steps
	}
	require.Contains(t, steps, "npu-rebel-01")
	assert.Equal(t, []string{
		"kubectl cordon npu-rebel-01",
		"kubectl drain npu-rebel-01 --ignore-daemonsets --delete-emptydir-data --force --timeout=120s",
		"kubectl delete pod -n rbln-system rbln-driver-rebel-rebel-ubuntu22.04-6.8.0-90-generic-b8d2w  # the rbln-driver-rebel driver pod; its DaemonSet starts the new pod (tag 3.2.3-6.8.0-90-generic-ubuntu22.04)",
		"kubectl uncordon npu-rebel-01",
	}, steps["npu-rebel-01"])
	assert.NotContains(t, steps, "npu-atom-canary-02", "blocked by the budget: not part of the procedure")
	assert.Contains(t, steps, "npu-rebel-02", "drain.force and npuPodDeletion.force lift the notebook's blockers")

	noPods := planJSON(t, run(t, "", "plan", "-f", exampleValues, "--nodes", exampleNodes, "--drivers", exampleDrivers, "-o", "json"))
	for _, m := range noPods.Manual {
		if m.Node == "npu-rebel-01" {
			assert.Contains(t, m.Steps[1], "grep rbln-driver-rebel-rebel-ubuntu22.04-6.8.0-90-generic")
			assert.Contains(t, m.Steps[1], "--field-selector spec.nodeName=npu-rebel-01")
		}
	}
	assert.Len(t, noPods.Manual, 5)
}

// TestPlanAudit: without values the plan changes nothing and reports the drift.
func TestPlanAudit(t *testing.T) {
	r := run(t, "", "plan", "--nodes", exampleNodes, "--drivers", exampleDrivers, "-o", "json")
	require.Equal(t, ExitOK, r.code, r.stderr)
	p := planJSON(t, r)
	for _, d := range p.Drivers {
		assert.Equal(t, plan.DriverUnchanged, d.Action, d.Name)
	}
	for _, n := range p.Nodes {
		assert.Equal(t, plan.NodeNone, n.Action, n.Name)
	}
	drift := map[string]bool{}
	for _, d := range p.Drift {
		drift[d.Node+" "+d.Kind] = true
	}
	assert.True(t, drift["npu-nofamily-01 DriverFamilyLabelMissing"])
	assert.True(t, drift["npu-rebel-01 StaleOwnerLabel"], "labelled rbln-driver, routed to rbln-driver-rebel")
	assert.Empty(t, p.Batches)

	// No drivers at all: every candidate node is unowned, and the three owner labels are
	// stale — the input that says so is named.
	empty := filepath.Join(t.TempDir(), "drivers.yaml")
	require.NoError(t, os.WriteFile(empty, nil, 0o600))
	p = planJSON(t, run(t, "", "plan", "--nodes", exampleNodes, "--drivers", empty, "-o", "json"))
	unowned := 0
	for _, d := range p.Drift {
		if d.Kind == plan.DriftUnowned {
			unowned++
		}
	}
	assert.Equal(t, 10, unowned)
	require.Len(t, p.InputWarnings, 1)
	assert.Contains(t, p.InputWarnings[0], "--drivers "+empty+" holds no RBLNDrivers, but 3 nodes carry a rebellions.ai/npu.driver.owner label")

	// Drivers not given while the nodes carry owner labels: whether an image changes cannot
	// be told; the plan refuses, naming the flag.
	r = run(t, "", "plan", "--nodes", exampleNodes)
	assert.Equal(t, ExitUsage, r.code)
	assert.Contains(t, r.stderr, "3 of the nodes of --nodes "+exampleNodes+" carry a rebellions.ai/npu.driver.owner label")
	assert.Contains(t, r.stderr, "Give --drivers")
	assert.Empty(t, r.stdout)
}

// TestPlanCheckImages runs --check-images against an in-process registry that holds the new
// images of some pools only: exactly the others are missing, and the plan cannot proceed.
func TestPlanCheckImages(t *testing.T) {
	srv := httptest.NewServer(ggcrregistry.New(ggcrregistry.Logger(log.New(io.Discard, "", 0))))
	t.Cleanup(srv.Close)
	host := strings.TrimPrefix(srv.URL, "http://")
	values := filepath.Join(t.TempDir(), "registry.yaml")
	require.NoError(t, os.WriteFile(values, []byte("driver:\n  image:\n    registry: "+host+"\n"), 0o600))
	args := []string{"plan", "-f", exampleValues, "-f", values, "--nodes", exampleNodes, "--drivers", exampleDrivers, "--check-images", "-o", "json"}

	p := planJSON(t, run(t, "", args...))
	var all []string
	for _, n := range p.Nodes {
		if n.NewImage != "" && !slices.Contains(all, n.NewImage) {
			all = append(all, n.NewImage)
		}
	}
	require.Len(t, all, 8, "the pools after the change (npu-nofamily-01 joins none)")
	require.Len(t, p.MissingImages, len(all), "an empty registry lacks every image")

	present := map[string]bool{}
	for _, img := range all {
		if strings.Contains(img, ":3.2.3-") || strings.Contains(img, "6.8.0-94") { // the REBEL upgrade and one default pool
			present[img] = true
			push(t, img)
		}
	}
	require.Len(t, present, 4)
	r := run(t, "", args...)
	require.Equal(t, ExitInvalid, r.code, r.stderr)
	p = planJSON(t, r)
	var missing []string
	for _, m := range p.MissingImages {
		assert.False(t, present[m.Image], "%s is in the registry", m.Image)
		assert.NotEmpty(t, m.Pool)
		missing = append(missing, m.Image)
	}
	assert.Len(t, missing, len(all)-len(present))
	assert.Contains(t, p.Reasons, "4 image(s) missing from their registry")

	for _, img := range all {
		if !present[img] {
			push(t, img)
		}
	}
	r = run(t, "", args...)
	require.Equal(t, ExitOK, r.code, r.stdout+r.stderr)
	assert.Empty(t, planJSON(t, r).MissingImages)
}

// push writes a small random image to ref (an in-process registry on loopback).
func push(t *testing.T, ref string) {
	t.Helper()
	img, err := random.Image(64, 1)
	require.NoError(t, err)
	tag, err := name.NewTag(ref, name.Insecure)
	require.NoError(t, err)
	require.NoError(t, remote.Write(tag, img, remote.WithContext(t.Context())))
}

// TestPlanUsage: what makes plan exit 2, naming the problem.
func TestPlanUsage(t *testing.T) {
	dir := t.TempDir()
	svc := filepath.Join(dir, "svc.yaml")
	require.NoError(t, os.WriteFile(svc, []byte("apiVersion: v1\nkind: Service\nmetadata: {name: a, namespace: x}\n"), 0o600))
	podAndSvc := filepath.Join(dir, "pod-and-svc.yaml")
	require.NoError(t, os.WriteFile(podAndSvc, []byte("apiVersion: v1\nkind: Pod\nmetadata: {name: p, namespace: x}\n---\napiVersion: v1\nkind: Service\nmetadata: {name: a, namespace: x}\n"), 0o600))
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"live and files", []string{"plan", "--live", "--nodes", exampleNodes}, "use one or the other"},
		{"no workload in --pods", []string{"plan", "--nodes", exampleNodes, "--pods", svc}, "--pods " + svc + " holds 1 Service and no Pod, PodDisruptionBudget, ReplicaSet, Deployment or StatefulSet"},
		{"unknown kind in --pods", []string{"plan", "--nodes", exampleNodes, "--pods", podAndSvc}, "a Service is not one of Pod, PodDisruptionBudget"},
		{"bad output", []string{"plan", "--nodes", exampleNodes, "-o", "yaml"}, "yaml"},
		{"two inputs on stdin", []string{"plan", "--nodes", "-", "--pods", "-"}, "only one input can"},
		{"no cluster", []string{"plan", "--kubeconfig", filepath.Join(dir, "missing")}, "no cluster to read"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := run(t, "", tc.args...)
			assert.Equal(t, ExitUsage, r.code)
			assert.Contains(t, r.stderr, tc.want)
			assert.Empty(t, r.stdout, "no partial output")
		})
	}
}
