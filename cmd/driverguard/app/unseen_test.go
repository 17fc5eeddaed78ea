package app

import (
	"encoding/json"
	"encoding/xml"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"

	"github.com/driverguard/driverguard/action"
	"github.com/driverguard/driverguard/plan"
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

// TestPlanSaysDrainBlockersWereNotChecked (#30): without --pods nothing can be said about
// the pods a drain would stall on. The plan says so in every format — the table, the ticket
// ("None found" would be a confident wrong answer) and blockerCheck in JSON — and still
// proceeds (as images do without --check-images): a warning, never "no blockers". An empty
// --pods file is an input warning, as an empty --nodes is.
func TestPlanSaysDrainBlockersWereNotChecked(t *testing.T) {
	args := []string{"plan", "-f", exampleValues, "-f", exampleRollout, "--nodes", exampleNodes, "--drivers", exampleDrivers}

	r := run(t, "", append(args, "-o", "json")...)
	assert.Equal(t, ExitOK, r.code, r.stderr)
	p := planJSON(t, r)
	assert.Equal(t, plan.BlockerCheck{Checked: false, Nodes: 5, Drain: true, NPUPods: true}, p.BlockerCheck)
	assert.True(t, p.Proceed)
	assert.Contains(t, r.stdout, `"blockerCheck": {`)

	r = run(t, "", args...)
	assert.Equal(t, ExitOK, r.code, r.stderr)
	assert.Contains(t, r.stdout, "\nWarning: drain blockers not checked: the pods were not given (--pods, or --live): "+
		"the 5 nodes that restart their driver may stall on a PodDisruptionBudget, a pod without a controller, an emptyDir pod or an NPU pod\n")
	assert.Contains(t, r.stdout, "\nThe plan can proceed as far as it could see (drain blockers not checked).\n")

	r = run(t, "", append(args, "-o", "markdown")...)
	assert.Equal(t, ExitOK, r.code, r.stderr)
	assert.NotContains(t, r.stdout, "None found")
	assert.Contains(t, r.stdout, "**Can proceed as far as it could see** (drain blockers not checked).")
	assert.Contains(t, r.stdout, "## Blockers\n\n**Not checked:** the pods were not given")

	// With the pods: checked, and the verdict is plain.
	r = run(t, "", append(args, "--pods", exampleWorkloads, "-o", "json")...)
	p = planJSON(t, r)
	assert.Equal(t, plan.BlockerCheck{Checked: true, Nodes: 5, Drain: true, NPUPods: true}, p.BlockerCheck)
	r = run(t, "", append(args[:len(args):len(args)], "--set", "driver.upgradePolicy.drain.enable=false", "--set", "driver.upgradePolicy.npuPodDeletion.force=true")...)
	assert.Equal(t, ExitOK, r.code, r.stderr)
	assert.NotContains(t, r.stdout, "not checked: the pods", "without a drain nor NPU pods kept, nothing can block")
	assert.Contains(t, r.stdout, "\nThe plan can proceed.\n")

	// Without drain, NPU pods the operator keeps can still block.
	r = run(t, "", "plan", "-f", exampleValues, "--nodes", exampleNodes, "--drivers", exampleDrivers)
	assert.Contains(t, r.stdout, "\nWarning: drain blockers not checked: the pods were not given (--pods, or --live): the 5 nodes that restart their driver may stall on an NPU pod\n")

	// An empty --pods file reads as a failed kubectl.
	empty := writeTemp(t, "pods.yaml", "")
	r = run(t, "", append(args, "--pods", empty, "-o", "json")...)
	p = planJSON(t, r)
	assert.Contains(t, p.InputWarnings, "--pods "+empty+" holds no pods: drain blockers were judged against a cluster without pods; "+
		"if the command that wrote it failed (kubectl get pods,pdb,rs,deploy,sts -A -o json), fix it and run again")
}

// TestPlanRecordsTheFlagsOfItsVerdict (#30): the flags that change a plan's verdict — the
// policies (--policy, --disable, --enforcement, --policy-fail-open) and --allow-driver-loss —
// are part of what it was made from: recorded under "inputs" and in the ticket's Inputs, and
// the table says the losses it proceeds over were acknowledged.
func TestPlanRecordsTheFlagsOfItsVerdict(t *testing.T) {
	policies := "../../../docs/examples/policy"
	args := []string{"plan", "-f", exampleValues, "--set", "driver.deployDefault=false", "--nodes", exampleNodes, "--drivers", exampleDrivers,
		"--policy", policies, "--disable", "lib.max_parallel_upgrades", "--enforcement", "lib.pinned_version=audit", "--policy-fail-open", "--allow-driver-loss"}

	r := run(t, "", append(args, "-o", "json")...)
	assert.Equal(t, ExitOK, r.code, r.stderr)
	p := planJSON(t, r)
	assert.Positive(t, p.Summary.LoseDriver)
	assert.Equal(t, []string{policies}, p.Inputs.PolicyDirs)
	assert.Equal(t, []string{"lib.max_parallel_upgrades"}, p.Inputs.Disable)
	assert.Equal(t, map[string]string{"lib.pinned_version": "audit"}, p.Inputs.Enforcement)
	assert.True(t, p.Inputs.PolicyFailOpen)
	assert.True(t, p.Inputs.AllowDriverLoss)

	r = run(t, "", append(args, "-o", "markdown")...)
	assert.Equal(t, ExitOK, r.code, r.stderr)
	assert.Contains(t, r.stdout, "| policies | the bundled library, `--policy "+policies+"`; `--disable lib.max_parallel_upgrades`; `--enforcement lib.pinned_version=audit`; `--policy-fail-open` |")
	assert.Contains(t, r.stdout, "| driver loss | acknowledged (`--allow-driver-loss`): a node that loses its driver does not stop the plan |")

	r = run(t, "", args...)
	assert.Equal(t, ExitOK, r.code, r.stderr)
	assert.Regexp(t, `\n\d+ node\(s\) lose their driver: acknowledged \(--allow-driver-loss\)\.\nThe plan can proceed`, r.stdout)

	// Without the flags, the record says so: the bundled library, and losses stop the plan.
	r = run(t, "", "plan", "-f", exampleValues, "--nodes", exampleNodes, "--drivers", exampleDrivers, "-o", "json")
	p = planJSON(t, r)
	assert.Equal(t, []string{}, p.Inputs.PolicyDirs)
	assert.Equal(t, map[string]string{}, p.Inputs.Enforcement)
	assert.False(t, p.Inputs.AllowDriverLoss)
	assert.Contains(t, r.stdout, `"allowDriverLoss": false`)
	r = run(t, "", "plan", "-f", exampleValues, "--nodes", exampleNodes, "--drivers", exampleDrivers, "-o", "markdown")
	assert.Contains(t, r.stdout, "| policies | the bundled library |")
	assert.Contains(t, r.stdout, "| driver loss | not acknowledged: a node that would lose its driver stops the plan |")
}

// TestPlanSaysWhatItWasJudgedAgainst (#30): every verdict says what it was judged against;
// plan's table, as check's, ends with JUDGED AGAINST: each part of the cluster read, or not
// given (the pods included: without them the drain blockers are not known).
func TestPlanSaysWhatItWasJudgedAgainst(t *testing.T) {
	r := run(t, "", "plan", "-f", exampleValues, "--nodes", exampleNodes, "--drivers", exampleDrivers, "--pods", exampleWorkloads)
	assert.Contains(t, r.stdout, "\nJUDGED AGAINST\n  12 nodes read from --nodes "+exampleNodes+"\n  2 RBLNDrivers read from --drivers "+exampleDrivers+
		"\n  RBLNClusterPolicy: not given\n  10 pods read from --pods "+exampleWorkloads+"\n\nSummary: ")

	r = run(t, "", "plan", "-f", exampleValues, "--nodes", exampleNodes, "--drivers", exampleDrivers)
	assert.Contains(t, r.stdout, "\nJUDGED AGAINST\n  12 nodes read from --nodes "+exampleNodes+"\n  2 RBLNDrivers read from --drivers "+exampleDrivers+
		"\n  RBLNClusterPolicy: not given\n  pods: not given (drain blockers not checked)\n")

	// Nodes that no driver labelled yet, without the drivers: the labels are the basis.
	fresh := writeTemp(t, "nodes.yaml", "apiVersion: v1\nkind: Node\nmetadata:\n  name: n1\n  labels: {rebellions.ai/npu.deploy.driver: \"true\", rebellions.ai/npu.family: atom}\n")
	r = run(t, "", "plan", "-f", exampleValues, "--nodes", fresh)
	assert.Contains(t, r.stdout, "\nJUDGED AGAINST\n  1 node read from --nodes "+fresh+
		"\n  RBLNDrivers: not given (a node's driver now is the one its rebellions.ai/npu.driver.owner label names; give --drivers or --live to tell a stale label from a driver)\n")
}

// refusingCluster starts an API server that answers every request with code (401 or 403) as
// kube-apiserver does — a Status — and returns a kubeconfig for it.
func refusingCluster(t *testing.T, code int) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(code)
		fmt.Fprintf(w, `{"kind":"Status","apiVersion":"v1","status":"Failure","message":"%s","reason":"%s","code":%d}`,
			map[int]string{http.StatusUnauthorized: "Unauthorized", http.StatusForbidden: `nodes is forbidden: User \"ci\" cannot list resource \"nodes\"`}[code],
			map[int]string{http.StatusUnauthorized: "Unauthorized", http.StatusForbidden: "Forbidden"}[code], code)
	}))
	t.Cleanup(srv.Close)
	return writeTemp(t, "kubeconfig", `apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "`+srv.URL+`"}}]
users: [{name: u, user: {token: x}}]
contexts: [{name: ci, context: {cluster: c, user: u}}]
current-context: ci
`)
}

// TestLiveAutoDoesNotHideARefusal (#30): a cluster that answers 401 or 403 is there, and
// refuses: post-render --live auto must not judge the objects alone as if it did not answer
// (and pass, even with --fail-on-warn). It is an error naming the status, the credentials or
// RBAC, and --live false to judge offline; check --kubeconfig names the status too.
func TestLiveAutoDoesNotHideARefusal(t *testing.T) {
	noCluster(t)
	rendered := helmRendered(t, exampleValues)
	for code, want := range map[int]string{
		http.StatusForbidden:    "403 Forbidden",
		http.StatusUnauthorized: "401 Unauthorized",
	} {
		t.Run(want, func(t *testing.T) {
			kubeconfig := refusingCluster(t, code)
			for _, args := range [][]string{
				{"post-render", "--kubeconfig", kubeconfig},
				{"post-render", "--kubeconfig", kubeconfig, "--fail-on-warn"},
			} {
				r := run(t, rendered, args...)
				assert.Equal(t, ExitUsage, r.code, r.stderr)
				assert.Empty(t, r.stdout, "nothing reaches Helm")
				assert.Contains(t, r.stderr, `the cluster of context "ci" (`)
				assert.Contains(t, r.stderr, "answered "+want)
				assert.Contains(t, r.stderr, "--live false")
				assert.NotContains(t, r.stderr, "did not answer")
				assert.NotContains(t, r.stderr, "the rendered objects alone (")
			}
			r := run(t, "", "check", "-f", exampleValues, "--kubeconfig", kubeconfig)
			assert.Equal(t, ExitUsage, r.code)
			assert.Contains(t, r.stderr, want)
		})
	}
	r := run(t, rendered, "post-render", "--kubeconfig", refusingCluster(t, http.StatusForbidden))
	assert.Contains(t, r.stderr, "RBAC", "a 403 names the permission")
	r = run(t, rendered, "post-render", "--kubeconfig", refusingCluster(t, http.StatusUnauthorized))
	assert.Contains(t, r.stderr, "credentials", "a 401 names the credentials")
}

// TestPostRenderSaysWhenNothingWasJudged (#30): manifests without an RBLNDriver or the
// RBLNClusterPolicy pass through unchanged, and post-render says it judged nothing — an exit
// 0 in silence would read as a pass.
func TestPostRenderSaysWhenNothingWasJudged(t *testing.T) {
	noCluster(t)
	configMap := "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\ndata: {a: \"1\"}\n"
	for name, in := range map[string]string{"nothing": "", "a ConfigMap": configMap} {
		for _, live := range []string{"false", "auto"} {
			t.Run(name+", --live "+live, func(t *testing.T) {
				r := run(t, in, "post-render", "--live", live)
				assert.Equal(t, ExitOK, r.code, r.stderr)
				assert.Equal(t, in, r.stdout, "passed through")
				assert.Equal(t, "driverguard post-render: no RBLNDriver or RBLNClusterPolicy in the manifests: nothing was judged (they pass through unchanged)\n", r.stderr)
			})
		}
	}
}

// TestAuditCountsItsInputWarnings (#30): an input that looks like a failed read is a warning
// of the audit in every format and counted as one, as check counts it: a result of the
// driverguard-cluster report (what an openreports consumer reads from -o yaml), also said on
// standard error there.
func TestAuditCountsItsInputWarnings(t *testing.T) {
	empty := writeTemp(t, "nodes.yaml", "")
	want := "--nodes " + empty + " holds no nodes"
	args := []string{"audit", "--drivers", exampleDrivers, "--nodes", empty}

	r := run(t, "", append(args, "-o", "yaml")...)
	assert.Equal(t, ExitOK, r.code, r.stderr)
	var reports []map[string]any
	for _, doc := range strings.Split(r.stdout, "\n---\n") {
		var rep map[string]any
		require.NoError(t, yaml.Unmarshal([]byte(strings.TrimPrefix(doc, "---\n")), &rep))
		reports = append(reports, rep)
	}
	cl := reports[len(reports)-1]
	assert.Equal(t, "driverguard-cluster", cl["metadata"].(map[string]any)["name"])
	assert.Equal(t, float64(1), cl["summary"].(map[string]any)["warn"])
	results := cl["results"].([]any)
	require.Len(t, results, 1)
	res := results[0].(map[string]any)
	assert.Equal(t, "warn", res["result"])
	assert.Equal(t, "InputWarning", res["rule"])
	assert.Contains(t, res["message"], want)
	assert.Contains(t, r.stderr, "Warning: "+want)

	r = run(t, "", append(args, "-o", "json")...)
	var out struct {
		Summary struct{ Warn int }
	}
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &out))
	assert.Equal(t, 1, out.Summary.Warn, "counted as check counts it")

	r = run(t, "", args...)
	assert.Contains(t, r.stdout, "3 reports: 0 fail (0 enforced), 1 warn, 18 pass; passed")
	assert.Equal(t, 1, strings.Count(r.stdout, want), "said once")

	r = run(t, "", append(args, "-o", "sarif")...)
	assert.Equal(t, 1, strings.Count(r.stdout, want), "one result")
}

// TestCheckCIFormatsListTheDrift (#30): check lists the drift the cluster has now in every
// format — JUnit and SARIF too, where CI reads it — never as a failure: SARIF notes located at
// the node, one JUnit case that passes with the drift as its output.
func TestCheckCIFormatsListTheDrift(t *testing.T) {
	args := []string{"check", "-f", exampleValues, "--nodes", exampleNodes, "--drivers", exampleDrivers}
	r := run(t, "", append(args, "-o", "json")...)
	require.Equal(t, ExitOK, r.code, r.stderr)
	var rep action.CheckReport
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &rep))
	require.NotEmpty(t, rep.Drift)

	r = run(t, "", append(args, "-o", "sarif")...)
	require.Equal(t, ExitOK, r.code, r.stderr)
	doc := validSARIF(t, sarifSchema(t), r.stdout)
	results := sarifResults(doc)
	for _, d := range rep.Drift {
		msg, ok := results[sarifAt{rule: d.Kind, level: "note", object: "Node/" + d.Node}]
		if assert.True(t, ok, "a note for %s %s", d.Node, d.Kind) {
			assert.Equal(t, "Node/"+d.Node+": drift now, not caused by these values: "+d.Detail, msg)
		}
	}

	r = run(t, "", append(args, "-o", "junit")...)
	require.Equal(t, ExitOK, r.code, r.stderr)
	var suites struct {
		Failures int `xml:"failures,attr"`
		Suites   []struct {
			Cases []struct {
				Name    string    `xml:"name,attr"`
				Failure *struct{} `xml:"failure"`
				Output  string    `xml:"system-out"`
			} `xml:"testcase"`
		} `xml:"testsuite"`
	}
	require.NoError(t, xml.Unmarshal([]byte(r.stdout), &suites))
	assert.Zero(t, suites.Failures)
	var drift string
	for _, c := range suites.Suites[0].Cases {
		if c.Name == "cluster drift now" {
			assert.Nil(t, c.Failure, "drift fails nothing")
			drift = c.Output
		}
	}
	for _, d := range rep.Drift {
		assert.Contains(t, drift, "AUDIT  Node/"+d.Node+": "+d.Kind+": drift now, not caused by these values: "+d.Detail)
	}
}

// TestPreviewHelpSaysWhatNodesAreComparedWith (#30): with --drivers (or --live) a node's driver
// now is the one the current RBLNDrivers route to it, not its owner label; the help says so.
func TestPreviewHelpSaysWhatNodesAreComparedWith(t *testing.T) {
	r := run(t, "", "preview", "--help")
	require.Equal(t, ExitOK, r.code)
	help := strings.Join(strings.Fields(r.stdout), " ")
	assert.NotContains(t, help, "compared with their current rebellions.ai/npu.driver.owner label")
	assert.Contains(t, help, "compared with their driver now: the one the current RBLNDrivers route to them (--drivers or --live), "+
		"else the one their rebellions.ai/npu.driver.owner label names")
}

// TestOwnerLabelsNoDriverCanCarry (#30): without the current RBLNDrivers, an owner label no
// RBLNDriver can be named (spaces, "!", uppercase) is drift in check and plan, never a node
// that loses its driver; nor does it make plan ask for --drivers.
func TestOwnerLabelsNoDriverCanCarry(t *testing.T) {
	var b strings.Builder
	b.WriteString("apiVersion: v1\nkind: List\nitems:\n")
	for i, owner := range []string{"rbln driver", "RBLN_DRIVER!!", "Rbln-Driver"} {
		fmt.Fprintf(&b, "- apiVersion: v1\n  kind: Node\n  metadata:\n    name: npu-ghost-%d\n    labels:\n"+
			"      rebellions.ai/npu.deploy.driver: \"true\"\n      rebellions.ai/npu.family: ghost\n      rebellions.ai/npu.driver.owner: %q\n", i, owner)
	}
	nodes := writeTemp(t, "nodes.yaml", b.String())
	r := run(t, "", "check", "-f", exampleValues, "--set", "driver.deployDefault=false", "--nodes", nodes)
	assert.Equal(t, ExitOK, r.code, r.stdout+r.stderr)
	assert.NotContains(t, r.stdout, "WOULD LOSE THEIR DRIVER")
	assert.Contains(t, r.stdout, `npu-ghost-1: StaleOwnerLabel: its rebellions.ai/npu.driver.owner label is "RBLN_DRIVER!!", which no RBLNDriver can be named`)

	r = run(t, "", "plan", "-f", exampleValues, "--set", "driver.deployDefault=false", "--nodes", nodes, "-o", "json")
	p := planJSON(t, r)
	assert.Zero(t, p.Summary.LoseDriver)
	assert.True(t, p.Proceed, p.Reasons)
	assert.Len(t, p.Drift, 3)
}
