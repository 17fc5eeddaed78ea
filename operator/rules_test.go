package operator_test

import (
	"os"
	"regexp"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/driverguard/driverguard/operator"
)

// TestRulesAreDocumented: docs/operator.md lists every rule the package models, with the
// operator file and commit it was read from, and no other.
func TestRulesAreDocumented(t *testing.T) {
	doc, err := os.ReadFile("../docs/operator.md")
	require.NoError(t, err)
	row := regexp.MustCompile("(?m)^\\| `([a-z-]+)` \\| .* \\| `([^`]+)` \\| `([0-9a-f]{8})` \\| .*\\|$")
	documented := map[string][2]string{}
	for _, m := range row.FindAllStringSubmatch(string(doc), -1) {
		documented[m[1]] = [2]string{m[2], m[3]}
	}
	rules := operator.Rules()
	require.NotEmpty(t, rules)
	for _, r := range rules {
		require.Regexp(t, `^[0-9a-f]{8}$`, r.Commit, r.ID)
		require.NotEmpty(t, r.File, r.ID)
		require.NotEmpty(t, r.Summary, r.ID)
		got, ok := documented[r.ID]
		if assert.True(t, ok, "docs/operator.md has no row for rule %s", r.ID) {
			assert.Equal(t, [2]string{r.File, r.Commit}, got, "rule %s: file and commit", r.ID)
		}
		delete(documented, r.ID)
	}
	assert.Empty(t, documented, "rows of docs/operator.md that are no rule of package operator")
}
