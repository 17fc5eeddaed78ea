package finding_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/driverguard/driverguard/finding"
)

func TestRegoRuleIDs(t *testing.T) {
	for _, tt := range []struct {
		rule, pkg, body string
	}{
		{"driverguard.lib.pinned_version.deny", "driverguard.lib.pinned_version", "deny"},
		{"team.warn", "team", "warn"},
		{"a.deny.warn", "a.deny", "warn"}, // a package may end in deny
		{"IdenticalNodeSelector", "", ""},
		{"deny", "", ""}, // no package
		{".deny", "", ""},
		{"team.allow", "", ""},
		{"FieldValueInvalid", "", ""},
	} {
		t.Run(tt.rule, func(t *testing.T) {
			assert.Equal(t, tt.pkg, finding.PolicyOf(tt.rule))
			assert.Equal(t, tt.body, finding.BodyOf(tt.rule))
			if tt.pkg != "" {
				assert.Equal(t, tt.rule, finding.RegoRule(tt.pkg, tt.body))
			}
		})
	}
}

func TestMatches(t *testing.T) {
	assert.True(t, finding.Matches("team", "team.deny"), "a package names both bodies")
	assert.True(t, finding.Matches("team", "team.warn"))
	assert.True(t, finding.Matches("team.warn", "team.warn"))
	assert.False(t, finding.Matches("team.warn", "team.deny"), "a body names itself only")
	assert.False(t, finding.Matches("tea", "team.deny"))
	assert.False(t, finding.Matches("", "team.deny"))
	assert.True(t, finding.Matches("DriverLoss", "DriverLoss"))
	assert.False(t, finding.Matches("Driver", "DriverLoss"))
}

func TestBuiltinRulesAreSpelledOnce(t *testing.T) {
	seen := map[string]bool{}
	for _, r := range finding.Builtin() {
		require.False(t, seen[r.ID], "%s twice", r.ID)
		seen[r.ID] = true
		assert.NotEmpty(t, r.Title, r.ID)
		assert.NotEmpty(t, r.Home, r.ID)
		assert.Contains(t, finding.Levels, r.Level, r.ID)
		assert.Equal(t, finding.SourceBuiltin, r.Source)
		assert.Empty(t, finding.PolicyOf(r.ID), "a built-in ID is never read as a Rego rule body: %s", r.ID)
	}
	for _, id := range []string{finding.RuleIdenticalNodeSelector, finding.RuleDriverLoss, finding.RuleInvalidValues,
		finding.RuleStaleOwnerLabel, finding.RuleDriverImageNotFound, "FieldValueInvalid", finding.RuleNeverFired} {
		assert.True(t, seen[id], id)
	}
}

func TestRegistry(t *testing.T) {
	r := finding.NewRegistry(
		finding.Rule{ID: "team.deny", Level: finding.Deny, Enforcement: finding.Audit, Title: "Team rule", Source: finding.SourcePolicy},
		finding.Rule{ID: "driverguard.lib.x.deny", Level: finding.Deny, Enforcement: finding.Deny, Source: finding.SourceLibrary},
	)
	rule, ok := r.Rule("team.deny")
	require.True(t, ok)
	assert.Equal(t, finding.Audit, rule.Enforcement)
	assert.Equal(t, "Team rule", r.Title("team.deny"))
	assert.Equal(t, "nope", r.Title("nope"), "an unknown rule's title is its ID")
	rules := r.Rules()
	assert.Equal(t, "team.deny", rules[0].ID, "the team's policies first")
	assert.Equal(t, "driverguard.lib.x.deny", rules[1].ID, "then the library")
	assert.Equal(t, finding.SourceBuiltin, rules[2].Source, "then the built-in rules")

	r.Add(finding.Rule{ID: "team.deny", Level: finding.Deny, Enforcement: finding.Warn, Source: finding.SourcePolicy})
	rule, _ = r.Rule("team.deny")
	assert.Equal(t, finding.Warn, rule.Enforcement, "a known ID is replaced")
	assert.Len(t, r.Rules(), len(rules))

	var none *finding.Registry
	_, ok = none.Rule("x")
	assert.False(t, ok, "a nil registry knows nothing, and does not panic")
}

func TestFindingText(t *testing.T) {
	obj := finding.Object{Kind: "RBLNDriver", Name: "rbln-driver-a"}
	policyFinding := finding.Finding{Rule: "team.deny", Level: finding.Deny, Object: obj, Message: "RBLNDriver/rbln-driver-a: no"}
	assert.Equal(t, "policy team: RBLNDriver/rbln-driver-a: no", policyFinding.Text(), "Text is what an admission response says")
	assert.Equal(t, "RBLNDriver/rbln-driver-a: policy team: no", policyFinding.String(), "the object once")
	fieldFinding := finding.Finding{Rule: "FieldValueInvalid", Object: obj, Field: "spec.nodeSelector", Message: "bad"}
	assert.Equal(t, "spec.nodeSelector: bad", fieldFinding.Text())
	assert.Equal(t, "bad", finding.Finding{Message: "bad"}.String())
	assert.Equal(t, finding.Counts{Deny: 1, Warn: 0, Audit: 1}, finding.Count([]finding.Finding{{Level: finding.Deny}, {Level: finding.Audit}}))
}

func TestLocationString(t *testing.T) {
	var none *finding.Location
	assert.Empty(t, none.String())
	assert.Equal(t, "values.yaml:3:5", (&finding.Location{File: "values.yaml", Line: 3, Column: 5}).String())
	assert.Equal(t, "values.yaml:3", (&finding.Location{File: "values.yaml", Line: 3}).String())
	assert.Equal(t, "--set a=b", (&finding.Location{ValuesPath: "a", Flag: "--set a=b"}).String())
	assert.Equal(t, "driver.image", (&finding.Location{ValuesPath: "driver.image", Unwritten: true}).String())
}
