package suite

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestMatchRuleBodies: results carry a rule body's ID; an expectation names the body, or the
// package for either body.
func TestMatchRuleBodies(t *testing.T) {
	out := &Outcome{Allowed: true, Objects: []string{"RBLNDriver/a"},
		Rules:   []string{"driverguard.team.deny", "driverguard.team.warn", "PotentialConflict"},
		Results: []Result{{Object: "RBLNDriver/a", Rule: "driverguard.team.warn", Result: ResultWarn, Message: "m"}}}
	for _, tc := range []struct {
		rule, result string
		ok           bool
	}{
		{"driverguard.team", ResultWarn, true},
		{"driverguard.team.warn", ResultWarn, true},
		{"driverguard.team.deny", ResultWarn, false},
		{"driverguard", ResultWarn, false},
		{"driverguard.team.deny", ResultPass, true},
		{"driverguard.team.warn", ResultPass, false},
		{"driverguard.team", ResultPass, false},
		{"driverguard.other", ResultPass, false},
	} {
		c := &Case{Expect: Expect{Results: []ResultExpect{{Object: "RBLNDriver/a", Rule: tc.rule, Result: tc.result}}}}
		assert.Equal(t, tc.ok, len(Match(c, out)) == 0, "%s %s: %v", tc.result, tc.rule, Match(c, out))
	}
}

// TestMatchRulePatterns: --coverage-of and coverageOf name rules as the other flags name
// policies: a rule ID, a package (both bodies), either in full or without driverguard.
func TestMatchRulePatterns(t *testing.T) {
	for _, tt := range []struct {
		pattern, rule string
		match         bool
	}{
		{"driverguard.lib.pinned_version", "driverguard.lib.pinned_version.deny", true},
		{"lib.pinned_version", "driverguard.lib.pinned_version.deny", true},
		{"lib.pinned_version", "driverguard.lib.pinned_version.warn", true},
		{"lib.pinned_version.warn", "driverguard.lib.pinned_version.deny", false},
		{"team.*", "driverguard.team.names.deny", true},
		{"team.*", "team.names.deny", true},
		{"driverguard.*", "driverguard.team.deny", true},
		{"*", "IdenticalNodeSelector", true},
		{"Identical*", "IdenticalNodeSelector", true},
		{"lib.pinned_version", "IdenticalNodeSelector", false},
		{"pinned_version", "driverguard.lib.pinned_version.deny", false},
		{"driverguard.IdenticalNodeSelector", "IdenticalNodeSelector", false},
	} {
		assert.Equal(t, tt.match, MatchRule(tt.pattern, tt.rule), "%s ~ %s", tt.pattern, tt.rule)
	}
}
