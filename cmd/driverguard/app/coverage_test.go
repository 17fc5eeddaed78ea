package app

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"

	"github.com/driverguard/driverguard/action"
	"github.com/driverguard/driverguard/finding"
)

// writeFiles writes files (name → content) into a new folder and returns it.
func writeFiles(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, content := range files {
		path := filepath.Join(dir, name)
		require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
		require.NoError(t, os.WriteFile(path, []byte(content), 0o644))
	}
	return dir
}

// helperPolicy imports the library's helpers, as docs/policy-authoring.md tells policies to.
const helperPolicy = `package driverguard.team.contact

import data.driverguard.lib.util

deny contains msg if {
	util.is_driver
	not input.object.metadata.annotations["team.example/contact"]
	msg := sprintf("%s: name a contact in the team.example/contact annotation", [util.resource])
}
`

// TestSuiteWithoutLibraryKeepsHelpers: library: false drops the library's rules, not its
// helpers (driverguard.lib.util), which a team's policy imports.
func TestSuiteWithoutLibraryKeepsHelpers(t *testing.T) {
	dir := writeFiles(t, map[string]string{
		"policies/contact.rego": helperPolicy,
		"team.dgtest.yaml": `apiVersion: driverguard.rebellions.ai/v1alpha1
kind: TestSuite
policies: [policies]
library: false
tests:
  - name: a driver without a contact is denied
    values: [values.yaml]
    set: ["driver.image.tag=latest"]
    expect:
      verdict: denied
      exhaustive: true
      results:
        - object: RBLNDriver/rbln-driver
          rule: driverguard.team.contact
          result: fail
          message: "RBLNDriver/rbln-driver: name a contact"
`,
		"values.yaml": "driver:\n  nodeSelector: {env: prod}\n",
	})
	res := run(t, "", "test", filepath.Join(dir, "team.dgtest.yaml"))
	assert.Equal(t, ExitOK, res.code, res.stdout+res.stderr)
	assert.Contains(t, res.stdout, "1 cases, 0 failed")
	assert.NotContains(t, res.stdout, "driverguard.lib.", "library: false counts none of the library's rules")
}

// TestPolicyListRules: policy list shows every rule, one per line: each policy's deny and
// warn bodies (a disabled package's disabled) and the built-in rules; -o json and -o yaml
// list the same rules, each rule body with its package, policy and mode.
func TestPolicyListRules(t *testing.T) {
	dir := writeFiles(t, map[string]string{"team.rego": teamPolicy})
	r := run(t, "", "policy", "list", "--policy", dir, "--disable", "lib.pinned_version")
	require.Equal(t, ExitOK, r.code, r.stderr)
	lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
	assert.Regexp(t, `^RULE\s+LEVEL\s+ENFORCEMENT\s+STATE\s+SOURCE\s+HOME\s+TITLE$`, lines[0])
	assert.Len(t, lines, 1+2+9, "a header, team's two bodies, the library's nine (the built-in rules are in policy rules)")
	assert.Regexp(t, `(?m)^driverguard\.lib\.manager_version\.warn\s+warn\s+warn\s+enabled\s+library\s+policy/library/manager_version\.rego:41\s+Driver manager`, r.stdout)
	assert.Regexp(t, `(?m)^driverguard\.lib\.pinned_version\.deny\s+deny\s+deny\s+disabled\s+library\s+`, r.stdout)
	assert.NotContains(t, r.stdout, "IdenticalNodeSelector")

	// -o json and -o yaml list the table's rules, in its order: each with its package and
	// policy, and its name (the policy's: what --disable takes).
	table := lines[1:]
	for _, format := range []string{"json", "yaml"} {
		r = run(t, "", "policy", "list", "--policy", dir, "--disable", "lib.pinned_version", "-o", format)
		require.Equal(t, ExitOK, r.code, r.stderr)
		var listed []action.ListedRule
		require.NoError(t, yaml.Unmarshal([]byte(r.stdout), &listed), format)
		require.Len(t, listed, len(table), format)
		for i, l := range listed {
			assert.Equal(t, l.ID, strings.Fields(table[i])[0], "%s: entry %d is the table's line", format, i)
		}
		assert.Equal(t, action.ListedRule{Name: "team", Rule: finding.Rule{ID: "driverguard.team.deny", Level: finding.Deny, Enforcement: finding.Audit,
			Title: "Drivers carry the owning team", Home: filepath.Join(dir, "team.rego") + ":7", Source: finding.SourcePolicy},
			Package: "driverguard.team", Policy: "team", Mode: "audit"}, listed[0], format)
		i := slices.IndexFunc(listed, func(l action.ListedRule) bool { return l.ID == "driverguard.lib.pinned_version.deny" })
		require.GreaterOrEqual(t, i, 0, format)
		pinned := listed[i]
		assert.True(t, pinned.Disabled, format)
		assert.Equal(t, finding.SourceLibrary, pinned.Source, format)
		assert.Equal(t, "driverguard.lib.pinned_version/lib.pinned_version/deny", pinned.Package+"/"+pinned.Policy+"/"+string(pinned.Mode), format)
		for _, l := range listed {
			assert.NotEqual(t, finding.SourceBuiltin, l.Source, format)
		}
	}

	// What the perf harness does (hack/perf/run.sh): every name, given to --disable, turns
	// every policy off.
	r = run(t, "", "policy", "list", "-o", "json")
	require.Equal(t, ExitOK, r.code, r.stderr)
	var names []struct {
		Name string `json:"name"`
	}
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &names))
	args := []string{"policy", "list", "-o", "json"}
	for _, n := range names {
		require.NotEmpty(t, n.Name)
		args = append(args, "--disable="+n.Name)
	}
	r = run(t, "", args...)
	require.Equal(t, ExitOK, r.code, r.stderr)
	var off []action.ListedRule
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &off))
	for _, l := range off {
		assert.True(t, l.Disabled, l.ID)
	}

	r = run(t, "", "policy", "rules", "--policy", dir, "-o", "json")
	require.Equal(t, ExitOK, r.code, r.stderr)
	var doc struct {
		Rules []finding.Rule `json:"rules"`
	}
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &doc))
	require.Len(t, doc.Rules, len(finding.Builtin())+2+9)
	assert.Equal(t, finding.Rule{ID: "driverguard.team.deny", Level: finding.Deny, Enforcement: finding.Audit,
		Title: "Drivers carry the owning team", Home: filepath.Join(dir, "team.rego") + ":7", Source: finding.SourcePolicy}, doc.Rules[0])
	assert.Equal(t, "driverguard.team.warn", doc.Rules[1].ID)
	assert.Equal(t, finding.SourceBuiltin, doc.Rules[len(doc.Rules)-1].Source)
}

// bodiesPolicy has a deny and a warn rule body: two rules, each covered on its own.
const bodiesPolicy = `package driverguard.team.bodies

deny contains msg if {
	input.object.kind == "RBLNDriver"
	endswith(input.object.metadata.name, "-legacy")
	msg := "legacy drivers are retired"
}

warn contains msg if {
	input.object.kind == "RBLNDriver"
	endswith(input.object.metadata.name, "-old")
	msg := "old drivers should be renamed"
}
`

// bodiesSuite writes a suite of bodiesPolicy whose cases fire its deny body only (the
// expectations name the package, or the body).
func bodiesSuite(t *testing.T, extra string) string {
	t.Helper()
	dir := writeFiles(t, map[string]string{
		"policies/bodies.rego": bodiesPolicy,
		"values.yaml":          "driver:\n  instances:\n    legacy:\n      nodeSelector: {env: legacy}\n",
		"team.dgtest.yaml": `apiVersion: driverguard.rebellions.ai/v1alpha1
kind: TestSuite
policies: [policies]
` + extra + `tests:
  - name: legacy drivers are retired
    values: [values.yaml]
    expect:
      verdict: denied
      results:
        - object: RBLNDriver/rbln-driver-legacy
          rule: driverguard.team.bodies
          result: fail
        - object: RBLNDriver/rbln-driver-legacy
          rule: driverguard.team.bodies.deny
          result: fail
        - object: RBLNDriver/rbln-driver-legacy
          rule: driverguard.team.bodies.warn
          result: pass
`,
	})
	return filepath.Join(dir, "team.dgtest.yaml")
}

// TestSuiteCoveragePerRuleBody: a package whose deny fired but whose warn never did has its
// warn reported uncovered (docs/policy-authoring.md "Test suites": per rule); an expectation naming the package matches
// either body's result, one naming a body only that body's.
func TestSuiteCoveragePerRuleBody(t *testing.T) {
	path := bodiesSuite(t, "library: false\n")
	res := run(t, "", "test", path)
	require.Equal(t, ExitOK, res.code, res.stdout+res.stderr)
	assert.Regexp(t, `(?m)^driverguard\.team\.bodies\.deny\s+1\s+0$`, res.stdout)
	assert.Regexp(t, `(?m)^driverguard\.team\.bodies\.warn\s+0\s+1$`, res.stdout)
	assert.Regexp(t, `(?m)^never fired: driverguard\.team\.bodies\.warn, `, res.stdout)

	res = run(t, "", "test", "-o", "json", path)
	require.Equal(t, ExitOK, res.code, res.stderr)
	var doc struct {
		Cases []struct {
			Results []struct{ Rule string } `json:"results"`
		} `json:"cases"`
		Coverage []struct {
			Rule   string   `json:"rule"`
			Source string   `json:"source"`
			Home   string   `json:"home"`
			Fired  []string `json:"fired"`
		} `json:"coverage"`
	}
	require.NoError(t, json.Unmarshal([]byte(res.stdout), &doc))
	require.Len(t, doc.Cases, 1)
	assert.Equal(t, "driverguard.team.bodies.deny", doc.Cases[0].Results[0].Rule, "a result carries the rule body")
	covered := map[string]bool{}
	for _, c := range doc.Coverage {
		covered[c.Rule] = len(c.Fired) > 0
		if c.Rule == "driverguard.team.bodies.warn" {
			assert.Equal(t, "policy", c.Source)
			assert.Regexp(t, `bodies\.rego:9$`, c.Home)
		}
	}
	assert.Equal(t, map[string]bool{"driverguard.team.bodies.deny": true, "driverguard.team.bodies.warn": false,
		"ClusterPolicyName": false, "ConflictingNodeSelector": false, "DriverLoss": false, "IdenticalNodeSelector": false,
		"PotentialConflict": false, "UpgradePolicy": false}, covered)

	// An expectation naming the warn body does not match the deny body's result.
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(path, []byte(strings.Replace(string(data), "rule: driverguard.team.bodies.deny\n          result: fail",
		"rule: driverguard.team.bodies.warn\n          result: fail", 1)), 0o644))
	res = run(t, "", "test", path)
	assert.Equal(t, ExitInvalid, res.code, res.stdout+res.stderr)
	assert.Contains(t, res.stdout, "expected fail RBLNDriver/rbln-driver-legacy driverguard.team.bodies.warn")
}

// TestSuiteCoverageOf: --coverage-of and a suite's coverageOf count only the rules they
// match (a package names both bodies), so --min-coverage 100 is reachable for a team's own
// rules with the library loaded; a pattern that matches no rule is exit 2, named, with the
// rules it could match.
func TestSuiteCoverageOf(t *testing.T) {
	path := bodiesSuite(t, "")
	res := run(t, "", "test", "--min-coverage", "100", path)
	assert.Equal(t, ExitInvalid, res.code, "the library's rules and the team's warn never fired")

	res = run(t, "", "test", "--min-coverage", "100", "--coverage-of", "driverguard.team.bodies.deny", path)
	assert.Equal(t, ExitOK, res.code, res.stdout+res.stderr)
	assert.Contains(t, res.stdout, "coverage 100.0% of 1 rules matching --coverage-of driverguard.team.bodies.deny; passed")
	assert.NotContains(t, res.stdout, "driverguard.lib.")
	assert.NotContains(t, res.stdout, "IdenticalNodeSelector")

	// A package matches both bodies; a glob matches IDs; patterns add up.
	for _, args := range [][]string{
		{"--coverage-of", "driverguard.team.bodies"},
		{"--coverage-of", "driverguard.team.*"},
		{"--coverage-of", "*.bodies.deny", "--coverage-of", "driverguard.team.bodies.warn"},
	} {
		res = run(t, "", append(append([]string{"test", "--min-coverage", "100"}, args...), path)...)
		assert.Equal(t, ExitInvalid, res.code, "%v: %s", args, res.stdout+res.stderr)
		assert.Contains(t, res.stdout, "coverage 50.0% of 2 rules matching --coverage-of ", args)
		assert.Contains(t, res.stdout, "never fired: driverguard.team.bodies.warn\n", args)
	}
	res = run(t, "", "test", "--coverage-of", "IdenticalNodeSelector", "--coverage-of", "driverguard.team.bodies.deny", "-o", "json", path)
	require.Equal(t, ExitOK, res.code, res.stderr)
	var doc struct {
		Coverage []struct {
			Rule string `json:"rule"`
		} `json:"coverage"`
		CoverageOf []string `json:"coverageOf"`
	}
	require.NoError(t, json.Unmarshal([]byte(res.stdout), &doc))
	assert.Equal(t, []string{"IdenticalNodeSelector", "driverguard.team.bodies.deny"}, doc.CoverageOf)
	require.Len(t, doc.Coverage, 2)
	assert.Equal(t, "driverguard.team.bodies.deny", doc.Coverage[0].Rule)
	assert.Equal(t, "IdenticalNodeSelector", doc.Coverage[1].Rule)

	// The suite's own scope.
	scoped := bodiesSuite(t, "coverageOf: [driverguard.team.bodies.deny]\n")
	res = run(t, "", "test", "--min-coverage", "100", scoped)
	assert.Equal(t, ExitOK, res.code, res.stdout+res.stderr)
	assert.Contains(t, res.stdout, "coverage 100.0% of 1 rules; passed")

	// Patterns that match nothing, or are no glob.
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--coverage-of", "driverguard.tema.*", path}, `--coverage-of "driverguard.tema.*" matches no rule coverage counts; the rules are driverguard.lib.allowed_registries.deny, `},
		{[]string{"--coverage-of", "driverguard.[team", path}, `--coverage-of: "driverguard.[team" is not a glob`},
		{[]string{bodiesSuite(t, "coverageOf: [driverguard.team.bodies.deny, driverguard.lib.*]\nlibrary: false\n")},
			`team.dgtest.yaml:4: coverageOf "driverguard.lib.*" matches no rule coverage counts; the rules are driverguard.team.bodies.deny, driverguard.team.bodies.warn, ClusterPolicyName, `},
	} {
		res = run(t, "", append([]string{"test"}, tc.args...)...)
		assert.Equal(t, ExitUsage, res.code, "%v: %s", tc.args, res.stdout+res.stderr)
		assert.Contains(t, res.stderr, tc.want, tc.args)
		assert.Empty(t, res.stdout, tc.args)
	}
}

// TestTestSARIFScopedNotes: test -o sarif notes only the rules coverage counts: with
// --coverage-of (or coverageOf) a team's run notes its own rules, not the library's, each at
// its rule body's line; the tool's rules are described by the registry's titles.
func TestTestSARIFScopedNotes(t *testing.T) {
	schema := sarifSchema(t)
	path := bodiesSuite(t, "")
	notes := func(args ...string) (map[string]sarifResultDoc, sarifDoc) {
		t.Helper()
		res := run(t, "", append([]string{"test", "-o", "sarif", path}, args...)...)
		require.Equal(t, ExitOK, res.code, res.stderr)
		doc := validSARIF(t, schema, res.stdout)
		out := map[string]sarifResultDoc{}
		for _, r := range doc.Runs[0].Results {
			require.Equal(t, finding.RuleNeverFired, r.RuleID)
			_, msg, _ := strings.Cut(r.Message.Text, ": ") // after the object, Rule/<id>
			out[msg] = r
		}
		return out, doc
	}
	all, _ := notes()
	assert.Contains(t, all, "no case makes driverguard.lib.pinned_version.deny fire (Driver versions are pinned)")
	assert.Len(t, all, 9+6+1, "unscoped: the library's nine bodies, six built-in rules, the team's warn")

	scoped, doc := notes("--coverage-of", "driverguard.team.*")
	require.Len(t, scoped, 1, "%v", scoped)
	note, ok := scoped["no case makes driverguard.team.bodies.warn fire"]
	require.True(t, ok, "%v", scoped)
	assert.Equal(t, "note", note.Level)
	require.NotNil(t, note.Locations[0].PhysicalLocation)
	assert.Equal(t, "file://"+filepath.ToSlash(filepath.Join(filepath.Dir(path), "policies", "bodies.rego")), note.Locations[0].PhysicalLocation.ArtifactLocation.URI)
	assert.Equal(t, 9, note.Locations[0].PhysicalLocation.Region.StartLine, "the warn body's line")
	var described []string
	for _, r := range doc.Runs[0].Tool.Driver.Rules {
		described = append(described, r.ID)
	}
	assert.Equal(t, []string{finding.RuleNeverFired}, described)
}
