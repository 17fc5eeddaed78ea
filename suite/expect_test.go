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
