package policy_test

import (
	"fmt"
	"slices"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/driverguard/driverguard/policy"
)

// routed is a decision as "<where> <package>/<rule>: <message>", where is deny, warn or
// audit: the list a message landed in.
func routed(d *policy.Decision) []string {
	var out []string
	for where, ms := range map[string][]policy.Message{"deny": d.Deny, "warn": d.Warn, "audit": d.Audit} {
		for _, m := range ms {
			out = append(out, fmt.Sprintf("%s %s/%s: %s", where, m.Package, m.Rule, m.Msg))
		}
	}
	slices.Sort(out)
	return out
}

// TestRuleEnforcement: METADATA custom.enforcement on a deny or warn rule — scope rule (the
// default above a rule) or document (every body of that rule) — sets that rule's
// enforcement; the package's and its parents' (scope subpackages) apply to the rules that do
// not say; the caller's override of the package sets all its rules.
func TestRuleEnforcement(t *testing.T) {
	in := &policy.Input{Object: map[string]any{"kind": "RBLNDriver"}, Operation: "CREATE", Source: policy.SourceRender}
	tests := []struct {
		name     string
		files    map[string]string
		override map[string]policy.Enforcement
		want     []string
		// rules are the enforcement policy list shows for driverguard.team's rules.
		rules map[string]policy.Enforcement
	}{
		{
			name: "a rule annotated audit: its messages are audit findings; the other rule keeps the default",
			files: map[string]string{"team.rego": `package driverguard.team

# METADATA
# title: drivers carry the team annotation
# custom:
#   enforcement: audit
deny contains "on trial"

warn contains "a warning"
`},
			want:  []string{"audit driverguard.team/deny: on trial", "warn driverguard.team/warn: a warning"},
			rules: map[string]policy.Enforcement{"deny": policy.EnforceAudit, "warn": policy.EnforceDeny},
		},
		{
			name: "a rule annotated warn: its deny messages are warnings",
			files: map[string]string{"team.rego": `package driverguard.team

# METADATA
# custom:
#   enforcement: warn
deny contains "a deny that warns"
`},
			want:  []string{"warn driverguard.team/deny: a deny that warns"},
			rules: map[string]policy.Enforcement{"deny": policy.EnforceWarn},
		},
		{
			name: "every body annotated alike",
			files: map[string]string{"team.rego": `package driverguard.team

# METADATA
# custom:
#   enforcement: audit
deny contains "one"

# METADATA
# custom:
#   enforcement: audit
deny contains "two"
`},
			want:  []string{"audit driverguard.team/deny: one", "audit driverguard.team/deny: two"},
			rules: map[string]policy.Enforcement{"deny": policy.EnforceAudit},
		},
		{
			name: "scope document on one body covers every body, in every file of the package",
			files: map[string]string{
				"a.rego": `package driverguard.team

deny contains "one"

# METADATA
# scope: document
# custom:
#   enforcement: audit
deny contains "two"
`,
				"b.rego": "package driverguard.team\n\ndeny contains \"three\"\n",
			},
			want:  []string{"audit driverguard.team/deny: one", "audit driverguard.team/deny: three", "audit driverguard.team/deny: two"},
			rules: map[string]policy.Enforcement{"deny": policy.EnforceAudit},
		},
		{
			name: "the rule's annotation wins over the package's",
			files: map[string]string{"team.rego": `# METADATA
# custom:
#   enforcement: audit
package driverguard.team

# METADATA
# custom:
#   enforcement: deny
deny contains "enforced"

warn contains "on trial"
`},
			want:  []string{"audit driverguard.team/warn: on trial", "deny driverguard.team/deny: enforced"},
			rules: map[string]policy.Enforcement{"deny": policy.EnforceDeny, "warn": policy.EnforceAudit},
		},
		{
			name: "the package's annotation in another file of the package",
			files: map[string]string{
				"meta.rego": "# METADATA\n# custom:\n#   enforcement: audit\npackage driverguard.team\n\nhelper := true\n",
				"team.rego": "package driverguard.team\n\ndeny contains \"on trial\" if data.driverguard.team.helper\n",
			},
			want:  []string{"audit driverguard.team/deny: on trial"},
			rules: map[string]policy.Enforcement{"deny": policy.EnforceAudit},
		},
		{
			name: "scope subpackages: every package under it, unless it says otherwise",
			files: map[string]string{
				"root.rego": "# METADATA\n# scope: subpackages\n# custom:\n#   enforcement: audit\npackage driverguard.team\n",
				"a.rego":    "package driverguard.team.a\n\ndeny contains \"a\"\n",
				"b.rego":    "# METADATA\n# custom:\n#   enforcement: warn\npackage driverguard.team.b\n\ndeny contains \"b\"\n",
				"team.rego": "package driverguard.team\n\ndeny contains \"team\"\n",
			},
			want:  []string{"audit driverguard.team.a/deny: a", "audit driverguard.team/deny: team", "warn driverguard.team.b/deny: b"},
			rules: map[string]policy.Enforcement{"deny": policy.EnforceAudit},
		},
		{
			name: "the caller's override of the package sets every rule of it",
			files: map[string]string{"team.rego": `package driverguard.team

# METADATA
# custom:
#   enforcement: audit
deny contains "on trial"

warn contains "a warning"
`},
			override: map[string]policy.Enforcement{"team": policy.EnforceDeny},
			want:     []string{"deny driverguard.team/deny: on trial", "warn driverguard.team/warn: a warning"},
			rules:    map[string]policy.Enforcement{"deny": policy.EnforceDeny, "warn": policy.EnforceDeny},
		},
		{
			name: "an override of audit trials the package's rules whatever they say",
			files: map[string]string{"team.rego": `package driverguard.team

# METADATA
# custom:
#   enforcement: deny
deny contains "enforced"
`},
			override: map[string]policy.Enforcement{"driverguard.team": policy.EnforceAudit},
			want:     []string{"audit driverguard.team/deny: enforced"},
			rules:    map[string]policy.Enforcement{"deny": policy.EnforceAudit},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			for name, content := range tt.files {
				writeFile(t, dir, name, content)
			}
			e := newEngine(t, policy.Options{Dirs: []string{dir}, ExcludeLibrary: true, Enforcement: tt.override})
			d, err := e.Evaluate(t.Context(), in)
			require.NoError(t, err)
			assert.Equal(t, tt.want, routed(d))
			for _, info := range e.Policies() {
				if info.Package == "driverguard.team" {
					assert.Equal(t, tt.rules, info.RuleEnforcement)
					mode := tt.rules["deny"]
					if mode == "" {
						mode = tt.rules["warn"]
					}
					assert.Equal(t, mode, info.Enforcement, "a policy's enforcement is its deny rule's")
				}
			}
		})
	}
}

// TestRuleEnforcementErrors: an enforcement that is not a mode, wherever it is declared, an
// annotation that would apply to one body of a rule and not to another, and one that applies
// to no deny or warn rule are load errors naming the file and line, and saying the fix.
func TestRuleEnforcementErrors(t *testing.T) {
	tests := []struct {
		name, file, content string
		want                string // after "<file>:"
	}{
		{"not a mode, above a rule", "team.rego", "package driverguard.team\n\n# METADATA\n# custom:\n#   enforcement: block\ndeny contains \"x\"\n",
			`3:1: rule deny of package driverguard.team: METADATA custom.enforcement: enforcement "block" is not one of deny, warn, audit`},
		{"not a string, above a rule", "team.rego", "package driverguard.team\n\n# METADATA\n# custom:\n#   enforcement: [audit]\ndeny contains \"x\"\n",
			`3:1: rule deny of package driverguard.team: METADATA custom.enforcement: enforcement is a []interface {}, not one of deny, warn, audit`},
		{"a number, scope document", "team.rego", "package driverguard.team\n\n# METADATA\n# scope: document\n# custom:\n#   enforcement: 1\nwarn contains \"x\"\n",
			`3:1: rule warn of package driverguard.team (scope document): METADATA custom.enforcement: enforcement is a`},
		{"not a mode, scope subpackages", "team.rego", "# METADATA\n# scope: subpackages\n# custom:\n#   enforcement: off\npackage driverguard.team\n\ndeny contains \"x\"\n",
			`1:1: packages under driverguard.team (scope subpackages): METADATA custom.enforcement: enforcement "off" is not one of deny, warn, audit`},
		{"not a mode, in a package without deny or warn", "team.rego", "# METADATA\n# custom:\n#   enforcement: blocking\npackage driverguard.team\n\nhelper := true\n",
			`1:1: package driverguard.team: METADATA custom.enforcement: enforcement "blocking" is not one of deny, warn, audit`},
		{"not a mode, above a helper rule", "team.rego", "package driverguard.team\n\n# METADATA\n# custom:\n#   enforcement: nope\nhelper := true\n\ndeny contains \"x\" if helper\n",
			`3:1: rule helper of package driverguard.team: METADATA custom.enforcement: enforcement "nope" is not one of deny, warn, audit`},
		{"one body annotated, another not", "team.rego", "package driverguard.team\n\n# METADATA\n# custom:\n#   enforcement: audit\ndeny contains \"one\"\n\ndeny contains \"two\"\n",
			`8:1: package driverguard.team: this deny rule's enforcement is deny (the default) but the deny rule at line 6 is audit (METADATA above it): driverguard applies one enforcement to all of a rule's messages; annotate every deny rule of the package alike, or declare it once with "scope: document" above one of them (it covers every deny rule of the package) or for the package`},
		{"two bodies annotated differently", "team.rego", "package driverguard.team\n\n# METADATA\n# custom:\n#   enforcement: audit\nwarn contains \"one\"\n\n# METADATA\n# custom:\n#   enforcement: deny\nwarn contains \"two\"\n",
			`11:1: package driverguard.team: this warn rule's enforcement is deny (METADATA above it) but the warn rule at line 6 is audit (METADATA above it)`},
		{"a valid mode above a helper rule does nothing", "team.rego", "package driverguard.team\n\n# METADATA\n# custom:\n#   enforcement: audit\nhelper := true\n\ndeny contains \"x\" if helper\n",
			`3:1: rule helper of package driverguard.team: METADATA custom.enforcement does nothing here: only a package's deny and warn rules have an enforcement; put it above deny or warn, or on the package`},
		{"a valid mode on a package without deny or warn does nothing", "team.rego", "# METADATA\n# custom:\n#   enforcement: audit\npackage driverguard.team\n\nhelper := true\n",
			`1:1: package driverguard.team: METADATA custom.enforcement does nothing here: the package has no deny or warn rule`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			path := writeFile(t, dir, tt.file, tt.content)
			_, err := policy.New(t.Context(), policy.Options{Dirs: []string{dir}, ExcludeLibrary: true, Metrics: prometheus.NewRegistry()})
			var le *policy.LoadError
			require.ErrorAs(t, err, &le)
			assert.Contains(t, err.Error(), path+":"+tt.want)
		})
	}
}
