package app

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A policy message quoting what a pull request wrote (an annotation's value, say) may hold
// line breaks and escape sequences. The human views print each finding on one line, escaped
// as audit's do: in a GitHub Actions step, a line of standard output that starts with "::" is
// a workflow command, so a value could otherwise forge annotations (or ::stop-commands::)
// through the default table.
func TestTablesKeepAFindingOnOneLine(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "annotations.rego"), []byte(`package driverguard.annotations

deny contains msg if {
	input.object.kind == "RBLNDriver"
	some k, v in object.get(input.object, ["spec", "annotations"], {})
	msg := sprintf("annotation %s=%s is not allowed", [k, v])
}
`), 0o644))
	value := "a\n::error file=README.md,line=1::approved\r::warning::x \x1b[31mred\u202e"
	for _, cmd := range []string{"check", "preview"} {
		t.Run(cmd, func(t *testing.T) {
			r := run(t, "", cmd, "-f", exampleValues, "--nodes", exampleNodes, "--policy", dir,
				"--set-json", `driver.annotations={"x":`+jsonString(t, value)+`}`)
			require.Contains(t, r.stdout, "annotation x=a", r.stderr)
			for _, line := range strings.Split(r.stdout, "\n") {
				assert.False(t, strings.HasPrefix(line, "::"), "a line of its own from a value: %q", line)
			}
			assert.NotContains(t, r.stdout, "\r")
			assert.NotContains(t, r.stdout, "\x1b")
			assert.NotContains(t, r.stdout, "\u202e")
			assert.Contains(t, r.stdout, `annotation x=a\n::error file=README.md,line=1::approved\r::warning::x \x1b[31mred\u202e is not allowed`)
		})
	}
}

func jsonString(t *testing.T, s string) string {
	t.Helper()
	data, err := json.Marshal(s)
	require.NoError(t, err)
	return string(data)
}

// review's table words the response: a policy's denial and warning stay one printable line.
func TestReviewTableKeepsAMessageOnOneLine(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "lines.rego"), []byte(`package driverguard.lines

deny contains "denied\n::error file=README.md,line=1::approved\u001b[31m" if input.object.kind == "RBLNDriver"

warn contains "warned\r\n::warning::x" if input.object.kind == "RBLNDriver"
`), 0o644))
	r := run(t, "", "review", "-f", filepath.Join(reviewData, "requests", "driver-create-allowed.json"),
		"--nodes", filepath.Join(reviewData, "nodes.yaml"), "--drivers", filepath.Join(reviewData, "drivers.yaml"),
		"--policy", dir, "-o", "table")
	require.Equal(t, ExitInvalid, r.code, r.stdout+r.stderr)
	assert.Contains(t, r.stdout, `denied\n::error file=README.md,line=1::approved\x1b[31m`)
	assert.Contains(t, r.stdout, `warned\r\n::warning::x`)
	for _, line := range strings.Split(r.stdout, "\n") {
		assert.False(t, strings.HasPrefix(line, "::"), "a line of its own from a message: %q", line)
	}
	assert.NotContains(t, r.stdout, "\x1b")
}
