package app

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/extension"
	"github.com/yuin/goldmark/text"
	"k8s.io/apimachinery/pkg/api/equality"
	"sigs.k8s.io/yaml"

	"github.com/driverguard/driverguard/action"
	"github.com/driverguard/driverguard/api/v1alpha1"
	"github.com/driverguard/driverguard/operator"
	"github.com/driverguard/driverguard/output"
	"github.com/driverguard/driverguard/plan"
)

// hostileNames are node, namespace and pod names a file can hold and no API server would: each
// tries to break out of a fence, inject HTML, links or emphasis into the ticket, or run a
// command from the procedure.
var hostileNames = []string{
	"tick`tock``",
	"n1; touch INJECTED",
	"x\n```\n<script>alert(1)</script>\n# Heading",
	"[click](http://evil.example)",
	"a|b*c*_d_~~e~~ www.evil.example $x$ <b>&amp;",
	"$(touch INJECTED)",
}

// hostileCluster writes nodes named hostileNames (one pool of the default driver), their driver
// pods in namespaces and under names as hostile, and the current driver at 3.2.2.
func hostileCluster(t *testing.T) (nodes, pods, drivers string) {
	t.Helper()
	dir := t.TempDir()
	type obj = map[string]any
	var nodeList, podList []obj
	for i, name := range hostileNames {
		nodeList = append(nodeList, obj{"apiVersion": "v1", "kind": "Node", "metadata": obj{"name": name, "labels": obj{
			operator.LabelDeployDriver: "true", operator.LabelFamily: "atom", operator.LabelOSID: "ubuntu", operator.LabelOSVersion: "22.04",
			operator.LabelKernel: "6.8.0-90-generic", operator.LabelOwner: v1alpha1.DefaultDriverName}}})
		podList = append(podList, obj{"apiVersion": "v1", "kind": "Pod", "metadata": obj{"name": fmt.Sprintf("%s-pod-%d", name, i), "namespace": "ns " + name,
			"ownerReferences": []obj{{"apiVersion": "apps/v1", "kind": "DaemonSet", "name": "rbln-driver-atom-ubuntu22.04-6.8.0-90-generic", "uid": "u", "controller": true}}},
			"spec": obj{"nodeName": name, "containers": []obj{{"name": "driver", "image": "x"}}}, "status": obj{"phase": "Running"}})
	}
	write := func(name string, v any) string {
		data, err := json.Marshal(v)
		require.NoError(t, err)
		p := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(p, data, 0o600))
		return p
	}
	nodes = write("nodes.json", obj{"apiVersion": "v1", "kind": "List", "items": nodeList})
	pods = write("pods.json", obj{"apiVersion": "v1", "kind": "List", "items": podList})
	r := run(t, "", "render", "--set", "driver.image.tag=3.2.2")
	require.Equal(t, ExitOK, r.code, r.stderr)
	drivers = filepath.Join(dir, "drivers.yaml")
	require.NoError(t, os.WriteFile(drivers, []byte(r.stdout), 0o600))
	return nodes, pods, drivers
}

// TestPlanMarkdownIsSafe renders the change ticket of a cluster whose names are hostile with a
// CommonMark + GFM parser (goldmark, as code hosts render tickets): the ticket keeps its shape —
// exactly one fenced sh block per node holding exactly its procedure, no HTML, no link, no
// heading or emphasis from a name — and every command of the procedure, run by a shell, gets
// each name as one word and runs nothing else.
func TestPlanMarkdownIsSafe(t *testing.T) {
	nodes, pods, drivers := hostileCluster(t)
	args := []string{"plan", "--set", "driver.image.tag=3.2.3", "--nodes", nodes, "--pods", pods, "--drivers", drivers}
	r := run(t, "", append(args, "-o", "json")...)
	require.Equal(t, ExitOK, r.code, r.stderr)
	var p plan.Plan
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &p))
	require.Len(t, p.Manual, len(hostileNames), "every node upgrades by hand")

	r = run(t, "", append(args, "-o", "markdown")...)
	require.Equal(t, ExitOK, r.code, r.stderr)
	source := []byte(r.stdout)
	md := goldmark.New(goldmark.WithExtensions(extension.GFM))
	doc := md.Parser().Parse(text.NewReader(source))

	var html bytes.Buffer
	require.NoError(t, md.Renderer().Render(&html, source, doc))
	for _, bad := range []string{"<script", "<b>", "<a ", "<del>", "<em>", "<h1>Heading", "<h2>Heading"} {
		assert.NotContains(t, html.String(), bad, "a name made HTML, a link, emphasis or a heading")
	}
	assert.Contains(t, html.String(), "&lt;b&gt;&amp;amp;", "an entity in a name is shown, not decoded")

	var blocks []*ast.FencedCodeBlock
	headings := 0
	require.NoError(t, ast.Walk(doc, func(n ast.Node, entering bool) (ast.WalkStatus, error) {
		if !entering {
			return ast.WalkContinue, nil
		}
		switch n := n.(type) {
		case *ast.FencedCodeBlock:
			blocks = append(blocks, n)
		case *ast.Heading:
			headings++
		}
		return ast.WalkContinue, nil
	}))
	assert.Equal(t, 7, headings, "the title and the six sections: Inputs, Scope, Rollout, Blockers, Images, Rollback")
	var sh []*ast.FencedCodeBlock
	for _, b := range blocks {
		if string(b.Language(source)) == "sh" {
			sh = append(sh, b)
		}
	}
	require.Len(t, sh, len(p.Manual), "one sh block per node, none broken out of")
	for i, b := range sh {
		var lines []string
		for j := range b.Lines().Len() {
			seg := b.Lines().At(j)
			lines = append(lines, strings.TrimSuffix(string(seg.Value(source)), "\n"))
		}
		assert.Equal(t, p.Manual[i].Steps, lines, "block %d is exactly the procedure of %q", i, p.Manual[i].Node)

		// As a shell runs them: kubectl prints its arguments, one per line; nothing else may run.
		dir := t.TempDir()
		script := "kubectl() { printf '<%s>\\n' \"$@\"; }\n" + strings.Join(lines, "\n") + "\n"
		cmd := exec.Command("/bin/sh", "-c", script)
		cmd.Dir, cmd.Env = dir, []string{"PATH=/nonexistent"}
		var out, errOut bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errOut
		require.NoError(t, cmd.Run(), "%s\n%s", script, errOut.String())
		assert.Empty(t, errOut.String(), "no other command ran")
		entries, err := os.ReadDir(dir)
		require.NoError(t, err)
		assert.Empty(t, entries, "nothing was created")
		node := p.Manual[i].Node
		assert.Contains(t, out.String(), "<cordon>\n<"+output.Escape(node)+">\n", "the node name is one word")
		assert.Contains(t, out.String(), "<uncordon>\n<"+output.Escape(node)+">\n")
	}
}

// TestPlanRollbackGivesTheCurrentDriversBack: the rollback of the worked example, applied as the
// ticket says — its instances deleted from the new values, then rollback.yaml after them —
// renders examples/drivers.yaml's RBLNDrivers again, spec for spec.
func TestPlanRollbackGivesTheCurrentDriversBack(t *testing.T) {
	p := planJSON(t, run(t, "", planArgs("-o", "json")...))
	require.NotNil(t, p.Rollback)
	require.True(t, p.Rollback.Verified, "%v", p.Rollback.Problems)
	assert.Equal(t, []string{"driver.instances.atom-canary"}, p.Rollback.DeleteFromValues)

	dir := t.TempDir()
	data, err := os.ReadFile(exampleValues)
	require.NoError(t, err)
	var vals map[string]any
	require.NoError(t, yaml.Unmarshal(data, &vals))
	for _, path := range p.Rollback.DeleteFromValues {
		key := strings.TrimPrefix(path, "driver.instances.")
		delete(vals["driver"].(map[string]any)["instances"].(map[string]any), key)
	}
	edited, err := yaml.Marshal(vals)
	require.NoError(t, err)
	newValues, rollback := filepath.Join(dir, "new.yaml"), filepath.Join(dir, "rollback.yaml")
	require.NoError(t, os.WriteFile(newValues, edited, 0o600))
	require.NoError(t, os.WriteFile(rollback, []byte(p.Rollback.YAML), 0o600))

	r := run(t, "", "render", "-f", newValues, "-f", rollback)
	require.Equal(t, ExitOK, r.code, r.stderr)
	got := driverSpecs(t, r.stdout)
	current, err := os.ReadFile(exampleDrivers)
	require.NoError(t, err)
	want := driverSpecs(t, string(current))
	require.Len(t, got, len(want))
	for name, spec := range want {
		assert.True(t, equality.Semantic.DeepEqual(spec, got[name]), "%s:\n got %+v\nwant %+v", name, got[name], spec)
	}
}

// driverSpecs are the RBLNDriver specs of a YAML stream, by name.
func driverSpecs(t *testing.T, stream string) map[string]v1alpha1.RBLNDriverSpec {
	t.Helper()
	out := map[string]v1alpha1.RBLNDriverSpec{}
	for _, doc := range strings.Split(stream, "\n---") {
		var d v1alpha1.RBLNDriver
		require.NoError(t, yaml.Unmarshal([]byte(doc), &d))
		if d.Kind == "RBLNDriver" {
			out[d.Name] = d.Spec
		}
	}
	return out
}

// TestPlanInputs: the plan records what it was made from — the values files and value flags
// as given, the release, what each part of the cluster was read from with its count, the
// driverguard and the time of the injected clock — in JSON and in the ticket.
func TestPlanInputs(t *testing.T) {
	args := []string{"plan", "-f", exampleValues, "--set", "driver.instances.rebel.image.tag=3.2.4", "--set-string", "driver.image.tag=3.2.2",
		"--nodes", exampleNodes, "--drivers", exampleDrivers}
	p := planJSON(t, run(t, "", append(args, "-o", "json")...))
	assert.Equal(t, plan.InputRecord{
		ValuesFiles: []string{exampleValues},
		Set:         []string{"--set driver.instances.rebel.image.tag=3.2.4", "--set-string driver.image.tag=3.2.2"},
		ReleaseName: "driverguard",
		Cluster: action.Inputs{
			Nodes:   action.Source{Given: true, From: "--nodes " + exampleNodes, Count: 12},
			Drivers: action.Source{Given: true, From: "--drivers " + exampleDrivers, Count: 2},
		},
		PolicyDirs:  []string{},
		Disable:     []string{},
		Enforcement: map[string]string{},
		Version:     testVersion,
		Time:        "2026-01-02T03:04:05Z",
	}, p.Inputs)

	r := run(t, "", append(args, "-o", "markdown")...)
	for _, want := range []string{
		"| values | `-f " + exampleValues + "` |",
		"| set | `--set driver.instances.rebel.image.tag=3.2.4`, `--set-string driver.image.tag=3.2.2` |",
		"| nodes | 12 nodes read from --nodes " + exampleNodes + " |",
		"| RBLNDrivers | 2 RBLNDrivers read from --drivers " + exampleDrivers + " |",
		"| RBLNClusterPolicy | not given |",
		"| pods | not given |",
		"| driverguard | " + output.MarkdownText(testVersion) + " |",
		"| made | 2026-01-02T03:04:05Z |",
		"\n## Images\n\nImages not checked (run with --check-images).\n",
	} {
		assert.Contains(t, r.stdout, want)
	}
	assert.NotContains(t, r.stdout, "No missing image")
}
