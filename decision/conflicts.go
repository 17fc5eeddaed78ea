package decision

import (
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/driverguard/driverguard/finding"
	"github.com/driverguard/driverguard/routing"
)

var (
	nodeSelectorPath  = field.NewPath("spec", "nodeSelector")
	nodeSelectorField = nodeSelectorPath.String()
)

// conflictFindings turns the conflict report of a driver (rep, and on UPDATE old, the report
// of the stored version) into denials — an identical selector, or a tie on an existing node,
// that the change introduces — and warnings: ties that could only happen on a future node,
// and conflicts the old selector already had. sel is the driver's selector.
func conflictFindings(rep routing.ConflictReport, old *routing.ConflictReport, sel map[string]string, self string) (denials, warnings []Finding) {
	// What the stored version had: ties by the other drivers tied, potential ties by driver
	// and kind (a selector that becomes identical to another's is new even if the two could
	// tie before).
	var hadTies map[string]bool
	var hadPotential map[potentialKey]bool
	if old != nil {
		hadTies = keysOf(old.Ties, tieKey(old.Resource))
		hadPotential = keysOf(old.Potential, potentialKeyOf)
	}
	ties, keptTies := introduced(rep.Ties, tieKey(rep.Resource), hadTies)
	path := nodeSelectorField

	blocked := map[string]bool{} // resources already reported as a denial
	for _, p := range rep.Potential {
		if !p.Identical || hadPotential[potentialKeyOf(p)] {
			continue
		}
		blocked[p.Resource] = true
		denials = append(denials, conflictFinding(finding.RuleIdenticalNodeSelector, field.Invalid(nodeSelectorPath, FormatSelector(sel), fmt.Sprintf(
			"is identical to the nodeSelector of RBLNDriver %q: two drivers with the same selector tie on every node they select, so none of those nodes gets a driver; "+
				"change one selector (e.g. add a label that only the more specific driver selects) or delete one of the two drivers", p.Resource))))
	}
	for _, c := range ties {
		others := otherResources(c.Resources, self)
		for _, o := range others {
			blocked[o] = true
		}
		denials = append(denials, conflictFinding(finding.RuleConflictingNodeSelector, field.Invalid(nodeSelectorPath, FormatSelector(sel), fmt.Sprintf(
			"ties with %s on %s: neither selector is a strict superset of the other, so no unique owner can be chosen and the node(s) would get no driver (ConflictingNodeSelector); "+
				"make one selector a strict superset of the other, select disjoint nodes, or relabel the node(s)", quoteList(others), nodeList(c)))))
	}
	for _, c := range keptTies {
		others := otherResources(c.Resources, self)
		for _, o := range others {
			blocked[o] = true
		}
		warnings = append(warnings, warning(finding.RulePotentialConflict, path,
			"this RBLNDriver already ties with %s on %s with its current selector; the change does not introduce the tie, so it is allowed, but those nodes get no driver until one selector is a strict superset of the other",
			quoteList(others), nodeList(c)))
	}
	for _, p := range rep.Potential {
		if blocked[p.Resource] {
			continue
		}
		switch {
		case p.Identical: // pre-existing (introduced ones are denied above)
			warnings = append(warnings, warning(finding.RulePotentialConflict, path,
				"already identical to the nodeSelector of RBLNDriver %q before this change; allowed because the change does not introduce it, but the two drivers tie on every node they select: change one selector",
				p.Resource))
		case !hadPotential[potentialKeyOf(p)]:
			warnings = append(warnings, warning(finding.RulePotentialConflict, path,
				"could tie with RBLNDriver %q on a future node labelled %s (no existing node ties them today); make one selector a strict superset of the other to rule it out",
				p.Resource, FormatSelector(p.Labels)))
		default:
			warnings = append(warnings, warning(finding.RulePotentialConflict, path,
				"could already tie with RBLNDriver %q on a future node labelled %s before this change; make one selector a strict superset of the other to rule it out",
				p.Resource, FormatSelector(p.Labels)))
		}
	}
	return denials, warnings
}

// tieKey matches a tie by the drivers tied with self.
func tieKey(self string) func(routing.Conflict) string {
	return func(c routing.Conflict) string { return strings.Join(otherResources(c.Resources, self), "\x00") }
}

type potentialKey struct {
	resource  string
	identical bool
}

func potentialKeyOf(p routing.PotentialConflict) potentialKey {
	return potentialKey{p.Resource, p.Identical}
}

func otherResources(resources []string, self string) []string {
	return slices.DeleteFunc(slices.Clone(resources), func(s string) bool { return s == self })
}

// quoteList names drivers: RBLNDriver "a", or RBLNDrivers "a" and "b".
func quoteList(names []string) string {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = fmt.Sprintf("%q", n)
	}
	if len(q) == 1 {
		return "RBLNDriver " + q[0]
	}
	return "RBLNDrivers " + strings.Join(q, " and ")
}

// nodeList names the tied nodes: "existing node(s) a, b" or "3 existing node(s), e.g. a, b".
func nodeList(c routing.Conflict) string {
	names := strings.Join(c.Nodes, ", ")
	if c.Total > len(c.Nodes) {
		return fmt.Sprintf("%d existing node(s), e.g. %s", c.Total, names)
	}
	return fmt.Sprintf("existing node(s) %s", names)
}

// FormatSelector prints a selector as {k=v,...}, sorted.
func FormatSelector(sel map[string]string) string {
	return "{" + labels.Set(sel).String() + "}"
}
