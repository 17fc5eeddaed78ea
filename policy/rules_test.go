package policy_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/driverguard/driverguard/finding"
	"github.com/driverguard/driverguard/policy"
)

// TestEngineRules: every rule body of every package is one rule of the registry, with its
// level (the body), its enforcement (as configured for that body), its title (METADATA above
// the body, else the package's, else a default), its home (file:line of its first
// definition; the library's by its path in the repository) and its source; a disabled
// package's bodies are listed disabled.
func TestEngineRules(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "team.rego", `# METADATA
# title: Team conventions
package driverguard.team

# METADATA
# title: Drivers name a contact
# custom:
#   enforcement: audit
deny contains "no contact"

warn contains "a warning"
`)
	writeFile(t, dir, "untitled.rego", `package driverguard.untitled

warn contains "w" if input.object.kind == "RBLNDriver"
`)
	writeFile(t, dir, "off.rego", `package driverguard.off

deny contains "d"
`)
	e := newEngine(t, policy.Options{Dirs: []string{dir}, Disable: []string{"off"}})
	byID := map[string]finding.Rule{}
	var ids []string
	for _, r := range e.Rules() {
		byID[r.ID] = r
		ids = append(ids, r.ID)
	}
	assert.IsNonDecreasing(t, ids)
	assert.Equal(t, finding.Rule{ID: "driverguard.team.deny", Level: finding.Deny, Enforcement: finding.Audit,
		Title: "Drivers name a contact", Home: dir + "/team.rego:9", Source: finding.SourcePolicy}, byID["driverguard.team.deny"])
	assert.Equal(t, finding.Rule{ID: "driverguard.team.warn", Level: finding.Warn, Enforcement: finding.Warn,
		Title: "Team conventions", Home: dir + "/team.rego:11", Source: finding.SourcePolicy}, byID["driverguard.team.warn"])
	assert.Equal(t, finding.Rule{ID: "driverguard.untitled.warn", Level: finding.Warn, Enforcement: finding.Warn,
		Title: "Rego policy driverguard.untitled (warn)", Home: dir + "/untitled.rego:3", Source: finding.SourcePolicy}, byID["driverguard.untitled.warn"])
	assert.NotContains(t, byID, "driverguard.untitled.deny", "a body the package does not define is no rule")
	assert.True(t, byID["driverguard.off.deny"].Disabled)
	assert.False(t, byID["driverguard.team.deny"].Disabled)

	// The library: one rule per body, at its first definition.
	assert.Equal(t, finding.Rule{ID: "driverguard.lib.manager_version.deny", Level: finding.Deny, Enforcement: finding.Deny,
		Title: "Driver manager v0.2.2 or later when smd is configured", Home: "policy/library/manager_version.rego:16", Source: finding.SourceLibrary},
		byID["driverguard.lib.manager_version.deny"])
	assert.Equal(t, "policy/library/manager_version.rego:41", byID["driverguard.lib.manager_version.warn"].Home)
	assert.Equal(t, finding.Warn, byID["driverguard.lib.drain_empty_dir.warn"].Level)
	assert.NotContains(t, byID, "driverguard.lib.drain_empty_dir.deny")
	assert.NotContains(t, byID, "driverguard.lib.util.deny", "the helpers are no rule")

	// --enforcement on a package sets both its bodies: what their findings do.
	for mode, want := range map[policy.Enforcement][2]finding.Level{
		policy.EnforceDeny:  {finding.Deny, finding.Warn},
		policy.EnforceWarn:  {finding.Warn, finding.Warn},
		policy.EnforceAudit: {finding.Audit, finding.Audit},
	} {
		e = newEngine(t, policy.Options{Dirs: []string{dir}, Enforcement: map[string]policy.Enforcement{"team": mode}})
		byID = map[string]finding.Rule{}
		for _, r := range e.Rules() {
			byID[r.ID] = r
		}
		assert.Equal(t, want[0], byID["driverguard.team.deny"].Enforcement, mode)
		assert.Equal(t, want[1], byID["driverguard.team.warn"].Enforcement, mode)
	}
}

// TestLibraryRules: the library's rules, as an engine without directories lists them.
func TestLibraryRules(t *testing.T) {
	rules, err := policy.LibraryRules()
	require.NoError(t, err)
	e := newEngine(t, policy.Options{})
	assert.Equal(t, e.Rules(), rules)
	for _, r := range rules {
		assert.Equal(t, finding.SourceLibrary, r.Source, r.ID)
		assert.Regexp(t, `^policy/library/\w+\.rego:\d+$`, r.Home, r.ID)
		assert.NotContains(t, r.Title, "Rego policy", r.ID)
	}
}

// TestExcludeLibraryKeepsHelpers: without the library's rules, its helper packages stay
// loaded, so a policy that imports data.driverguard.lib.util still fires.
func TestExcludeLibraryKeepsHelpers(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "team.rego", `package driverguard.team

import data.driverguard.lib.util

deny contains msg if {
	util.is_driver
	msg := sprintf("%s: denied", [util.resource])
}
`)
	e := newEngine(t, policy.Options{Dirs: []string{dir}, ExcludeLibrary: true})
	d, err := e.Evaluate(t.Context(), &policy.Input{Object: map[string]any{"kind": "RBLNDriver", "metadata": map[string]any{"name": "a"}},
		Operation: "CREATE", Source: policy.SourceRender})
	require.NoError(t, err)
	require.Len(t, d.Deny, 1)
	assert.Equal(t, "RBLNDriver/a: denied", d.Deny[0].Msg)
	var ids []string
	for _, r := range e.Rules() {
		ids = append(ids, r.ID)
	}
	assert.Equal(t, []string{"driverguard.team.deny"}, ids, "none of the library's rules")
	assert.Equal(t, []string{"driverguard.team"}, e.Status().Policies)
}
