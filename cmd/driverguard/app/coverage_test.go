package app

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
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
