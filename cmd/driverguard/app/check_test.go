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

	"github.com/driverguard/driverguard/finding"
	"github.com/driverguard/driverguard/release"
)

const examplePolicy = "../../../docs/examples/policy"

func TestCheckExampleGolden(t *testing.T) {
	r := run(t, "", "check", "-f", exampleValues, "--nodes", exampleNodes)
	require.Equal(t, ExitOK, r.code, r.stderr)
	golden(t, "check-multi-driver.txt", r.stdout)
}

func TestCheckDenyAndWarn(t *testing.T) {
	args := []string{"check", "-f", exampleValues, "--set", "driver.image.tag=latest", "--set", "driver.upgradePolicy.maxParallelUpgrades=0"}
	r := run(t, "", args...)
	assert.Equal(t, ExitInvalid, r.code, r.stderr)
	assert.Contains(t, r.stdout, "RBLNDriver/rbln-driver\n  FAIL  driverguard.lib.pinned_version: spec.version is \"latest\", a moving tag;")
	assert.Contains(t, r.stdout, "RBLNClusterPolicy/rbln-cluster-policy\n  WARN  driverguard.lib.max_parallel_upgrades:")
	assert.Contains(t, r.stdout, "RBLNDriver/rbln-driver-rebel\n  PASS\n")
	assert.Contains(t, r.stdout, "4 resources, 8 policies: 1 failure, 1 warning; FAILED\n")
	assert.Empty(t, r.stderr, "a failed check explains itself on stdout")

	t.Run("json", func(t *testing.T) {
		r := run(t, "", append(args, "-o", "json")...)
		assert.Equal(t, ExitInvalid, r.code)
		var rep release.Report
		require.NoError(t, json.Unmarshal([]byte(r.stdout), &rep))
		assert.False(t, rep.Passed)
		assert.Equal(t, 1, rep.Failures)
		assert.Equal(t, 1, rep.Warnings)
		require.Len(t, rep.Resources, 4)
		assert.Equal(t, "RBLNClusterPolicy", rep.Resources[0].Kind)
		assert.Equal(t, "rbln-driver", rep.Resources[1].Name)
		denials := levelFindings(rep.Findings, "deny")
		require.Len(t, denials, 1)
		assert.Equal(t, "driverguard.lib.pinned_version.deny", denials[0].Rule, "a Rego rule body: <package>.deny")
		assert.Equal(t, finding.Object{Kind: "RBLNDriver", Name: "rbln-driver"}, denials[0].Object)
		require.NotNil(t, denials[0].Location, "located at the values key")
		assert.True(t, rep.Resources[2].Allowed)
		assert.False(t, rep.Resources[1].Allowed)
		assert.Contains(t, r.stdout, `"findings": [`, "the findings list is always there")
	})
	t.Run("disable", func(t *testing.T) {
		r := run(t, "", append(args, "--disable", "lib.pinned_version")...)
		assert.Equal(t, ExitOK, r.code, "warnings alone pass")
		assert.Contains(t, r.stdout, "0 failures, 1 warning; passed")
	})
	t.Run("fail on warn", func(t *testing.T) {
		r := run(t, "", append(args, "--disable", "lib.pinned_version", "--fail-on-warn")...)
		assert.Equal(t, ExitInvalid, r.code)
		assert.Contains(t, r.stdout, "0 failures, 1 warning; FAILED (--fail-on-warn)")
	})
	// A rule on trial (docs/audit.md "Trial a rule: enforcement"): in audit enforcement its findings are listed, labelled, and
	// change neither the exit code nor the counts; in warn enforcement its denial warns.
	t.Run("audit enforcement", func(t *testing.T) {
		r := run(t, "", append(args, "--enforcement", "lib.pinned_version=audit")...)
		assert.Equal(t, ExitOK, r.code, r.stdout)
		assert.Contains(t, r.stdout, "RBLNDriver/rbln-driver\n  PASS\n  AUDIT  driverguard.lib.pinned_version: spec.version is \"latest\", a moving tag;")
		assert.Contains(t, r.stdout, "4 resources, 8 policies: 0 failures, 1 warning, 1 audit finding; passed\n")
		j := run(t, "", append(args, "--enforcement", "lib.pinned_version=audit", "-o", "json")...)
		var rep release.Report
		require.NoError(t, json.Unmarshal([]byte(j.stdout), &rep))
		assert.Equal(t, 1, rep.Audited)
		audited := levelFindings(rep.Findings, "audit")
		require.Len(t, audited, 1)
		assert.Equal(t, "driverguard.lib.pinned_version.deny", audited[0].Rule)
	})
	t.Run("warn enforcement", func(t *testing.T) {
		r := run(t, "", append(args, "--enforcement", "lib.pinned_version=warn")...)
		assert.Equal(t, ExitOK, r.code, r.stdout)
		assert.Contains(t, r.stdout, "RBLNDriver/rbln-driver\n  WARN  driverguard.lib.pinned_version: spec.version is \"latest\"")
		assert.Contains(t, r.stdout, "0 failures, 2 warnings; passed")
	})
	t.Run("an unknown enforcement", func(t *testing.T) {
		r := run(t, "", append(args, "--enforcement", "lib.pinned_version=off")...)
		assert.Equal(t, ExitUsage, r.code)
		assert.Contains(t, r.stderr, `enforcement of "lib.pinned_version": "off" is not one of deny, warn, audit`)
	})
}

// TestCheckTieWarnings: ties and potential ties are the built-in rules' alone. Selectors that
// no node can carry both of (env=prod and env=canary) get no tie warning — the bundled
// canary_selector warned there, wrongly — and a real potential tie is warned once (it was
// warned by Go and again by the library).
func TestCheckTieWarnings(t *testing.T) {
	dir := t.TempDir()
	values := func(instance string) string {
		f := filepath.Join(dir, fmt.Sprintf("values-%d.yaml", len(instance)))
		require.NoError(t, os.WriteFile(f, []byte("driver:\n  nodeSelector: {env: prod}\n  instances:\n    canary:\n      nodeSelector: "+instance+"\n"), 0o600))
		return f
	}
	tests := []struct {
		name     string
		selector string
		ties     int
	}{
		{"disjoint selectors", "{env: canary, rebellions.ai/npu.family: atom}", 0},
		{"a real potential tie", "{rebellions.ai/npu.family: atom}", 1},
		{"a strict superset", "{env: prod, rebellions.ai/npu.family: atom}", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := run(t, "", "check", "-f", values(tt.selector), "-o", "json")
			require.Equal(t, ExitOK, r.code, r.stderr)
			var rep release.Report
			require.NoError(t, json.Unmarshal([]byte(r.stdout), &rep))
			ties := 0
			for _, w := range levelFindings(rep.Findings, "warn") {
				if strings.Contains(w.Message, "tie") {
					ties++
					assert.Equal(t, "PotentialConflict", w.Rule, w.Message)
				}
			}
			assert.Equal(t, tt.ties, ties, r.stdout)
		})
	}
}

// TestCheckWithACustomPolicy: a policy directory changes the results.
func TestCheckWithACustomPolicy(t *testing.T) {
	args := []string{"check", "-f", exampleValues, "--set", "driver.instances.rebel.image.tag=3.3.0-rc1"}
	without := run(t, "", args...)
	assert.Equal(t, ExitOK, without.code, without.stdout)
	with := run(t, "", append(args, "--policy", examplePolicy)...)
	assert.Equal(t, ExitInvalid, with.code)
	assert.Contains(t, with.stdout, "RBLNDriver/rbln-driver-rebel\n  FAIL  driverguard.platform: version \"3.3.0-rc1\" is a pre-release")
	assert.Contains(t, with.stdout, "4 resources, 9 policies: 1 failure, 0 warnings; FAILED")
}

func TestCheckUnusableInput(t *testing.T) {
	dir := t.TempDir()
	broken := filepath.Join(dir, "broken")
	require.NoError(t, os.MkdirAll(broken, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(broken, "team.rego"), []byte("package driverguard.team\n\ndeny contains msg if {\n"), 0o600))
	conflict := filepath.Join(dir, "conflict")
	require.NoError(t, os.MkdirAll(conflict, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(conflict, "team.rego"), []byte("package driverguard.team\n\nlevel := 1\nlevel := 2 if input.object.kind == \"RBLNDriver\"\n\ndeny contains \"x\" if level > 5\n"), 0o600))
	tests := []struct {
		name       string
		args       []string
		wantStderr string
	}{
		{"a policy that does not parse", []string{"--policy", broken}, filepath.Join(broken, "team.rego") + ":4: rego_parse_error: unexpected eof token"},
		// OPA names either of the two conflicting rules (line 3 or 4), whichever it evaluated last.
		{"a policy that fails to evaluate", []string{"--policy", conflict}, `judging RBLNDriver "rbln-driver": policy evaluation failed: policy: evaluation failed: ` + filepath.Join(conflict, "team.rego") + ":"},
		{"a policy that fails to evaluate names the conflict", []string{"--policy", conflict}, ": eval_conflict_error: rule data.driverguard.team.level produced conflicting values"},
		{"a missing policy directory", []string{"--policy", filepath.Join(dir, "nope")}, "nope: cannot read the policy directory"},
		{"an unknown policy to disable", []string{"--disable", "lib.nope"}, `cannot disable "lib.nope"`},
		{"a missing nodes file", []string{"--nodes", filepath.Join(dir, "nodes.yaml")}, "reading nodes"},
		{"bad output", []string{"-o", "xml"}, `unsupported output format "xml": use one of table, json, yaml`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := run(t, "", append([]string{"check", "-f", exampleValues}, tt.args...)...)
			assert.Equal(t, ExitUsage, r.code, r.stderr)
			assert.Contains(t, r.stderr, tt.wantStderr)
			assert.Empty(t, r.stdout)
		})
	}
	r := run(t, "", "check", "-f", exampleValues, "--set", "driver.instances.Bad.nodeSelector.a=b")
	assert.Equal(t, ExitInvalid, r.code, "invalid values are exit 1, as for render")
}

func TestPolicyTest(t *testing.T) {
	r := run(t, "", "policy", "test", examplePolicy)
	require.Equal(t, ExitOK, r.code, r.stdout+r.stderr)
	assert.Contains(t, r.stdout, "PASS  driverguard.platform_test.test_deny_prerelease_outside_canary (../../../docs/examples/policy/platform_test.rego:6)\n")
	assert.NotContains(t, r.stdout, "driverguard.lib.", "bundled tests only when they fail or with -v")
	assert.Regexp(t, `(?m)^4/4 passed; bundled library: (\d+)/(\d+) passed$`, r.stdout)

	verbose := run(t, "", "policy", "test", examplePolicy, "-v", "--run", "pinned_version")
	assert.Contains(t, verbose.stdout, "PASS  driverguard.lib.pinned_version_test.test_deny_latest (bundled:pinned_version_test.rego:")
	assert.NotContains(t, verbose.stdout, "platform_test")

	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "team_test.rego"), []byte(`package driverguard.team_test

import data.driverguard.lib.fixtures
import data.driverguard.lib.pinned_version

test_fails if {
	print("the denials:", pinned_version.deny)
	count(pinned_version.deny) == 1 with input as fixtures.review(fixtures.driver("rbln-driver", {}))
}
`), 0o600))
	failing := run(t, "", "policy", "test", dir)
	assert.Equal(t, ExitInvalid, failing.code)
	assert.Contains(t, failing.stdout, "FAIL  driverguard.team_test.test_fails ("+filepath.Join(dir, "team_test.rego")+":6)\n")
	assert.Contains(t, failing.stdout, "0/1 passed;")

	js := run(t, "", "policy", "test", dir, "-o", "json")
	assert.Equal(t, ExitInvalid, js.code)
	var out struct {
		Tests []struct {
			Name    string
			Outcome string
			Bundled bool
		}
		Failed int
	}
	require.NoError(t, json.Unmarshal([]byte(js.stdout), &out))
	assert.Equal(t, 1, out.Failed)

	empty := run(t, "", "policy", "test", t.TempDir())
	assert.Equal(t, ExitOK, empty.code)
	assert.Contains(t, empty.stderr, "Warning: no tests (test_* rules) in")

	broken := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(broken, "x.rego"), []byte("package driverguard.x\n\ndeny contains msg if {\n"), 0o600))
	b := run(t, "", "policy", "test", broken)
	assert.Equal(t, ExitUsage, b.code)
	assert.Contains(t, b.stderr, filepath.Join(broken, "x.rego")+":4: rego_parse_error")
}

func TestPolicyInput(t *testing.T) {
	r := run(t, "", "policy", "input", "-f", exampleValues, "--nodes", exampleNodes)
	require.Equal(t, ExitOK, r.code, r.stderr)
	var inputs []struct {
		Object struct {
			Kind     string
			Metadata struct{ Name string }
		}
		Operation string
		Source    string
		Cluster   any
		Routing   *struct {
			Selected, Nodes int
			Pools           []struct{ Name, Kernel, Tag string }
		}
	}
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &inputs))
	require.Len(t, inputs, 4)
	assert.Equal(t, "RBLNClusterPolicy", inputs[0].Object.Kind)
	assert.Nil(t, inputs[0].Routing)
	assert.Equal(t, "rbln-driver-atom-canary", inputs[2].Object.Metadata.Name)
	assert.Equal(t, "CREATE", inputs[2].Operation)
	assert.Equal(t, "render", inputs[2].Source)
	assert.Nil(t, inputs[2].Cluster, "the cluster is data.driverguard_cluster, not part of the input")
	require.NotNil(t, inputs[2].Routing)
	assert.Equal(t, 2, inputs[2].Routing.Nodes, "the two canary nodes")
	assert.NotEmpty(t, inputs[2].Routing.Pools)

	one := run(t, "", "policy", "input", "-f", exampleValues, "--name", "rbln-driver-rebel")
	require.Equal(t, ExitOK, one.code, one.stderr)
	assert.True(t, strings.HasPrefix(one.stdout, "{\n  \"object\": {"), "one document, not a list")

	yamlStream := run(t, "", "policy", "input", "-f", exampleValues, "-o", "yaml")
	require.Equal(t, ExitOK, yamlStream.code, yamlStream.stderr)
	assert.Equal(t, 3, strings.Count(yamlStream.stdout, "\n---\n"), "four YAML documents")
	table := run(t, "", "policy", "input", "-f", exampleValues, "--nodes", exampleNodes, "-o", "table")
	require.Equal(t, ExitOK, table.code, table.stderr)
	assert.Regexp(t, `(?m)^RBLNDriver/rbln-driver-atom-canary\s+CREATE\s+2\s+2\s+2\s+0$`, table.stdout)
	oneRow := run(t, "", "policy", "input", "-f", exampleValues, "--nodes", exampleNodes, "--name", "rbln-driver-atom-canary", "-o", "table")
	require.Equal(t, ExitOK, oneRow.code, oneRow.stderr)
	assert.Regexp(t, `\AOBJECT\s+OPERATION\s+SELECTED\s+NODES\s+POOLS\s+TIES\nRBLNDriver/rbln-driver-atom-canary\s+CREATE\s+2\s+2\s+2\s+0\n\z`, oneRow.stdout,
		"--name -o table prints the one row (it printed nothing: the table was never flushed)")

	missing := run(t, "", "policy", "input", "-f", exampleValues, "--name", "rbln-driver-nope")
	assert.Equal(t, ExitUsage, missing.code)
	assert.Contains(t, missing.stderr, `no rendered object is named "rbln-driver-nope"; the objects are rbln-cluster-policy, rbln-driver, rbln-driver-atom-canary, rbln-driver-rebel`)
}

// TestPolicyData: the cluster view as the object named by --name saw it, and after the release.
func TestPolicyData(t *testing.T) {
	view := func(args ...string) map[string]any {
		t.Helper()
		r := run(t, "", append([]string{"policy", "data", "-f", exampleValues, "--nodes", exampleNodes}, args...)...)
		require.Equal(t, ExitOK, r.code, r.stderr)
		var doc struct {
			Cluster map[string]any `json:"driverguard_cluster"`
		}
		require.NoError(t, json.Unmarshal([]byte(r.stdout), &doc))
		return doc.Cluster
	}
	final := view()
	assert.Len(t, final["drivers"], 3)
	assert.Contains(t, final, "clusterPolicy")
	nodes := final["nodes"].(map[string]any)
	assert.Equal(t, "rbln-driver-atom-canary", nodes["npu-atom-canary-01"].(map[string]any)["owner"])
	families := final["families"].(map[string]any)
	assert.Equal(t, float64(7), families["atom"])

	first := view("--name", "rbln-driver")
	assert.Empty(t, first["drivers"], "the default is judged first: no driver exists yet")
	assert.Contains(t, first, "clusterPolicy", "the cluster policy was applied before it")
	canary := view("--name", "rbln-driver-atom-canary")
	assert.Len(t, canary["drivers"], 1)
	assert.Equal(t, "rbln-driver", canary["nodes"].(map[string]any)["npu-atom-canary-01"].(map[string]any)["owner"])
}

func TestPolicyList(t *testing.T) {
	r := run(t, "", "policy", "list", "--policy", examplePolicy, "--disable", "lib.drain_empty_dir", "--enforcement", "platform=audit")
	require.Equal(t, ExitOK, r.code, r.stderr)
	assert.Regexp(t, `(?m)^driverguard\.lib\.drain_empty_dir\.warn\s+warn\s+warn\s+disabled\s+library\s+policy/library/drain_empty_dir\.rego:10\s+Draining must not delete emptyDir data silently$`, r.stdout)
	assert.Regexp(t, `(?m)^driverguard\.platform\.deny\s+deny\s+audit\s+enabled\s+policy\s+\.\./\.\./\.\./docs/examples/policy/platform\.rego:\d+\s+Pre-release drivers only on canary nodes`, r.stdout)
	assert.Regexp(t, `(?m)^driverguard\.platform\.warn\s+warn\s+audit\s+enabled\s+policy\s+`, r.stdout)
}

// TestCheckCountsWhatItDoesNotList: an object with more than 50 findings lists the first 50 and
// counts the rest, in text and in JSON; the totals count them all.
func TestCheckCountsWhatItDoesNotList(t *testing.T) {
	var b strings.Builder
	b.WriteString("driver:\n  instances:\n")
	for i := range 60 {
		fmt.Fprintf(&b, "    i%02d:\n      nodeSelector: {key%02d: \"x\"}\n", i, i)
	}
	values := filepath.Join(t.TempDir(), "values.yaml")
	require.NoError(t, os.WriteFile(values, []byte(b.String()), 0o600))
	// Every pair of instances could tie on a future node that carries both keys: the last
	// instance gets 59 PotentialConflict warnings.
	r := run(t, "", "check", "-f", values)
	require.Equal(t, ExitOK, r.code, r.stderr)
	assert.Contains(t, r.stdout, "RBLNDriver/rbln-driver-i59\n")
	assert.Contains(t, r.stdout, "  WARN  ... and 9 more\n")

	r = run(t, "", "check", "-f", values, "-o", "json")
	require.Equal(t, ExitOK, r.code, r.stderr)
	var rep release.Report
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &rep))
	last := rep.Resources[len(rep.Resources)-1]
	assert.Equal(t, "rbln-driver-i59", last.Name)
	lastWarnings := 0
	for _, f := range levelFindings(rep.Findings, "warn") {
		if f.Object.Name == last.Name && f.Rule != finding.RuleOmittedFindings {
			lastWarnings++
		}
	}
	assert.Equal(t, 50, lastWarnings)
	assert.Equal(t, 9, last.OmittedWarn)
	total := 0
	for _, f := range levelFindings(rep.Findings, "warn") {
		total += max(f.Count, 1)
	}
	assert.Equal(t, total, rep.Warnings, "the total counts the warnings not listed")
	assert.GreaterOrEqual(t, rep.Warnings, 60*59/2, "every pair of instances")
}

// levelFindings are the findings of a level.
func levelFindings(fs []finding.Finding, level finding.Level) []finding.Finding {
	var out []finding.Finding
	for _, f := range fs {
		if f.Level == level {
			out = append(out, f)
		}
	}
	return out
}
