package routing

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/driverguard/driverguard/finding"
	"github.com/driverguard/driverguard/operator"
)

// Drift kinds: what is wrong with the cluster now, whatever any change would do (docs/plan.md "An audit: no values", docs/audit.md "What is judged").
// `plan` lists them per node; the audit reports them per driver.
const (
	DriftUnowned             = finding.RuleUnowned // a candidate node no driver selects
	DriftTie                 = ReasonConflictingNodeSelector
	DriftNFDLabelMissing     = ReasonNFDLabelMissing
	DriftFamilyLabelMissing  = ReasonDriverFamilyLabelMissing
	DriftPoolNameCollision   = ReasonPoolNameCollision
	DriftDaemonSetNotCreated = ReasonDaemonSetNotCreated
	DriftInvalidImageTag     = ReasonInvalidImageTag
	DriftStaleOwnerLabel     = finding.RuleStaleOwnerLabel // the owner label is not the driver the operator gives
)

// DriftKinds are the drift kinds, in the order a node's problems are reported.
var DriftKinds = []string{DriftUnowned, DriftTie, DriftNFDLabelMissing, DriftFamilyLabelMissing, DriftPoolNameCollision,
	DriftDaemonSetNotCreated, DriftInvalidImageTag, DriftStaleOwnerLabel}

// Drift is one problem of one node now.
type Drift struct {
	Kind   string `json:"kind"`
	Node   string `json:"node"`
	Detail string `json:"detail"`
	// Driver is the RBLNDriver the problem is about: the node's owner by routing, else (a
	// stale owner label) the driver its label names; "" for an unowned node.
	Driver string `json:"-"`
}

// NodeDrift is what is wrong with the nodes of a routing result now, sorted by node and kind.
// nodes are the routed nodes with their labels (the current owner label is read from them).
func NodeDrift(now *Result, nodes []Node) []Drift {
	labels := make(map[string]map[string]string, len(nodes))
	for _, n := range nodes {
		labels[n.Name] = n.Labels
	}
	out := []Drift{}
	for _, n := range now.Nodes {
		switch n.Reason {
		case ReasonNoMatchingDriver:
			out = append(out, Drift{Kind: DriftUnowned, Node: n.Name, Detail: "a candidate node that no RBLNDriver selects: it gets no driver"})
		case ReasonConflictingNodeSelector:
			out = append(out, Drift{Kind: DriftTie, Node: n.Name, Detail: cmp.Or(n.Detail, "tied between drivers: it gets no driver")})
		case ReasonDriverFamilyLabelMissing:
			out = append(out, Drift{Kind: DriftFamilyLabelMissing, Node: n.Name, Driver: n.Owner, Detail: cmp.Or(n.Detail, "no "+operator.LabelFamily+" label: it joins no pool")})
		case ReasonNFDLabelMissing, ReasonPoolNameCollision, ReasonDaemonSetNotCreated, ReasonInvalidImageTag:
			out = append(out, Drift{Kind: n.Reason, Node: n.Name, Driver: n.Owner, Detail: n.Detail})
		}
		switch cur := labels[n.Name][operator.LabelOwner]; {
		case cur == n.Owner:
		case cur == "":
			out = append(out, Drift{Kind: DriftStaleOwnerLabel, Node: n.Name, Driver: n.Owner, Detail: fmt.Sprintf("no %s label yet; rbln-npu-operator's owner resolver writes %q on its next reconcile", operator.LabelOwner, n.Owner)})
		case n.Reason == ReasonOutOfScope:
			out = append(out, Drift{Kind: DriftStaleOwnerLabel, Node: n.Name, Driver: cur, Detail: fmt.Sprintf("its %s label is %q, but %s is not %q: rbln-npu-operator removes the label, and the node loses its driver", operator.LabelOwner, cur, operator.LabelDeployDriver, operator.DeployDriverTrue)})
		case n.Owner == "":
			out = append(out, Drift{Kind: DriftStaleOwnerLabel, Node: n.Name, Driver: cur, Detail: fmt.Sprintf("its %s label is %q, but no RBLNDriver owns the node now", operator.LabelOwner, cur)})
		default:
			out = append(out, Drift{Kind: DriftStaleOwnerLabel, Node: n.Name, Driver: n.Owner, Detail: fmt.Sprintf("its %s label is %q; rbln-npu-operator's owner resolver writes %q on its next reconcile", operator.LabelOwner, cur, n.Owner)})
		}
	}
	slices.SortFunc(out, func(a, b Drift) int { return cmp.Or(strings.Compare(a.Node, b.Node), strings.Compare(a.Kind, b.Kind)) })
	return out
}
