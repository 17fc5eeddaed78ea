package app

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

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
// warn bodies (a disabled package's disabled) and the built-in rules; -o json prints them
// as "rules" beside "policies".
func TestPolicyListRules(t *testing.T) {
	dir := writeFiles(t, map[string]string{"team.rego": teamPolicy})
	r := run(t, "", "policy", "list", "--policy", dir, "--disable", "lib.pinned_version")
	require.Equal(t, ExitOK, r.code, r.stderr)
	lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
	assert.Regexp(t, `^RULE\s+LEVEL\s+ENFORCEMENT\s+STATE\s+SOURCE\s+HOME\s+TITLE$`, lines[0])
	assert.Len(t, lines, 1+len(finding.Builtin())+2+9, "a header, the built-in rules, team's two bodies, the library's nine")
	assert.Regexp(t, `(?m)^driverguard\.lib\.manager_version\.warn\s+warn\s+warn\s+enabled\s+library\s+policy/library/manager_version\.rego:41\s+Driver manager`, r.stdout)
	assert.Regexp(t, `(?m)^driverguard\.lib\.pinned_version\.deny\s+deny\s+deny\s+disabled\s+library\s+`, r.stdout)
	assert.Regexp(t, `(?m)^IdenticalNodeSelector\s+deny\s+deny\s+enabled\s+builtin\s+routing\s+The selector is identical`, r.stdout)
	assert.Regexp(t, `(?m)^FieldValueInvalid\s+deny\s+deny\s+enabled\s+builtin\s+api/validation\s+`, r.stdout)

	r = run(t, "", "policy", "list", "--policy", dir, "-o", "json")
	require.Equal(t, ExitOK, r.code, r.stderr)
	var doc struct {
		Policies []map[string]any `json:"policies"`
		Rules    []finding.Rule   `json:"rules"`
	}
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &doc))
	assert.Len(t, doc.Policies, 9, "the team's package and the library's eight")
	require.Len(t, doc.Rules, len(finding.Builtin())+2+9)
	assert.Equal(t, finding.Rule{ID: "driverguard.team.deny", Level: finding.Deny, Enforcement: finding.Audit,
		Title: "Drivers carry the owning team", Home: filepath.Join(dir, "team.rego") + ":7", Source: finding.SourcePolicy}, doc.Rules[0])
	assert.Equal(t, "driverguard.team.warn", doc.Rules[1].ID)
	assert.Equal(t, finding.SourceBuiltin, doc.Rules[len(doc.Rules)-1].Source)
}
